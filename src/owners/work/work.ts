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
import { randomBytes } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { goalNotFound } from '../goal/index.js';
import { LAYOUT } from '../layout.js';
import { adoptRecoveredState, importLineage } from './adopt.js';
import { readProjection, type WorkCore } from './commit.js';
import { engageFence, revokeAuthority, setHandoffMode } from './handoff.js';
import { acquireLease, leaseStatus, releaseLease, renewLease, transferLease } from './leases.js';
import { history, iterateHistory, readReceipt, view } from './reads.js';
import { exportRetainedPrefix } from './retained-prefix.js';
import { openSqliteWorkProvider } from './sqlite.js';
import { openPostgresWorkProvider, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS } from './postgres.js';
import { databaseUrlFrom, requireSchemaVersion, schemaIdent } from '../../store/index.js';
import { ensurePrivateDir, fsyncDir, usageError } from '../../core/index.js';
import { postgresAt, rootStoreLocation } from '../root-store-location.js';
import { mintStoreKey, readWorkLocation, removeWorkLocation, workProviderChangeRefused, writeWorkLocation, type GoalWorkLocation } from './location.js';
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
    readReceipt: (operationId) => readReceipt(core, operationId),
    history: (afterCursor, limit) => history(core, afterCursor, limit),
    iterateHistory: (afterCursor, pageSize) => iterateHistory(core, afterCursor, pageSize),
    transactionCount: async () => (await provider.load()).cursor,
    exportRetainedPrefix: () => exportRetainedPrefix(provider, clock),
    importLineage: (r) => importLineage(core, r),
    adoptRecoveredState: (r) => adoptRecoveredState(core, r),
    lineage: () => provider.lineage(),
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
  /** On PostgreSQL: create the Goal's store when it has none (Goal creation); otherwise a missing store is refused. */
  readonly create?: boolean;
}

/** A Goal's own choice of work provider (`goal create --work-provider`): unset fields take the root's. */
export interface WorkProviderRequest {
  readonly provider: 'sqlite' | 'postgresql';
  /** `env:NAME`, the variable holding the URL (default: the root's, when the root is on PostgreSQL). */
  readonly database_url?: string;
  /** Default: the root's schema when the root is on PostgreSQL, else a fresh `loopx_<hex>`. */
  readonly schema?: string;
}

/** Where a root keeps a Goal's work when the Goal chose nothing: the root's store, its rows keyed by the Goal id. */
function rootWorkLocation(root: string, goalId: string): GoalWorkLocation {
  const at = rootStoreLocation(root);
  return at.provider === 'postgresql' ? { ...at, store_key: goalId } : at;
}

/** Where a Goal's work lives: its own recorded choice, else where its root keeps Goal state. */
export function goalWorkLocation(root: string, goalId: string): GoalWorkLocation {
  return readWorkLocation(root, goalId) ?? rootWorkLocation(root, goalId);
}

const sameLocation = (a: GoalWorkLocation, b: GoalWorkLocation): boolean =>
  a.provider === 'sqlite' ? b.provider === 'sqlite' : b.provider === 'postgresql' && a.database_url === b.database_url && a.schema === b.schema && a.store_key === b.store_key;

/** Whether the location a Goal has answers a request (its unset fields match anything). */
const answers = (have: GoalWorkLocation, request: WorkProviderRequest): boolean =>
  have.provider === request.provider &&
  (have.provider === 'sqlite' || ((request.database_url ?? have.database_url) === have.database_url && (request.schema ?? have.schema) === have.schema));

/** The location a request names for a new Goal; a pending record of the same database and schema keeps its row key. */
function resolveRequest(root: string, goalId: string, request: WorkProviderRequest, pending: GoalWorkLocation | null): GoalWorkLocation {
  if (request.provider === 'sqlite') return { provider: 'sqlite' };
  const at = rootStoreLocation(root);
  const database_url = request.database_url ?? (at.provider === 'postgresql' ? at.database_url : undefined);
  if (database_url === undefined) {
    throw usageError(
      'database_url_required',
      "This root keeps its Goal state in SQLite: a Goal's work in PostgreSQL needs --database-url env:NAME.",
      'pass --database-url env:LOOPX_DATABASE_URL',
    );
  }
  const kept = pending?.provider === 'postgresql' && pending.database_url === database_url ? pending : undefined;
  const schema = request.schema ?? kept?.schema ?? (at.provider === 'postgresql' ? at.schema : `loopx_${randomBytes(6).toString('hex')}`);
  schemaIdent(schema);
  databaseUrlFrom(database_url); // the reference must resolve now, before anything is recorded
  const store_key = kept?.schema === schema ? kept.store_key : mintStoreKey(goalId, randomBytes(6).toString('hex'));
  return { provider: 'postgresql', database_url, schema, store_key };
}

/**
 * Settles where a Goal being created keeps its work, before its record is written. A Goal that
 * exists already (a retired lifetime, or a create to finish) keeps the location it has: a request
 * for another is refused (`work_provider_change_refused`). A new Goal takes the request — recorded
 * when it differs from its root's — or, without one, its root's.
 */
export function settleGoalWorkLocation(root: string, goalId: string, request: WorkProviderRequest | undefined, options: { readonly exists: boolean }): GoalWorkLocation {
  const recorded = readWorkLocation(root, goalId);
  const asRoot = rootWorkLocation(root, goalId);
  if (options.exists) {
    const have = recorded ?? asRoot;
    if (request !== undefined && !answers(have, request)) throw workProviderChangeRefused(goalId, have);
    return have;
  }
  const wanted = request === undefined ? asRoot : resolveRequest(root, goalId, request, recorded);
  const sameAsRoot = wanted.provider === asRoot.provider && (wanted.provider === 'sqlite' || answers(asRoot, wanted));
  if (sameAsRoot) {
    if (recorded !== null) removeWorkLocation(root, goalId);
    return asRoot;
  }
  if (recorded === null || !sameLocation(recorded, wanted)) writeWorkLocation(root, goalId, wanted);
  return wanted;
}

/** Refuses, before a Goal is made, a work store that cannot take it (a PostgreSQL schema not migrated to this version). */
export async function assertGoalWorkReady(location: GoalWorkLocation): Promise<void> {
  if (location.provider === 'postgresql') await requireSchemaVersion(postgresAt(location), WORK_PG_COMPONENT, WORK_PG_MIGRATIONS);
}

/**
 * Opens the work owner of a Goal on the store its record names, else its root's configuration: its
 * SQLite store `goals/<goal_id>/work.db` (created on first open), or its rows in a PostgreSQL
 * schema (created only with `create`). The Goal directory must exist either way.
 */
export async function openGoalWork(options: OpenGoalWorkOptions): Promise<WorkOwner> {
  const path = join(options.root, LAYOUT.workDb(options.goal_id));
  if (!existsSync(dirname(path))) {
    throw goalNotFound(options.goal_id);
  }
  const expected = {
    ...(options.expected_incarnation === undefined ? {} : { expected_incarnation: options.expected_incarnation }),
    ...(options.expected_store_identity === undefined ? {} : { expected_store_identity: options.expected_store_identity }),
  };
  const location = goalWorkLocation(options.root, options.goal_id);
  const provider =
    location.provider === 'postgresql'
      ? await openPostgresWorkProvider(postgresAt(location), { goal_id: options.goal_id, store_key: location.store_key, create: options.create === true, ...expected })
      : openSqliteWorkProvider(path, { goal_id: options.goal_id, ...expected, ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }) });
  try {
    return await openWork({ provider, ...(options.clock ? { clock: options.clock } : {}) });
  } catch (e) {
    provider.close();
    throw e;
  }
}

/**
 * Before a retired alias gets a new lifetime (`goal create`): the retired lifetime's work store is
 * set aside, so the new lifetime starts on a store of its own and never adopts another lifetime's
 * Todos and history. A SQLite store moves, with any sidecar, to
 * `goals/<goal_id>/retired/<goal_instance_id>/` (kept as history, never opened as the Goal's
 * work); a PostgreSQL store keeps its rows under its row key and the Goal is given a fresh row
 * key. Idempotent: nothing to set aside is a no-op (a create interrupted after the move).
 */
export function setAsideRetiredWork(root: string, goalId: string, retiredInstanceId: string): void {
  const location = goalWorkLocation(root, goalId);
  if (location.provider === 'postgresql') {
    writeWorkLocation(root, goalId, { ...location, store_key: mintStoreKey(goalId, randomBytes(6).toString('hex')) });
    return;
  }
  const db = join(root, LAYOUT.workDb(goalId));
  if (!existsSync(db)) return;
  const aside = join(root, LAYOUT.goalDir(goalId), 'retired', retiredInstanceId);
  ensurePrivateDir(join(root, LAYOUT.goalDir(goalId), 'retired'));
  ensurePrivateDir(aside);
  // Sidecars first: the main file moved last, so a crash in between leaves the store where it was or fully set aside.
  for (const suffix of ['-wal', '-shm', '-journal']) if (existsSync(`${db}${suffix}`)) renameSync(`${db}${suffix}`, join(aside, `work.db${suffix}`));
  renameSync(db, join(aside, 'work.db'));
  fsyncDir(aside);
  fsyncDir(dirname(db));
}
