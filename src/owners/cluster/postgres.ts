/**
 * The PostgreSQL cluster port: the `cluster` component of a cluster's schema (migrated by `loopx
 * cluster init` with the other components), its two tables written only here:
 *
 *   cluster_instances   one row per daemon start: host, pid, lease, heartbeat, state
 *   cluster_work        one row per submitted run: its agent and input, pending / held (code) / finished
 *
 * Every transition is one conditional statement (the WHERE clause is the contract's rule), so two
 * writers racing on one row never both apply and a repeat changes nothing. Liveness and ages are
 * computed on the database clock. Wake-ups are NOTIFY on one channel, sent by the statement's own
 * transaction (so a watcher that wakes reads the change); watching is LISTEN on a connection of
 * its own (`PgDatabase.listen`). The component's version is checked once, before the first
 * statement (a port never creates its tables). It does not own the pool.
 */
import { isLoopxError } from '../../core/index.js';
import { pgFailure, requireSchemaVersion, type PgDatabase, type PgMigration, type PgQuery } from '../../store/index.js';
import {
  CANCEL_REQUESTED,
  type ClusterInstance,
  type ClusterPort,
  type ClusterWork,
  type InstanceJoin,
  type InstanceState,
  type SubmittedWork,
} from './contract.js';
import { instanceExists } from './errors.js';

/** The component `loopx cluster init` records these tables under. */
export const CLUSTER_COMPONENT = 'cluster';

export const CLUSTER_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE cluster_instances (
       instance_id TEXT COLLATE "C" PRIMARY KEY,
       host TEXT NOT NULL,
       pid INTEGER NOT NULL,
       lease_ms INTEGER NOT NULL CHECK (lease_ms > 0),
       started_at TIMESTAMPTZ NOT NULL,
       heartbeat_at TIMESTAMPTZ NOT NULL,
       state TEXT NOT NULL CHECK (state IN ('active', 'draining', 'drained', 'stopped'))
     );
     CREATE TABLE cluster_work (
       run_id TEXT COLLATE "C" PRIMARY KEY,
       agent TEXT NOT NULL,
       input TEXT,
       state TEXT NOT NULL CHECK (state IN ('pending', 'held', 'finished')),
       held_code TEXT,
       submitted_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
       finished_at TIMESTAMPTZ
     );
     CREATE INDEX cluster_work_pending ON cluster_work (submitted_at, run_id) WHERE state = 'pending';`,
  },
];

/** The NOTIFY channel of a cluster's schema: a wake-up, never authority. */
const CHANNEL = 'loopx_cluster';

const INSTANCE_COLUMNS = `instance_id, host, pid, lease_ms, state,
  heartbeat_at + make_interval(secs => lease_ms / 1000.0) > now() AS live,
  (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint AS age`;
const WORK_COLUMNS = 'run_id, agent, input, state, held_code';

type InstanceRow = {
  instance_id: string;
  host: string;
  pid: number;
  lease_ms: number;
  state: InstanceState;
  live: boolean;
  age: string;
};

const instanceOf = (r: InstanceRow): ClusterInstance => ({
  instance_id: r.instance_id,
  host: r.host,
  pid: Number(r.pid),
  lease_ms: Number(r.lease_ms),
  state: r.state,
  live: r.live,
  heartbeat_age_ms: Number(r.age),
});
type WorkRow = ClusterWork & Record<string, unknown>;
const workOf = (r: WorkRow): ClusterWork => ({
  run_id: r.run_id,
  agent: r.agent,
  input: r.input,
  state: r.state,
  held_code: r.held_code,
});

const notify = (q: PgQuery, subject: string) => q(`SELECT pg_notify('${CHANNEL}', $1)`, [subject]);

class PgClusterPort implements ClusterPort {
  readonly #db: PgDatabase;
  #checked: Promise<void> | undefined;

  constructor(db: PgDatabase) {
    this.#db = db;
  }

  // ── membership ──

  async join(m: InstanceJoin): Promise<void> {
    const rows = await this.#q(
      `INSERT INTO cluster_instances (instance_id, host, pid, lease_ms, started_at, heartbeat_at, state) VALUES ($1, $2, $3, $4, now(), now(), 'active')
       ON CONFLICT (instance_id) DO NOTHING RETURNING 1`,
      [m.instance_id, m.host, m.pid, m.lease_ms],
    );
    if (rows.length === 0) throw instanceExists(m.instance_id);
  }

  async heartbeat(instanceId: string): Promise<InstanceState | undefined> {
    const [row] = await this.#q<{ state: InstanceState }>(
      'UPDATE cluster_instances SET heartbeat_at = now() WHERE instance_id = $1 RETURNING state',
      [instanceId],
    );
    return row?.state;
  }

  requestDrain(instanceId: string): Promise<InstanceState | undefined> {
    return this.#tx(async (t) => {
      const [row] = await t<{ state: InstanceState }>(
        `UPDATE cluster_instances SET state = CASE WHEN state = 'active' THEN 'draining' ELSE state END WHERE instance_id = $1 RETURNING state`,
        [instanceId],
      );
      if (row) await notify(t, instanceId);
      return row?.state;
    });
  }

  async markInstance(instanceId: string, state: Exclude<InstanceState, 'active'>): Promise<void> {
    await this.#q(
      `UPDATE cluster_instances SET state = $2 WHERE instance_id = $1 AND ($2 <> 'draining' OR state = 'active')`,
      [instanceId, state],
    );
  }

  async instance(instanceId: string): Promise<ClusterInstance | undefined> {
    const [row] = await this.#q<InstanceRow>(
      `SELECT ${INSTANCE_COLUMNS} FROM cluster_instances WHERE instance_id = $1`,
      [instanceId],
    );
    return row && instanceOf(row);
  }

  async instances(): Promise<ClusterInstance[]> {
    return (
      await this.#q<InstanceRow>(`SELECT ${INSTANCE_COLUMNS} FROM cluster_instances ORDER BY started_at, instance_id`)
    ).map(instanceOf);
  }

  // ── the work queue ──

  submit(w: SubmittedWork): Promise<boolean> {
    return this.#tx(async (t) => {
      const rows = await t(
        `INSERT INTO cluster_work (run_id, agent, input, state) VALUES ($1, $2, $3, 'pending') ON CONFLICT (run_id) DO NOTHING RETURNING 1`,
        [w.run_id, w.agent, w.input],
      );
      if (rows.length === 1) await notify(t, w.run_id);
      return rows.length === 1;
    });
  }

  async work(runId: string): Promise<ClusterWork | undefined> {
    const [row] = await this.#q<WorkRow>(`SELECT ${WORK_COLUMNS} FROM cluster_work WHERE run_id = $1`, [runId]);
    return row && workOf(row);
  }

  async listWork(): Promise<ClusterWork[]> {
    return (await this.#q<WorkRow>(`SELECT ${WORK_COLUMNS} FROM cluster_work ORDER BY submitted_at, run_id`)).map(
      workOf,
    );
  }

  async pending({
    limit,
    excluding = [],
  }: {
    readonly limit: number;
    readonly excluding?: readonly string[];
  }): Promise<string[]> {
    const rows = await this.#q<{ run_id: string }>(
      `SELECT run_id FROM cluster_work WHERE state = 'pending' AND NOT (run_id = ANY($2::text[])) ORDER BY submitted_at, run_id LIMIT $1`,
      [limit, [...excluding]],
    );
    return rows.map((r) => r.run_id);
  }

  async held({ code, limit }: { readonly code: string; readonly limit: number }): Promise<string[]> {
    const rows = await this.#q<{ run_id: string }>(
      `SELECT run_id FROM cluster_work WHERE state = 'held' AND held_code = $1 ORDER BY submitted_at, run_id LIMIT $2`,
      [code, limit],
    );
    return rows.map((r) => r.run_id);
  }

  hold(runId: string, code: string): Promise<boolean> {
    return this.#moved(
      `UPDATE cluster_work SET state = 'held', held_code = $2 WHERE run_id = $1 AND state = 'pending' RETURNING 1`,
      [runId, code],
    );
  }

  requeue(runId: string): Promise<boolean> {
    return this.#tx(async (t) => {
      const rows = await t(
        `UPDATE cluster_work SET state = 'pending', held_code = NULL WHERE run_id = $1 AND state = 'held' AND held_code IS DISTINCT FROM $2 RETURNING 1`,
        [runId, CANCEL_REQUESTED],
      );
      if (rows.length === 1) await notify(t, runId);
      return rows.length === 1;
    });
  }

  requestCancel(runId: string): Promise<boolean> {
    return this.#moved(
      `UPDATE cluster_work SET state = 'held', held_code = $2 WHERE run_id = $1 AND state <> 'finished' RETURNING 1`,
      [runId, CANCEL_REQUESTED],
    );
  }

  finish(runId: string): Promise<boolean> {
    return this.#moved(
      `UPDATE cluster_work SET state = 'finished', finished_at = now() WHERE run_id = $1 AND state <> 'finished' RETURNING 1`,
      [runId],
    );
  }

  // ── wake-ups ──

  async wake(subject: string): Promise<void> {
    await this.#q(`SELECT pg_notify('${CHANNEL}', $1)`, [subject]);
  }

  watch(onWake: () => void): Promise<() => void> {
    return this.#db.listen(CHANNEL, onWake).catch((e: unknown) => this.#typed(e));
  }

  // ── plumbing ──

  /** The component's version, once per port; a refusal is not remembered (a schema migrated later opens). */
  #ready(): Promise<void> {
    return (this.#checked ??= requireSchemaVersion(this.#db, CLUSTER_COMPONENT, CLUSTER_PG_MIGRATIONS).catch(
      (e: unknown) => {
        this.#checked = undefined;
        throw e;
      },
    ));
  }

  #typed(e: unknown): never {
    throw isLoopxError(e) ? e : pgFailure(e, this.#db.schema);
  }

  /** One statement on its own (autocommit). */
  async #q<R extends Record<string, unknown> = Record<string, unknown>>(
    sql: string,
    params: readonly unknown[] = [],
  ): Promise<R[]> {
    await this.#ready();
    return this.#db.query<R>(sql, params).catch((e: unknown) => this.#typed(e));
  }

  /** Statements in one transaction: a change and the wake-up it sends, delivered at its commit. */
  async #tx<T>(body: (t: PgQuery) => Promise<T>): Promise<T> {
    await this.#ready();
    return this.#db.transaction(body).catch((e: unknown) => this.#typed(e));
  }

  /** One conditional write of a run's work: whether it applied. */
  async #moved(sql: string, params: readonly unknown[]): Promise<boolean> {
    return (await this.#q(sql, params)).length === 1;
  }
}

/** The cluster port on `db`'s schema (the pool is not its own). */
export const openPgClusterPort = (db: PgDatabase): ClusterPort => new PgClusterPort(db);
