/**
 * What the PostgreSQL port tests share: pools on a fresh schema of the test server migrated for one
 * component (a port's harness opens the SAME schema every time — a restart is a new pool), and
 * wrappers of a `PgDatabase` that make the database's own behaviour observable — a COMMIT whose
 * connection another one terminates at the commit point (ambiguous), and writers held at a latch
 * until all of them are inside their transactions (a real race). Pools are closed after the file.
 */
import { afterAll } from 'vitest';
import { migratePostgres, openPostgres, type PgDatabase, type PgMigration, type PgQuery } from '../../../src/store/index.js';
import { PG_URL, pgSchemas } from '../../support/pg.js';

export interface PgStore {
  readonly schema: string;
  /** A new pool on the store's schema (its first use waits for the migration). */
  open(): PgDatabase;
}

/** `db` whose statements wait for `ready` first. */
function after(db: PgDatabase, ready: Promise<unknown>): PgDatabase {
  return {
    schema: db.schema,
    query: async <R extends Record<string, unknown>>(sql: string, params?: readonly unknown[]) => {
      await ready;
      return db.query<R>(sql, params);
    },
    transaction: async (body, options) => {
      await ready;
      return db.transaction(body, options);
    },
    serverIdentity: () => db.serverIdentity(),
    close: () => db.close(),
  };
}

/** Fresh schemas migrated for `component`, one per call. */
export function migratedPgStores(component: string, migrations: readonly PgMigration[]): () => PgStore {
  const schema = pgSchemas();
  const pools: PgDatabase[] = [];
  afterAll(async () => {
    for (const p of pools) await p.close().catch(() => undefined);
  });
  const pool = (s: string, max = 2): PgDatabase => {
    const d = openPostgres({ url: PG_URL, schema: s, max });
    pools.push(d);
    return d;
  };
  return () => {
    const s = schema();
    const ready = migratePostgres(pool(s, 1), component, migrations);
    ready.catch(() => undefined); // awaited by every statement; never an unhandled rejection
    return { schema: s, open: () => after(pool(s), ready) };
  };
}

/** A pool on another schema of the same server, for statements outside the port (the killer, damage). */
export function sidePool(schema: string): PgDatabase {
  const d = openPostgres({ url: PG_URL, schema, max: 1 });
  afterAll(() => d.close().catch(() => undefined));
  return d;
}

/**
 * `db` whose first write transaction runs its body, then has `killer` terminate its backend before
 * returning: the COMMIT that follows meets an ended connection (`PgCommitAmbiguous`), and nothing
 * the body wrote lands. Reads, and later writes, pass through.
 */
export function terminatedAtCommit(db: PgDatabase, killer: PgDatabase): { readonly db: PgDatabase; fired(): boolean } {
  let fired = false;
  const cut: PgDatabase = {
    ...db,
    query: db.query,
    transaction: (body, options) => {
      if (fired || options?.readOnly) return db.transaction(body, options);
      fired = true;
      return db.transaction(async (q: PgQuery) => {
        const value = await body(q);
        const [row] = await q<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await killer.query('SELECT pg_terminate_backend($1)', [row!.pid]);
        return value;
      }, options);
    },
  };
  return { db: cut, fired: () => fired };
}

/**
 * The `dbs`, each of whose first write transaction waits, once inside its transaction, until every
 * one of them is inside its own — so their bodies run against each other, not one after another.
 */
export function meetingInTransaction(dbs: readonly PgDatabase[]): PgDatabase[] {
  let arrived = 0;
  let all!: () => void;
  const met = new Promise<void>((resolve) => (all = resolve));
  return dbs.map((db) => {
    let used = false;
    return {
      ...db,
      query: db.query,
      transaction: (body, options) => {
        if (used || options?.readOnly) return db.transaction(body, options);
        used = true;
        return db.transaction(async (q: PgQuery) => {
          await q('SELECT txid_current()');
          if (++arrived === dbs.length) all();
          await met;
          return body(q);
        }, options);
      },
    };
  });
}
