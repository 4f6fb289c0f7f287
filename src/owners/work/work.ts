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
import { engageFence, revokeAuthority, setHandoffMode } from './handoff.js';
import { acquireLease, leaseStatus, releaseLease, renewLease, transferLease } from './leases.js';
import { history, iterateHistory, readReceipt, view } from './reads.js';
import { exportRetainedPrefix } from './retained-prefix.js';
import { openSqliteWorkProvider } from './sqlite.js';
import { openPostgresWorkProvider, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS } from './postgres.js';
import { requireSchemaVersion } from '../../store/index.js';
import { rootPostgres } from '../root-store-location.js';
import { addTodo, claimTodo, unclaimTodo, updateTodo } from './todos.js';
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

/** Refuses, before a Goal is made, a root whose work store cannot take it (a PostgreSQL schema not migrated to this version). */
export async function assertGoalWorkReady(root: string): Promise<void> {
  const db = rootPostgres(root);
  if (db) await requireSchemaVersion(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS);
}

/**
 * Opens the work owner of a Goal on the store its root's configuration names: its SQLite store
 * `goals/<goal_id>/work.db` (created on first open), or its rows in the root's PostgreSQL schema
 * (created only with `create`). The Goal directory must exist either way.
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
  const db = rootPostgres(options.root);
  const provider = db
    ? await openPostgresWorkProvider(db, { goal_id: options.goal_id, create: options.create === true, ...expected })
    : openSqliteWorkProvider(path, { goal_id: options.goal_id, ...expected, ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }) });
  try {
    return await openWork({ provider, ...(options.clock ? { clock: options.clock } : {}) });
  } catch (e) {
    provider.close();
    throw e;
  }
}
