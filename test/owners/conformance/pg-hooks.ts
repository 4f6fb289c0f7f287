/**
 * Fault and race seams for the PostgreSQL provider tests: a pool whose next writing transaction
 * runs a hook on its own connection (before the write's body, or after it just ahead of COMMIT),
 * the backend a connection runs on (for `pg_terminate_backend`), and a latch on a lock wait.
 */
import type { PgDatabase, PgQuery } from '../../../src/store/index.js';

export type Hook = (q: PgQuery) => Promise<void>;

/** `db` whose next writing transaction runs `hook` on its own connection: `before` the write's body, or `after` it, just ahead of COMMIT. */
export function hooked(db: PgDatabase): { db: PgDatabase; arm(when: 'before' | 'after', hook: Hook): void } {
  let armed: { when: 'before' | 'after'; hook: Hook } | undefined;
  return {
    arm: (when, hook) => (armed = { when, hook }),
    db: {
      ...db,
      query: (sql, params) => db.query(sql, params),
      serverIdentity: () => db.serverIdentity(),
      close: () => db.close(),
      transaction: (body, options) => {
        const a = options?.readOnly ? undefined : armed;
        if (a) armed = undefined;
        return db.transaction(async (q) => {
          if (a?.when === 'before') await a.hook(q);
          const value = await body(q);
          if (a?.when === 'after') await a.hook(q);
          return value;
        }, options);
      },
    },
  };
}

/** The server process of the connection `q` runs on. */
export const backendPid = async (q: PgQuery): Promise<number> =>
  ((await q<{ pid: number }>('SELECT pg_backend_pid() AS pid')) as [{ pid: number }])[0].pid;

/** Latch: resolves once some backend waits for a lock held by backend `pid` (polled; fails after a generous bound). */
export async function blockedBy(db: PgDatabase, pid: number): Promise<void> {
  for (let i = 0; i <= 1200; i++) {
    const [row] = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND $1 = ANY(pg_blocking_pids(pid))',
      [pid],
    );
    if (row!.n > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no backend ever waited for backend ${pid}`);
}
