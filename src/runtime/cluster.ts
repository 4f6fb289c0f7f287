/**
 * A cluster: several loopx daemons — on several hosts — sharing one PostgreSQL schema, each
 * driving runs of it, with exactly one owner of a run at a time. What lives where:
 *
 *   PostgreSQL (the cluster's schema)   runs and their events (the run store), run records and
 *       leases (the run authority), effects and their outbox (the effect owner), the daemons and
 *       the work they share (the cluster owner, owners/cluster)
 *   each host                           its key directory (the run authority's scope and keys,
 *       provisioned alike to every host of one cluster; never in the database), its own root
 *
 * Rules it keeps:
 * - A daemon claims a run by taking its lease — the compare-and-swap of the run authority (a row
 *   moved to the next epoch only when free or expired) — never by listing: the candidate list is
 *   a hint, and a run another daemon took meanwhile is simply `run_busy` here. A wake-up only
 *   wakes daemons; every decision is read from the owners.
 * - This file composes and decides nothing an owner decides: it asks each owner of the cluster's
 *   schema through that owner's API — the cluster owner (membership, the work queue), the run
 *   authority (leases, and the facts of who holds which), the run store (whether a run started,
 *   where it stands) — and writes no SQL of its own.
 * - Planned handoff (`drain`): the daemon stops claiming, asks each run it drives to suspend at its
 *   next turn boundary, lets the drives end (their leases released), and only then says `drained`;
 *   another daemon resumes each run under the next epoch at `last_sequence + 1`.
 * - Crash handoff: a dead daemon's leases expire on the database clock; another daemon resumes
 *   the run from its last committed step. A mutating call the dead one had journalled but not
 *   settled is held as unknown under its original operation id (the engine's rule), never sent
 *   again; the run then waits for reconciliation or an operator (`held`).
 * - A daemon paused past its lease (or cut off from the database) finds its next write refused in
 *   the database (`run_lease_lost`) and stops driving that run.
 * - Every run is driven through the one engine contract (start, resume, suspend), so a run in a
 *   cluster keeps every promise a run in a root keeps.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { conflict, isLoopxError, notFound, rejected } from '../core/index.js';
import {
  clusterApplication,
  definitionBody,
  openEngine,
  openPgRunStore,
  parseAgentDefinition,
  RUNS_COMPONENT,
  RUNS_PG_MIGRATIONS,
  type AgentDefinition,
  type Engine,
  type RunStore,
  type RunView,
} from '../engine/index.js';
import { cluster as clusterOwner, effect as effectOwner } from '../owners/index.js';
import {
  DEFAULT_LEASE_MS,
  isRunId,
  openPgRunAuthority,
  openRunAuthority,
  pgRunLeaseFacts,
  runIdInvalid,
  RUN_AUTHORITY_COMPONENT,
  RUN_AUTHORITY_PG_MIGRATIONS,
  type PgRunAuthority,
  type RunLeaseFacts,
} from '../run-authority/index.js';
import {
  databaseUrlFrom,
  forgetAdmission,
  migratePostgres,
  openPostgres,
  requireSchemaVersion,
  type PgDatabase,
  type PgMigration,
  type PgQuery,
} from '../store/index.js';

export const DEFAULT_CLUSTER_SCHEMA = 'loopx_cluster';
/** The effect scope of a run outside any Goal (the effect owner's `runEffectScope`): `run:<run id>`. */
const RUN_SCOPE = effectOwner.runEffectScope('');

/** Every component a cluster's schema holds, in the order `loopx cluster init` migrates them. */
export const CLUSTER_COMPONENTS: ReadonlyArray<{
  readonly component: string;
  readonly migrations: readonly PgMigration[];
}> = [
  { component: RUNS_COMPONENT, migrations: RUNS_PG_MIGRATIONS },
  { component: RUN_AUTHORITY_COMPONENT, migrations: RUN_AUTHORITY_PG_MIGRATIONS },
  { component: 'effect', migrations: effectOwner.EFFECT_PG_MIGRATIONS },
  { component: clusterOwner.CLUSTER_COMPONENT, migrations: clusterOwner.CLUSTER_PG_MIGRATIONS },
];

/** The owners of a cluster's schema the runtime reads and moves, each through its own API. */
export interface ClusterOwners {
  /** Membership and the work queue. */
  readonly cluster: clusterOwner.ClusterPort;
  /** Who holds which run's lease (the run authority's facts; taking one is `acquireRun`). */
  readonly leases: RunLeaseFacts;
  /** The runs themselves: whether one started, where it stands. */
  readonly runs: RunStore;
}

export const clusterOwners = (db: PgDatabase): ClusterOwners => ({
  cluster: clusterOwner.openPgClusterPort(db),
  leases: pgRunLeaseFacts(db),
  runs: openPgRunStore(db),
});

export interface ClusterAccess {
  /** The database URL by reference (`env:NAME`), read now; never stored. */
  readonly cluster: string;
  readonly schema?: string;
}

export const openClusterDb = (a: ClusterAccess, max = 4): PgDatabase =>
  openPostgres({
    url: databaseUrlFrom(a.cluster),
    schema: a.schema ?? DEFAULT_CLUSTER_SCHEMA,
    max,
    allowExitOnIdle: true,
  });

export async function withClusterDb<T>(
  a: ClusterAccess,
  fn: (db: PgDatabase, owners: ClusterOwners) => Promise<T>,
): Promise<T> {
  const db = openClusterDb(a, 2);
  const owners = clusterOwners(db);
  try {
    return await fn(db, owners);
  } finally {
    owners.runs.close();
    await db.close();
  }
}

/** `loopx cluster init`: the schema and every component's tables (idempotent; a newer schema is refused). */
export async function initCluster(
  a: ClusterAccess,
): Promise<{ schema: string; components: Array<{ component: string; from: number; to: number }> }> {
  return withClusterDb(a, async (db) => {
    const components = [];
    for (const c of CLUSTER_COMPONENTS)
      components.push({ component: c.component, ...(await migratePostgres(db, c.component, c.migrations)) });
    return { schema: db.schema, components };
  });
}

/** Every component at the version this loopx knows; a schema not (or not fully) initialised names the command that does it. */
export const requireCluster = async (db: PgDatabase, a: ClusterAccess): Promise<void> => {
  try {
    for (const c of CLUSTER_COMPONENTS) await requireSchemaVersion(db, c.component, c.migrations);
  } catch (e) {
    if (!isLoopxError(e) || e.code !== 'pg_schema_not_migrated') throw e;
    throw rejected(
      'cluster_not_initialised',
      `Schema ${db.schema} is not an initialised cluster at this loopx's version.`,
      {
        nextAction: `initialise it: loopx cluster init --cluster ${a.cluster} --cluster-schema ${db.schema}`,
        details: { schema: db.schema },
      },
    );
  }
};

/** `loopx cluster submit`: a run for the cluster to drive, stored with its agent; a daemon is woken. */
export async function submitClusterRun(
  a: ClusterAccess,
  agent: AgentDefinition,
  options: { input?: string; runId?: string } = {},
): Promise<{ run_id: string }> {
  const runId = options.runId ?? `run_${randomBytes(10).toString('hex')}`;
  if (!isRunId(runId)) throw runIdInvalid();
  return withClusterDb(a, async (db, o) => {
    await requireCluster(db, a);
    // Stored, and the daemons woken, by the cluster owner.
    const inserted = await o.cluster.submit({
      run_id: runId,
      agent: definitionBody(agent),
      input: options.input ?? null,
    });
    if (!inserted)
      throw conflict('cluster_run_exists', `The cluster already has run ${runId}; a run id is used once.`, {
        nextAction: 'submit it under a new id (omit --run-id)',
      });
    return { run_id: runId };
  });
}

// The CLI carries the invocation's --cluster and --cluster-schema into these commands.
const instanceNotFound = (id: string) =>
  notFound('cluster_instance_not_found', `No daemon ${id} in this cluster.`, {
    nextAction: 'list the daemons: loopx cluster status',
  });

/**
 * `loopx cluster drain <instance>`: ask a daemon to hand its runs off (see the header) and wait —
 * up to `waitMs` — until it says `drained`. A daemon that is gone is already drained by expiry.
 */
export async function drainClusterInstance(
  a: ClusterAccess,
  instanceId: string,
  options: { waitMs?: number } = {},
): Promise<{ instance_id: string; state: string }> {
  return withClusterDb(a, async (db, o) => {
    await requireCluster(db, a);
    if ((await o.cluster.requestDrain(instanceId)) === undefined) throw instanceNotFound(instanceId);
    const deadline = Date.now() + (options.waitMs ?? 120_000);
    for (;;) {
      const row = await o.cluster.instance(instanceId);
      if (!row) throw instanceNotFound(instanceId);
      if (row.state !== 'draining' || !row.live)
        return { instance_id: instanceId, state: row.live ? row.state : 'gone' };
      if (Date.now() >= deadline) {
        throw rejected('cluster_drain_timeout', `Daemon ${instanceId} is still handing its runs off.`, {
          nextAction: `wait for it: loopx cluster drain ${instanceId}`,
        });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  });
}

/**
 * The engine every writer of a cluster's runs uses — a daemon, or an operator settling a held run:
 * the run store, the effects and the run records in the cluster's schema, every write of a run
 * fenced in the database by the writer's lease on it (its events, heads and effects alike).
 */
export function openClusterEngine(
  db: PgDatabase,
  authority: PgRunAuthority,
  receiverUrl?: string,
): { engine: Engine; effects: effectOwner.EffectJournal } {
  const fence = async (q: PgQuery, write: effectOwner.EffectWrite) =>
    write.effect.goal_id.startsWith(RUN_SCOPE)
      ? authority.fence(q, write.effect.goal_id.slice(RUN_SCOPE.length))
      : undefined;
  const effects = effectOwner.effectJournal(effectOwner.openPgEffectPort(db, { fence }));
  const engine = openEngine({
    application: clusterApplication({
      ...(receiverUrl !== undefined ? { receiverUrl } : {}),
      fenceOf: (runId) => authority.heldEpoch(runId),
    }),
    authority,
    store: openPgRunStore(db, { fence: authority.fence }),
    effects,
  });
  return { engine, effects };
}

export interface ClusterNodeOptions extends ClusterAccess {
  /** The host's key directory (the run authority's scope and keys, the same on every host of the cluster). */
  readonly keysDir?: string;
  /** The receiver `receiver.deliver` posts to. */
  readonly receiverUrl?: string;
  /** Lease length on the database clock (default 15 s). */
  readonly leaseMs?: number;
  /** Runs driven at once (default 4). */
  readonly maxRuns?: number;
  /** How often the daemon looks for work when nothing wakes it (default 1 s). */
  readonly pollMs?: number;
  readonly log?: (msg: string, fields: Record<string, unknown>) => void;
}

/**
 * The cluster schema's installation refusing this daemon's writes: a restored copy or a promoted
 * standby not rotated yet (`loopx cluster rotate`), a rotation since the daemon was admitted, a
 * superseded server. The database's state, not the run's: no run is held for it.
 */
const INSTALLATION_REFUSALS = ['store_restored_pending_rotation', 'store_writer_stale', 'store_superseded'];

/** Errors that mean "try again later", not "this run needs an operator". */
const transient = (e: unknown): boolean =>
  !isLoopxError(e) ||
  e.kind === 'internal' ||
  ['pg_unreachable', 'run_busy', 'import_busy', 'authority_shutting_down', 'provider_busy'].includes(e.code) ||
  INSTALLATION_REFUSALS.includes(e.code);

/**
 * One daemon's membership of a cluster: its instance (joined, heartbeat and state through the
 * cluster owner), the claim loop, the runs it drives, drain and stop (see the header).
 */
export class ClusterNode {
  readonly instanceId: string;
  readonly #db: PgDatabase;
  readonly #cluster: clusterOwner.ClusterPort;
  readonly #leases: RunLeaseFacts;
  readonly #authority: PgRunAuthority;
  readonly #engine: Engine;
  readonly #effects: effectOwner.EffectJournal;
  readonly #receiverUrl: string | undefined;
  readonly #leaseMs: number;
  readonly #maxRuns: number;
  readonly #pollMs: number;
  readonly #log: (msg: string, fields: Record<string, unknown>) => void;
  readonly #driving = new Map<string, Promise<void>>();
  #state: 'active' | 'draining' | 'drained' | 'stopped' = 'active';
  #timers: NodeJS.Timeout[] = [];
  #unlisten: (() => void) | undefined;
  #ticking: Promise<void> | undefined;
  #again = false;
  #drained: Promise<void> | undefined;

  private constructor(db: PgDatabase, authority: PgRunAuthority, options: ClusterNodeOptions) {
    this.#db = db;
    this.#cluster = clusterOwner.openPgClusterPort(db);
    this.#leases = pgRunLeaseFacts(db);
    this.#authority = authority;
    this.instanceId = authority.instanceId;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#maxRuns = options.maxRuns ?? 4;
    this.#pollMs = options.pollMs ?? 1_000;
    this.#log = options.log ?? (() => undefined);
    this.#receiverUrl = options.receiverUrl;
    const opened = openClusterEngine(db, authority, options.receiverUrl);
    this.#engine = opened.engine;
    this.#effects = opened.effects;
  }

  /** Join the cluster: the schema must be initialised (`loopx cluster init`); the instance row is written and the loops start. */
  static async join(options: ClusterNodeOptions): Promise<ClusterNode> {
    const db = openClusterDb(options, 6);
    try {
      await requireCluster(db, options);
      const keys = openRunAuthority({
        ...(options.keysDir !== undefined ? { dir: options.keysDir } : {}),
        create: false,
      });
      const authority = openPgRunAuthority({
        db,
        keys,
        ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
      });
      const node = new ClusterNode(db, authority, options);
      await node.#cluster.join({
        instance_id: node.instanceId,
        host: hostname(),
        pid: process.pid,
        lease_ms: node.#leaseMs,
      });
      await node.#start();
      return node;
    } catch (e) {
      await db.close().catch(() => undefined);
      throw e;
    }
  }

  async #start(): Promise<void> {
    const heartbeat = setInterval(() => void this.#heartbeat(), Math.max(50, Math.floor(this.#leaseMs / 3)));
    const poll = setInterval(() => this.#wake(), this.#pollMs);
    this.#timers.push(heartbeat, poll);
    this.#unlisten = await this.#cluster.watch(() => this.#wake()).catch(() => undefined);
    this.#wake();
  }

  /** The heartbeat: this daemon is alive; a drain asked of it (`loopx cluster drain`) begins here. */
  async #heartbeat(): Promise<void> {
    try {
      const state = await this.#cluster.heartbeat(this.instanceId);
      if (state === 'draining' && this.#state === 'active') void this.drain();
    } catch {
      // The database is unreachable: leases lapse on their own; writes fail in the database.
    }
  }

  #wake(): void {
    if (this.#state !== 'active') return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = this.#tick()
      .catch((e: unknown) => this.#log('cluster claim loop failed', { code: isLoopxError(e) ? e.code : 'internal' }))
      .finally(() => {
        this.#ticking = undefined;
        if (this.#again) {
          this.#again = false;
          this.#wake();
        }
      });
  }

  /**
   * Candidates (runs pending, less those the run authority says a live lease holds), then a claim
   * of each by its lease — one at a time, up to capacity. The two reads are hints of two owners at
   * two instants: a run taken in between is `run_busy` at its claim.
   */
  async #tick(): Promise<void> {
    await this.#reconcileHeld();
    const room = this.#maxRuns - this.#driving.size;
    if (room <= 0) return;
    const driven = (await this.#leases.unreleased()).filter((l) => l.live).map((l) => l.run_id);
    const candidates = await this.#cluster.pending({ limit: room * 2, excluding: driven });
    for (const runId of candidates) {
      if (this.#state !== 'active' || this.#driving.size >= this.#maxRuns) return;
      if (this.#driving.has(runId)) continue;
      const done = this.#drive(runId).finally(() => {
        this.#driving.delete(runId);
        this.#wake();
      });
      this.#driving.set(runId, done);
    }
  }

  /** Drive one run as far as it goes: start it, or resume it from where the database has it. */
  async #drive(runId: string): Promise<void> {
    try {
      const head = await this.#engine.store.get(runId);
      let view: RunView;
      if (!head) {
        const work = await this.#cluster.work(runId);
        if (!work) return;
        const agent = parseAgentDefinition(JSON.parse(work.agent));
        // Another daemon may have started it since the head was read (its commit's answer lost to a cut): driven on as its own.
        view = await this.#engine
          .start(agent, { runId, ...(work.input !== null ? { input: work.input } : {}) })
          .catch((e: unknown) => {
            if (isLoopxError(e) && e.code === 'run_exists') return this.#engine.resume(runId);
            throw e;
          });
      } else {
        view = await this.#engine.resume(runId);
      }
      await this.#settleWork(runId, view);
    } catch (e) {
      if (isLoopxError(e) && e.code === 'run_terminal') {
        await this.#settleWork(runId, await this.#engine.show(runId));
        return;
      }
      if (isLoopxError(e) && e.code === 'run_lease_lost') {
        this.#log('run taken over by another daemon; this one stopped driving it', { run: runId });
        return;
      }
      if (transient(e)) {
        // Rotated since this daemon was admitted: the rotation revoked every lease, so no driver of
        // this daemon writes a run again without a new epoch; its next write is admitted anew.
        this.#readmitAfterRotation(e);
        if (!(isLoopxError(e) && e.code === 'run_busy'))
          this.#log('run not driven now; retried later', { run: runId, code: isLoopxError(e) ? e.code : 'internal' });
        return;
      }
      // A refusal an operator must act on (a changed plan, a missing credential, …): held, with its code.
      await this.#cluster.hold(runId, (e as { code: string }).code);
      this.#log('run held', { run: runId, code: (e as { code: string }).code });
    }
  }

  /** A write refused because the cluster schema was rotated since this daemon was admitted: the next one reads its admission anew. */
  #readmitAfterRotation(e: unknown): void {
    const admitted = isLoopxError(e) && e.code === 'store_writer_stale' ? e.details?.admitted_generation : undefined;
    if (typeof admitted === 'number') forgetAdmission(this.#db, admitted);
  }

  /**
   * Runs held on an unknown outcome (a driver died, or was cut off, with a call in flight): under a
   * lease of its own — a new epoch, later than every earlier owner's — this daemon first raises the
   * receiver's fence for the run to that epoch, so a send of any earlier owner that is still on
   * its way is refused by the receiver; only then is each such effect reconciled under its
   * ORIGINAL operation id (the receiver is asked, never sent to again). A run whose every uncertain
   * call the effect owner could settle is pending again, so the next driver takes those outcomes
   * and goes on; one that stays unknown stays held, for an operator.
   */
  async #reconcileHeld(): Promise<void> {
    const held = await this.#cluster.held({ code: 'mutation_uncertain', limit: 8 });
    for (const runId of held) {
      const lease = await this.#authority.acquireRun(runId).catch(() => undefined);
      if (!lease) continue;
      try {
        if (await this.#settleUncertain(runId)) {
          // Pending again (and the daemons woken) — unless an operator asked to cancel it meanwhile.
          await this.#cluster.requeue(runId);
        }
      } catch (e) {
        this.#readmitAfterRotation(e);
        this.#log('reconciliation did not settle the run now', {
          run: runId,
          code: isLoopxError(e) ? e.code : 'internal',
        });
      } finally {
        await lease.release();
      }
    }
  }

  /** Under the run's lease: the receiver's fence raised to this epoch, then every uncertain call reconciled; whether all are settled. */
  async #settleUncertain(runId: string): Promise<boolean> {
    const epoch = this.#authority.heldEpoch(runId);
    if (this.#receiverUrl !== undefined && epoch !== undefined) {
      const fenced = await effectOwner.advanceReceiverFence(this.#receiverUrl, runId, epoch);
      if (fenced.status !== 'advanced' && fenced.status !== 'already') return false;
    }
    const view = await this.#engine.show(runId);
    const effects = view.waiting_for?.kind === 'resolution' ? view.waiting_for.effects : [];
    let open = 0;
    for (const e of effects) {
      const r = await this.#effects.reconcile(e.operation_id, effectOwner.webhookOperationQuery());
      if (r.resolution === 'held') open++;
    }
    return open === 0;
  }

  /** What the run's state means for the cluster's work: finished, held for an operator, or still pending (suspended for a handoff). */
  async #settleWork(runId: string, view: RunView): Promise<void> {
    if (view.status === 'completed' || view.status === 'failed' || view.status === 'cancelled') {
      await this.#cluster.finish(runId);
    } else if (view.status === 'active' && view.waiting_for !== null) {
      await this.#cluster.hold(
        runId,
        view.waiting_for.kind === 'interaction' ? 'interaction_pending' : 'mutation_uncertain',
      );
    } else if (view.status === 'suspended') {
      // Handed off (its lease released): wake the other daemons now rather than at their next poll.
      await this.#cluster.wake(runId);
    }
  }

  /**
   * Planned handoff: stop claiming, ask every driven run to suspend at its next turn boundary,
   * wait for the drives to end (their leases released), then say `drained`.
   */
  drain(): Promise<void> {
    return (this.#drained ??= (async () => {
      this.#state = 'draining';
      await this.#cluster.markInstance(this.instanceId, 'draining').catch(() => undefined);
      await this.#ticking;
      await Promise.all([...this.#driving.keys()].map((runId) => this.#engine.suspend(runId).catch(() => undefined)));
      await Promise.all([...this.#driving.values()]);
      this.#state = 'drained';
      await this.#cluster.markInstance(this.instanceId, 'drained').catch(() => undefined);
      this.#log('drained: every run handed off', { instance: this.instanceId });
    })());
  }

  /** Leave the cluster: drain, stop the loops, mark the instance stopped, close what it opened. */
  async close(): Promise<void> {
    await this.drain();
    for (const t of this.#timers) clearInterval(t);
    this.#unlisten?.();
    this.#state = 'stopped';
    await this.#cluster.markInstance(this.instanceId, 'stopped').catch(() => undefined);
    this.#engine.close();
    await this.#authority.close();
    await this.#db.close();
  }
}
