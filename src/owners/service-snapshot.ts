/**
 * The one snapshot a backup set reads a root's PostgreSQL schema in: a single REPEATABLE READ READ
 * ONLY transaction on one connection, opened before the first component is captured and held until
 * the last one is, so every owner's rows in the set are of one committed state of the database
 * (writers go on; nothing they commit meanwhile is seen). Owners read it one at a time through
 * `LiveService.snapshot`; `current` reads the state now, in a fresh read-only transaction (the
 * set's end re-check).
 *
 * What it records about the service is a reference, never a credential: the provider, the schema,
 * the server's identity (system identifier, timeline, database OID — what a restore changes), the
 * installation the snapshot read (its store identity, restore generation and state, from the
 * schema's `loopx_installation` row, read in the snapshot itself) and the snapshot's transaction
 * bounds. The URL and the environment variable's value never leave it.
 */
import { pgFailure, readInstallation, type InstallationState, type PgDatabase, type PgQuery } from '../store/index.js';
import type { LiveService } from './contract.js';
import { rootPostgres, rootStoreLocation } from './root-store-location.js';

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
  const db = rootPostgres(root)!;
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
    throw pgFailure(e, location.schema);
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
      schema: location.schema,
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
