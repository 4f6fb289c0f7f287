/**
 * The one snapshot a backup set reads a root's PostgreSQL schema in: a single REPEATABLE READ READ
 * ONLY transaction on one connection, opened before the first component is captured and held until
 * the last one is, so every owner's rows in the set are of one committed state of the database
 * (writers go on; nothing they commit meanwhile is seen). Owners read it one at a time through
 * `LiveService.snapshot`; `current` reads the state now, in a fresh read-only transaction (the
 * set's end re-check).
 *
 * A Goal that keeps its work apart from its root (`goal create --work-provider`) is read where it
 * lives (`openGoalWorkSources`): in the root's snapshot when its schema is the root's, else in one
 * snapshot per other (reference, schema) — opened at the same time and held as long — or from its
 * files when it chose SQLite on a root on PostgreSQL.
 *
 * What it records about the service is a reference, never a credential: the provider, the schema,
 * the server's identity (system identifier, timeline, database OID — what a restore changes), the
 * installation the snapshot read (its store identity, restore generation and state, from the
 * schema's `loopx_installation` row, read in the snapshot itself) and the snapshot's transaction
 * bounds. The URL and the environment variable's value never leave it.
 */
import { pgFailure, readInstallation, type InstallationState, type PgDatabase, type PgQuery } from '../store/index.js';
import type { GoalWorkSource, LiveService } from './contract.js';
import { postgresAt, rootPostgres, rootStoreLocation } from './root-store-location.js';
import { recordedWorkLocations } from './work/index.js';

/** The service a set was captured from, as the manifest records it. */
export interface ServiceReference {
  readonly provider: 'postgresql';
  readonly schema: string;
  readonly server: { readonly system_identifier: string; readonly timeline: number; readonly database_oid: number };
  /** The schema's installation as the snapshot read it (null: the schema has no installation row). */
  readonly installation: { readonly store_identity: string; readonly restore_generation: number; readonly state: InstallationState } | null;
  readonly snapshot: {
    readonly isolation: 'repeatable_read';
    readonly read_only: true;
    /** The snapshot's bounds (`pg_snapshot_xmin`/`xmax`): transactions it sees as committed are below xmax and not in progress. */
    readonly xmin: string;
    readonly xmax: string;
    readonly taken_at: string;
    /** Set when the snapshot was released (every component of the set read). */
    readonly released_at: string | null;
  };
}

export interface ServiceSnapshot extends LiveService {
  reference(): ServiceReference;
  /** Ends the snapshot's transaction (it wrote nothing); idempotent. */
  close(): Promise<void>;
}

const READ = { isolation: 'repeatable read', readOnly: true } as const;

/** Opens a transaction on `db` and keeps it open until `release` resolves; resolves with its statement runner. */
function holdTransaction(db: PgDatabase, release: Promise<void>): { opened: Promise<PgQuery>; ended: Promise<void> } {
  let ready!: (q: PgQuery) => void;
  let fail!: (e: unknown) => void;
  const opened = new Promise<PgQuery>((res, rej) => {
    ready = res;
    fail = rej;
  });
  const ended = db
    .transaction(async (q) => {
      ready(q);
      await release;
    }, READ)
    .catch((e: unknown) => fail(e)); // before it opened: the open fails; after: nothing was written
  return { opened, ended };
}

/** The snapshot of the root's PostgreSQL schema for one set, or null for a root on SQLite. */
export async function openServiceSnapshot(root: string): Promise<ServiceSnapshot | null> {
  const location = rootStoreLocation(root);
  if (location.provider !== 'postgresql') return null;
  return openSchemaSnapshot(rootPostgres(root)!, location.schema);
}

/** A service a Goal's work was read from, apart from its root's: its reference and the Goals read in it. */
export interface GoalServiceSnapshot {
  readonly goal_ids: readonly string[];
  readonly snapshot: ServiceSnapshot;
}

/**
 * Where each of `goalIds` that chose where its work lives keeps it, for one set: the root's own
 * snapshot (`rootService`) when it is the root's schema, one snapshot per other schema (opened
 * here; the caller closes them), or the root's files. Goals without a choice are not listed.
 */
export async function openGoalWorkSources(
  root: string,
  goalIds: readonly string[],
  rootService: ServiceSnapshot | null,
): Promise<{ readonly sources: ReadonlyMap<string, GoalWorkSource>; readonly services: readonly GoalServiceSnapshot[] }> {
  const rootAt = rootStoreLocation(root);
  const wanted = new Set(goalIds);
  const sources = new Map<string, GoalWorkSource>();
  const byService = new Map<string, { goal_ids: string[]; snapshot: ServiceSnapshot }>();
  try {
    for (const { goal_id, location } of recordedWorkLocations(root)) {
      if (!wanted.has(goal_id)) continue;
      if (location.provider === 'sqlite') {
        sources.set(goal_id, { provider: 'sqlite' });
        continue;
      }
      const isRoots = rootAt.provider === 'postgresql' && rootAt.database_url === location.database_url && rootAt.schema === location.schema;
      const key = `${location.database_url}\n${location.schema}`;
      let own = byService.get(key);
      if (!isRoots && own === undefined) {
        own = { goal_ids: [], snapshot: await openSchemaSnapshot(postgresAt(location), location.schema) };
        byService.set(key, own);
      }
      own?.goal_ids.push(goal_id);
      sources.set(goal_id, { provider: location.provider, service: isRoots ? rootService! : own!.snapshot, store_key: location.store_key });
    }
  } catch (e) {
    for (const s of byService.values()) await s.snapshot.close();
    throw e;
  }
  return { sources, services: [...byService.values()] };
}

/** One REPEATABLE READ READ ONLY snapshot of `schema` behind `db`, held until `close`. */
async function openSchemaSnapshot(db: PgDatabase, schema: string): Promise<ServiceSnapshot> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const held = holdTransaction(db, released);
  let q: PgQuery;
  let server;
  let bounds;
  let installation: ServiceReference['installation'] = null;
  try {
    server = await db.serverIdentity();
    q = await held.opened;
    // The first statement takes the snapshot (REPEATABLE READ fixes it there, not at BEGIN).
    [bounds] = await q<{ xmin: string; xmax: string; installed: boolean }>(
      `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin, pg_snapshot_xmax(pg_current_snapshot())::text AS xmax,
              to_regclass('loopx_installation') IS NOT NULL AS installed`,
    );
    const row = bounds?.installed ? await readInstallation(q) : undefined;
    if (row !== undefined) installation = { store_identity: row.store_identity, restore_generation: row.restore_generation, state: row.state };
  } catch (e) {
    release();
    await held.ended;
    throw pgFailure(e, schema);
  }
  const taken_at = new Date().toISOString();
  let releasedAt: string | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  return {
    provider: 'postgresql',
    source_identity: installation?.store_identity ?? null,
    snapshot<T>(fn: (q: PgQuery) => Promise<T>): Promise<T> {
      if (releasedAt !== null) return Promise.reject(new Error('the set snapshot was released'));
      const run = queue.then(() => fn(q));
      queue = run.catch(() => undefined);
      return run;
    },
    current: (fn) => db.transaction(fn, READ),
    reference: () => ({
      provider: 'postgresql',
      schema,
      server,
      installation,
      snapshot: { isolation: 'repeatable_read', read_only: true, xmin: bounds!.xmin, xmax: bounds!.xmax, taken_at, released_at: releasedAt },
    }),
    async close() {
      if (releasedAt !== null) return;
      await queue;
      releasedAt = new Date().toISOString();
      release();
      await held.ended;
    },
  };
}
