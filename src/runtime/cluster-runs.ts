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
 */
import { randomBytes } from 'node:crypto';
import { hasCode, notFound, rejected } from '../core/index.js';
import { clusterApplication, openPgRunStore, openReadOnlyEngine, type Engine, type EventsOptions, type Resolution, type RunEvent, type RunView } from '../engine/index.js';
import { effect as effectOwner } from '../owners/index.js';
import { openPgRunAuthority, openRunAuthority } from '../run-authority/index.js';
import type { PgDatabase } from '../store/index.js';
import { CLUSTER_CHANNEL, openClusterDb, openClusterEngine, requireCluster, withClusterDb, type ClusterAccess } from './cluster.js';

/** How long a settle waits for a daemon that holds the run for a moment (its reconciliation attempt). */
const BUSY_WAIT_MS = 10_000;
const BUSY_PAUSE_MS = 200;

/** Reads only: no authority, no lease; "driven" is a live lease on the database clock. */
function readEngine(db: PgDatabase): Engine {
  const isDriven = async (runId: string): Promise<boolean> =>
    (await db.query('SELECT 1 FROM run_leases WHERE run_id = $1 AND NOT released AND lease_expires_at > now()', [runId])).length > 0;
  return openReadOnlyEngine({
    application: clusterApplication(),
    store: openPgRunStore(db),
    effects: effectOwner.effectJournal(effectOwner.openPgEffectPort(db)),
    isDriven,
  });
}

/**
 * The cluster and its run: `cluster_run_not_found` (never submitted here), `cluster_run_not_started`
 * (submitted, no daemon has started it yet) — each pointing at the cluster's own list of runs.
 */
async function requireClusterRun(db: PgDatabase, a: ClusterAccess, runId: string): Promise<void> {
  await requireCluster(db, a);
  const [row] = await db.query<{ started: boolean }>('SELECT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = w.run_id) AS started FROM cluster_work w WHERE w.run_id = $1', [runId]);
  const list = "see the cluster's runs: loopx cluster status";
  if (!row) throw notFound('cluster_run_not_found', `No run ${runId} in this cluster.`, { nextAction: list, details: { run_id: runId } });
  if (!row.started) throw rejected('cluster_run_not_started', `Run ${runId} is submitted; no daemon has started it yet.`, { nextAction: list, details: { run_id: runId } });
}

/** `loopx run show <id> --cluster …`: the run as the cluster's schema has it now. */
export async function showClusterRun(a: ClusterAccess, runId: string): Promise<RunView> {
  return withClusterDb(a, async (db) => {
    await requireClusterRun(db, a, runId);
    const engine = readEngine(db);
    try {
      return await engine.show(runId);
    } finally {
      engine.close();
    }
  });
}

/** `loopx run events <id> --cluster …`: the run's events after a cursor, in order; `follow` polls the schema. */
export async function* clusterRunEvents(a: ClusterAccess, runId: string, options: EventsOptions = {}): AsyncGenerator<RunEvent> {
  const db = openClusterDb(a, 2);
  try {
    await requireClusterRun(db, a, runId);
    const engine = readEngine(db);
    try {
      yield* engine.events(runId, options);
    } finally {
      engine.close();
    }
  } finally {
    await db.close();
  }
}

export interface ClusterResolveOptions {
  /** The host's key directory (the cluster's run authority scope, as every daemon of it has). */
  readonly keysDir?: string;
  /** How long to wait while a daemon holds the run for a moment (default 10 s). */
  readonly busyWaitMs?: number;
}

/**
 * `loopx run resolve <id> <call-id> --cluster …`: settle an uncertain call of a cluster run under
 * the run's lease, then hand the run back to the daemons (see the header). Refusals are the
 * engine's (`call_not_found`, `call_not_uncertain`, `effect_already_settled`, `run_busy`, …).
 */
export async function resolveClusterRun(a: ClusterAccess, runId: string, callId: string, resolution: Resolution, options: ClusterResolveOptions = {}): Promise<RunView> {
  const db = openClusterDb(a, 3);
  try {
    await requireClusterRun(db, a, runId);
    const keys = openRunAuthority({ ...(options.keysDir !== undefined ? { dir: options.keysDir } : {}), create: false });
    const authority = openPgRunAuthority({ db, keys, instanceId: `op_${randomBytes(12).toString('hex')}` });
    const { engine } = openClusterEngine(db, authority);
    try {
      const view = await settlePatiently(engine, runId, callId, resolution, options.busyWaitMs ?? BUSY_WAIT_MS);
      if (view.status === 'active' && view.waiting_for === null) {
        // Nothing left for an operator: the daemons continue it (any one of them, woken now).
        await db.transaction(async (q) => {
          await q(`UPDATE cluster_work SET state = 'pending', held_code = NULL WHERE run_id = $1 AND state = 'held'`, [runId]);
          await q(`SELECT pg_notify('${CLUSTER_CHANNEL}', $1)`, [runId]);
        });
      }
      return view;
    } finally {
      engine.close();
      await authority.close();
    }
  } finally {
    await db.close();
  }
}

/** The settle, tried again while a daemon holds the run for a moment (`run_busy`), up to `waitMs`. */
async function settlePatiently(engine: Engine, runId: string, callId: string, resolution: Resolution, waitMs: number): Promise<RunView> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await engine.resolve(runId, callId, resolution, { drive: false });
    } catch (e) {
      if (!hasCode(e, 'run_busy') || Date.now() >= deadline) throw e;
      await new Promise((r) => setTimeout(r, BUSY_PAUSE_MS));
    }
  }
}
