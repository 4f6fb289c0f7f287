/**
 * The one snapshot a backup set reads a PostgreSQL schema in: a single REPEATABLE READ READ ONLY
 * transaction on one connection, opened before the first component is captured and held until the
 * last one is, so every owner's rows in the set are of one committed state of the database
 * (writers go on; nothing they commit meanwhile is seen). Owners read it one at a time through
 * `LiveService.snapshot`; `current` reads the state now, in a fresh read-only transaction (the
 * set's end re-check). The installation it records is the schema's `loopx_installation` row, read
 * in the snapshot itself.
 */
import { pgFailure, readInstallation, type PgDatabase, type PgQuery } from '../../store/index.js';
import type { ServiceReference, ServiceSnapshot } from './snapshot.js';

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

/** One REPEATABLE READ READ ONLY snapshot of `schema` behind `db`, held until `close`. */
export async function openSchemaSnapshot(provider: string, db: PgDatabase, schema: string): Promise<ServiceSnapshot> {
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
    if (row !== undefined)
      installation = {
        store_identity: row.store_identity,
        restore_generation: row.restore_generation,
        state: row.state,
      };
  } catch (e) {
    release();
    await held.ended;
    throw pgFailure(e, schema);
  }
  const taken_at = new Date().toISOString();
  let releasedAt: string | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  return {
    provider,
    source_identity: installation?.store_identity ?? null,
    snapshot<T>(fn: (q: PgQuery) => Promise<T>): Promise<T> {
      if (releasedAt !== null) return Promise.reject(new Error('the set snapshot was released'));
      const run = queue.then(() => fn(q));
      queue = run.catch(() => undefined);
      return run;
    },
    current: (fn) => db.transaction(fn, READ),
    reference: () => ({
      provider,
      schema,
      server,
      installation,
      snapshot: {
        isolation: 'repeatable_read',
        read_only: true,
        xmin: bounds!.xmin,
        xmax: bounds!.xmax,
        taken_at,
        released_at: releasedAt,
      },
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
