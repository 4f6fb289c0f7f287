/**
 * An operator's view of, and hand on, the runs of a cluster (`loopx run show|events|resolve
 * --cluster env:NAME`): the same run documents a root's run commands print, read from the cluster's
 * schema, and the one operator act a cluster run can wait for — settling a mutating call whose
 * outcome no daemon could learn (the run `held (mutation_uncertain)` in `cluster status`).
 *
 * Settling is a write of the run like any other: the operator's process takes the run's lease under
 * the next epoch (so it is the run's only writer, and a daemon that still believes it owns the run
 * finds its next write refused in the database), settles the call under its ORIGINAL operation id —
 * effect owner first, then the run — and lets go without continuing the run: the work goes back to
 * `pending` and a daemon resumes the run under a later epoch, with the application and receiver
 * the cluster's daemons run. The run's events record the operator's epoch like a daemon's.
 *
 * Cancelling (`loopx run cancel --cluster`) first takes the run out of the daemons' hands — its
 * work `held (cancel_requested)`, which no daemon claims, and a suspend requested, which the daemon
 * driving it honours at its next turn boundary, releasing its lease — then cancels it under a lease
 * of the operator's own, and the work is finished.
 *
 * Like cluster.ts it writes no SQL: the work queue is the cluster owner's, "driven" is the run
 * authority's fact (a live lease), "started" the run store's (the run exists).
 */
import { randomBytes } from 'node:crypto';
import { hasCode, notFound, rejected } from '../core/index.js';
import {
  clusterApplication,
  openPgRunStore,
  openReadOnlyEngine,
  type Engine,
  type EventsOptions,
  type Resolution,
  type RunEvent,
  type RunView,
} from '../engine/index.js';
import { effect as effectOwner } from '../owners/index.js';
import { openPgRunAuthority, openRunAuthority } from '../run-authority/index.js';
import type { PgDatabase } from '../store/index.js';
import {
  clusterOwners,
  openClusterDb,
  openClusterEngine,
  requireCluster,
  withClusterDb,
  type ClusterAccess,
  type ClusterOwners,
} from './cluster.js';

/** How long a settle waits for a daemon that holds the run for a moment (its reconciliation attempt). */
const BUSY_WAIT_MS = 10_000;
/** How long a cancel waits for the daemon driving the run to reach its next turn boundary. */
const CANCEL_WAIT_MS = 120_000;
const BUSY_PAUSE_MS = 200;

/** Reads only: no authority, no lease; "driven" is a live lease on the database clock (the run authority's fact). */
function readEngine(db: PgDatabase, o: ClusterOwners): Engine {
  return openReadOnlyEngine({
    application: clusterApplication(),
    store: openPgRunStore(db),
    effects: effectOwner.effectJournal(effectOwner.openPgEffectPort(db)),
    isDriven: (runId) => o.leases.isHeld(runId),
  });
}

/**
 * The cluster and its run: `cluster_run_not_found` (never submitted here), `cluster_run_not_started`
 * (submitted, no daemon has started it yet) — each pointing at the cluster's own list of runs.
 */
async function requireClusterRun(db: PgDatabase, o: ClusterOwners, a: ClusterAccess, runId: string): Promise<void> {
  await requireCluster(db, a);
  const list = "see the cluster's runs: loopx cluster status";
  if (!(await o.cluster.work(runId)))
    throw notFound('cluster_run_not_found', `No run ${runId} in this cluster.`, {
      nextAction: list,
      details: { run_id: runId },
    });
  if (!(await o.runs.get(runId)))
    throw rejected('cluster_run_not_started', `Run ${runId} is submitted; no daemon has started it yet.`, {
      nextAction: list,
      details: { run_id: runId },
    });
}

/** `loopx run show <id> --cluster …`: the run as the cluster's schema has it now. */
export async function showClusterRun(a: ClusterAccess, runId: string): Promise<RunView> {
  return withClusterDb(a, async (db, o) => {
    await requireClusterRun(db, o, a, runId);
    const engine = readEngine(db, o);
    try {
      return await engine.show(runId);
    } finally {
      engine.close();
    }
  });
}

/** `loopx run events <id> --cluster …`: the run's events after a cursor, in order; `follow` polls the schema. */
export async function* clusterRunEvents(
  a: ClusterAccess,
  runId: string,
  options: EventsOptions = {},
): AsyncGenerator<RunEvent> {
  const db = openClusterDb(a, 2);
  const o = clusterOwners(db);
  try {
    await requireClusterRun(db, o, a, runId);
    const engine = readEngine(db, o);
    try {
      yield* engine.events(runId, options);
    } finally {
      engine.close();
    }
  } finally {
    o.runs.close();
    await db.close();
  }
}

export interface ClusterResolveOptions {
  /** The host's key directory (the cluster's run authority scope, as every daemon of it has). */
  readonly keysDir?: string;
  /** How long to wait while a daemon holds the run (default 10 s to settle, 120 s to cancel). */
  readonly busyWaitMs?: number;
}

/** An operator's writing engine on the cluster: its own instance (`op_…`), its own leases. */
async function withOperatorEngine<T>(
  a: ClusterAccess,
  runId: string,
  options: ClusterResolveOptions,
  fn: (engine: Engine, o: ClusterOwners) => Promise<T>,
): Promise<T> {
  const db = openClusterDb(a, 3);
  const o = clusterOwners(db);
  try {
    await requireClusterRun(db, o, a, runId);
    const keys = openRunAuthority({
      ...(options.keysDir !== undefined ? { dir: options.keysDir } : {}),
      create: false,
    });
    const authority = openPgRunAuthority({ db, keys, instanceId: `op_${randomBytes(12).toString('hex')}` });
    const { engine } = openClusterEngine(db, authority);
    try {
      return await fn(engine, o);
    } finally {
      engine.close();
      await authority.close();
    }
  } finally {
    o.runs.close();
    await db.close();
  }
}

/**
 * `loopx run resolve <id> <call-id> --cluster …`: settle an uncertain call of a cluster run under
 * the run's lease, then hand the run back to the daemons (see the header). Refusals are the
 * engine's (`call_not_found`, `call_not_uncertain`, `effect_already_settled`, `run_busy`, …).
 */
export async function resolveClusterRun(
  a: ClusterAccess,
  runId: string,
  callId: string,
  resolution: Resolution,
  options: ClusterResolveOptions = {},
): Promise<RunView> {
  return withOperatorEngine(a, runId, options, async (engine, o) => {
    const view = await patiently(
      () => engine.resolve(runId, callId, resolution, { drive: false }),
      options.busyWaitMs ?? BUSY_WAIT_MS,
    );
    // Nothing left for an operator: the daemons continue it (any one of them, woken by the cluster
    // owner) — unless a cancel was asked for: the owner leaves that run out of the daemons' hands.
    if (view.status === 'active' && view.waiting_for === null) await o.cluster.requeue(runId);
    return view;
  });
}

/**
 * `loopx run cancel <id> --cluster …`: the run taken out of the daemons' hands, then cancelled (see
 * the header). A cancel that times out leaves the work `held (cancel_requested)`: no daemon takes
 * the run again, and the same command, run again, finishes it.
 */
export async function cancelClusterRun(
  a: ClusterAccess,
  runId: string,
  options: ClusterResolveOptions = {},
): Promise<RunView> {
  return withOperatorEngine(a, runId, options, async (engine, o) => {
    await o.cluster.requestCancel(runId);
    try {
      // Suspending a suspended run is a no-op; an ended one is refused (`run_terminal`, below).
      await engine.suspend(runId);
      const view = await patiently(() => engine.cancel(runId), options.busyWaitMs ?? CANCEL_WAIT_MS);
      await o.cluster.finish(runId);
      return view;
    } catch (e) {
      // A run that ended before it could be cancelled (completed, failed): its work is finished all the same.
      if (hasCode(e, 'run_terminal')) await o.cluster.finish(runId);
      throw e;
    }
  });
}

/** `step`, tried again while a daemon holds the run (`run_busy`), up to `waitMs`. */
async function patiently(step: () => Promise<RunView>, waitMs: number): Promise<RunView> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await step();
    } catch (e) {
      if (!hasCode(e, 'run_busy') || Date.now() >= deadline) throw e;
      await new Promise((r) => setTimeout(r, BUSY_PAUSE_MS));
    }
  }
}
