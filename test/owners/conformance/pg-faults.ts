/**
 * Wrappers of a `PgDatabase` that make the database's own behaviour observable in the PostgreSQL
 * port tests: a COMMIT whose connection another one terminates at the commit point (ambiguous),
 * and writers held at a latch until all of them are inside their transactions (a real race).
 */
import type { PgDatabase, PgQuery } from '../../../src/store/index.js';

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
