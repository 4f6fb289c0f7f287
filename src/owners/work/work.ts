/**
 * The work owner: the one decision owner of a Goal's canonical work — Todos, leases, the writer
 * fence, operation receipts and committed history — on top of a storage-only, Promise-based
 * `WorkProvider` (contract.ts). This file composes it; the decisions live per area (todos.ts,
 * leases.ts, handoff.ts, over the shared rules in rules.ts), every write goes through the one
 * commit loop (commit.ts), and reads are in reads.ts. Requests and results are in api.ts, the
 * input checks in inputs.ts.
 *
 * Every write is an operation with an idempotency key (`operation_id`). Its request digest is the
 * SHA-256 of the canonical semantic request (operation, Goal, parameters — not the operation id,
 * not the fence token). The receipt commits in the same provider transaction as the state it
 * describes. Same id + same digest returns the ORIGINAL receipt (`already_applied`) and applies
 * nothing; same id + another digest is `operation_identity_mismatch`. Both hold across restarts
 * because the provider keeps receipts durably.
 *
 * A write carrying a fence token that is not the current one is refused (`writer_fenced`) before
 * anything else, replays included: a fenced writer learns nothing and changes nothing. The clock is
 * injected; lease expiry is decided only against it (an expiry equal to "now" is expired).
 * Never owns anything but work state; never touches another owner's store.
 *
 * Opening is async: `openWork` reads the store identity once (stable for the life of a store), so
 * every later operation has the Goal id and store identity at hand and a provider that cannot
 * answer fails at open, not at its first write.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { goalNotFound } from '../goal/index.js';
import { LAYOUT } from '../layout.js';
import { adoptRecoveredState, importLineage } from './adopt.js';
import { readProjection, type WorkCore } from './commit.js';
import { engageFence, moveOut, revokeAuthority, setHandoffMode } from './handoff.js';
import { importMovedWork, lineageRows } from './move.js';
import { acquireLease, leaseStatus, releaseLease, renewLease, transferLease } from './leases.js';
import { history, iterateHistory, readReceipt, view } from './reads.js';
import { exportRetainedPrefix } from './retained-prefix.js';
import { usageError } from '../../core/index.js';
import { providerOf, storeProvider, type WorkChoice } from '../providers/index.js';
import { rootStoreLocation } from '../root-store-location.js';
import {
  readWorkLocation,
  removeWorkLocation,
  workMoveSameStore,
  workProviderChangeRefused,
  writeWorkLocation,
  type GoalWorkLocation,
} from './location.js';
import { addTodo, claimTodo, unclaimTodo, updateTodo, updateTodos } from './todos.js';
import type { WorkOwner, WorkOwnerOptions } from './api.js';

export async function openWork(options: WorkOwnerOptions): Promise<WorkOwner> {
  const provider = options.provider;
  const clock = options.clock ?? (() => new Date());
  const identity = await provider.storeIdentity();
  const core: WorkCore = { provider, clock, identity, goalId: identity.goal_id };
  return {
    goal_id: core.goalId,
    storeIdentity: () => provider.storeIdentity(),
    assertWritable: async () => provider.admitsWriters?.(),
    view: () => view(core),
    listTodos: async () => [...(await readProjection(core)).p.todos],
    getTodo: async (id) => (await readProjection(core)).p.todos.find((t) => t.todo_id === id),
    leaseStatus: (id) => leaseStatus(core, id),
    addTodo: (r) => addTodo(core, r),
    updateTodo: (r) => updateTodo(core, r),
    updateTodos: (r) => updateTodos(core, r),
    claimTodo: (r) => claimTodo(core, r),
    unclaimTodo: (r) => unclaimTodo(core, r),
    acquireLease: (r) => acquireLease(core, r),
    renewLease: (r) => renewLease(core, r),
    transferLease: (r) => transferLease(core, r),
    releaseLease: (r) => releaseLease(core, r),
    setHandoffMode: (r) => setHandoffMode(core, r),
    engageFence: (r) => engageFence(core, r),
    revokeAuthority: (r) => revokeAuthority(core, r),
    moveOut: (r) => moveOut(core, r),
    readReceipt: (operationId) => readReceipt(core, operationId),
    history: (afterCursor, limit) => history(core, afterCursor, limit),
    iterateHistory: (afterCursor, pageSize) => iterateHistory(core, afterCursor, pageSize),
    transactionCount: async () => (await provider.load()).cursor,
    exportRetainedPrefix: () => exportRetainedPrefix(provider, clock),
    importLineage: (r) => importLineage(core, r),
    adoptRecoveredState: (r) => adoptRecoveredState(core, r),
    lineage: () => provider.lineage(),
    lineageRows: (source) => lineageRows(core, source),
    importMovedWork: (r) => importMovedWork(core, r),
    close: () => provider.close(),
  };
}

export interface OpenGoalWorkOptions {
  /** The runtime root. */
  readonly root: string;
  readonly goal_id: string;
  readonly clock?: () => Date;
  readonly expected_incarnation?: string;
  readonly expected_store_identity?: string;
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
  /** On a database service: create the Goal's store when it has none (Goal creation); otherwise a missing store is refused. */
  readonly create?: boolean;
}

/** A Goal's own choice of work provider (`goal create --work-provider`): a registered provider's name; unset fields take the root's. */
export type WorkProviderRequest = WorkChoice;

/** Where a root keeps a Goal's work when the Goal chose nothing: the root's store (on a service, its rows keyed by the Goal id). */
function rootWorkLocation(root: string, goalId: string): GoalWorkLocation {
  const at = rootStoreLocation(root);
  return providerOf(at).work.ofRoot(at, goalId) as GoalWorkLocation;
}

/** Where a Goal's work lives: its own recorded choice, else where its root keeps Goal state. */
export function goalWorkLocation(root: string, goalId: string): GoalWorkLocation {
  return readWorkLocation(root, goalId) ?? rootWorkLocation(root, goalId);
}

const sameLocation = (a: GoalWorkLocation, b: GoalWorkLocation): boolean =>
  a.provider === b.provider && providerOf(a).work.same(a, b);

/** Whether the location a Goal has answers a request (its unset fields match anything). */
const answers = (have: GoalWorkLocation, request: WorkProviderRequest): boolean =>
  have.provider === request.provider && providerOf(have).work.answers(have, request);

/** The location a request names for a new Goal, chosen by its provider's row; a pending record of the same place keeps its row key. */
function resolveRequest(
  root: string,
  goalId: string,
  request: WorkProviderRequest,
  pending: GoalWorkLocation | null,
): GoalWorkLocation {
  const row = storeProvider(request.provider);
  if (row?.work.choose === undefined) {
    throw usageError(
      'work_provider_unknown',
      `A Goal's work cannot be kept in ${String(request.provider).slice(0, 40)}.`,
      'name a provider: loopx goal create --help',
    );
  }
  return row.work.choose(request, { root: rootStoreLocation(root), goal_id: goalId, pending }) as GoalWorkLocation;
}

/**
 * Settles where a Goal being created keeps its work, before its record is written. A Goal that
 * exists already (a retired lifetime, or a create to finish) keeps the location it has: a request
 * for another is refused (`work_provider_change_refused`). A new Goal takes the request — recorded
 * when it differs from its root's — or, without one, its root's.
 */
export function settleGoalWorkLocation(
  root: string,
  goalId: string,
  request: WorkProviderRequest | undefined,
  options: { readonly exists: boolean },
): GoalWorkLocation {
  const recorded = readWorkLocation(root, goalId);
  const asRoot = rootWorkLocation(root, goalId);
  if (options.exists) {
    const have = recorded ?? asRoot;
    if (request !== undefined && !answers(have, request)) throw workProviderChangeRefused(goalId, have);
    return have;
  }
  const wanted = request === undefined ? asRoot : resolveRequest(root, goalId, request, recorded);
  if (answers(asRoot, wanted)) {
    if (recorded !== null) removeWorkLocation(root, goalId);
    return asRoot;
  }
  if (recorded === null || !sameLocation(recorded, wanted)) writeWorkLocation(root, goalId, wanted);
  return wanted;
}

/** Refuses, before a Goal is made, a work store that cannot take it (a service's schema not migrated to this version). */
export async function assertGoalWorkReady(location: GoalWorkLocation): Promise<void> {
  await providerOf(location).work.ready(location);
}

/**
 * Opens the work owner of a Goal on the store its record names, else its root's configuration,
 * through that provider's row: its SQLite store `goals/<goal_id>/work.db` (created on first open),
 * or its rows in a service's schema (created only with `create`). The Goal directory must exist
 * either way.
 */
export async function openGoalWork(options: OpenGoalWorkOptions): Promise<WorkOwner> {
  return openWorkAt(options, goalWorkLocation(options.root, options.goal_id));
}

/** The work owner of a Goal on the store at `location`, whatever the Goal's record names (a move's source and destination). */
export async function openWorkAt(options: OpenGoalWorkOptions, location: GoalWorkLocation): Promise<WorkOwner> {
  const path = join(options.root, LAYOUT.workDb(options.goal_id));
  if (!existsSync(dirname(path))) {
    throw goalNotFound(options.goal_id);
  }
  const provider = await providerOf(location).work.open(
    { root: options.root, goal_id: options.goal_id, location },
    {
      goal_id: options.goal_id,
      create: options.create === true,
      ...(options.expected_incarnation === undefined ? {} : { expected_incarnation: options.expected_incarnation }),
      ...(options.expected_store_identity === undefined
        ? {}
        : { expected_store_identity: options.expected_store_identity }),
      ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }),
    },
  );
  try {
    return await openWork({ provider, ...(options.clock ? { clock: options.clock } : {}) });
  } catch (e) {
    provider.close();
    throw e;
  }
}

/**
 * Before a retired alias gets a new lifetime (`goal create`): the retired lifetime's work store is
 * set aside by its provider's row, so the new lifetime starts on a store of its own and never
 * adopts another lifetime's Todos and history. A SQLite store moves, with any sidecar, to
 * `goals/<goal_id>/retired/<goal_instance_id>/` (kept as history, never opened as the Goal's
 * work); a service's store keeps its rows under its row key and the Goal is given a fresh row key,
 * recorded here. Idempotent: nothing to set aside is a no-op (a create interrupted after the move).
 */
/**
 * Where a move of a Goal's work to `request` would put it (`loopx goal move-work`): the location
 * its provider's row chooses (on a service, a fresh row key), and whether that is the root's own
 * place for Goal work (then the Goal needs no record of it). Refused `work_move_same_store` when
 * the request names where the Goal's work is already. Writes nothing.
 */
export function moveDestination(
  root: string,
  goalId: string,
  request: WorkProviderRequest,
): { readonly location: GoalWorkLocation; readonly asRoot: boolean } {
  const have = goalWorkLocation(root, goalId);
  if (answers(have, request)) throw workMoveSameStore(goalId, have);
  const location = resolveRequest(root, goalId, request, null);
  return { location, asRoot: sameLocation(location, rootWorkLocation(root, goalId)) };
}

/** Before a move's destination store is made: a store left at that place (an earlier move's source) is set aside under `moveId`. */
export function setAsideForMove(root: string, goalId: string, location: GoalWorkLocation, moveId: string): void {
  providerOf(location).work.setAside({ root, goal_id: goalId, location }, `move-${moveId.slice(0, 32)}`);
}

/** The Goal's work now lives at `location` (the last step of a move): recorded, or the record removed for the root's own place. */
export function recordMovedWork(root: string, goalId: string, location: GoalWorkLocation): void {
  if (sameLocation(location, rootWorkLocation(root, goalId))) removeWorkLocation(root, goalId);
  else writeWorkLocation(root, goalId, location);
}

export function setAsideRetiredWork(root: string, goalId: string, retiredInstanceId: string): void {
  const location = goalWorkLocation(root, goalId);
  const next = providerOf(location).work.setAside(
    { root, goal_id: goalId, location },
    retiredInstanceId,
  ) as GoalWorkLocation | null;
  if (next !== null) writeWorkLocation(root, goalId, next);
}
