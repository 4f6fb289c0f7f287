/**
 * PostgreSQL providers in the port conformance suites: each harness is a fresh schema of the test
 * server, migrated the way `loopx db migrate` does it; every `open()` is a new pool on it (a
 * restart). `open()` stays synchronous: the pool it hands the port waits for the migration before
 * its first statement. Pools are closed, and schemas dropped, after the file's tests.
 */
import { afterAll } from 'vitest';
import { migratePostgres, openPostgres, type PgDatabase, type PgMigration } from '../../../src/store/index.js';
import { PG_URL, pgSchemas } from '../../support/pg.js';
import type { PortHarness } from './support.js';

/** `db`, whose statements and transactions wait for `ready` first. */
export const gated = (db: PgDatabase, ready: Promise<unknown>): PgDatabase => ({
  schema: db.schema,
  query: async (sql, params) => (await ready, db.query(sql, params)),
  autocommit: async (sql, params, name) => (await ready, db.autocommit(sql, params, name)),
  transaction: async (body, options) => (await ready, db.transaction(body, options)),
  serverIdentity: async () => (await ready, db.serverIdentity()),
  listen: async (channel, onNotify) => (await ready, db.listen(channel, onNotify)),
  close: () => db.close(),
});

export interface PgHarnesses {
  /** A harness on a fresh migrated schema: `open()` opens `port` on a new pool each time. */
  harness<P>(port: (db: PgDatabase) => P): PortHarness<P>;
  /** A new pool on a fresh migrated schema (resolved once migrated). */
  database(): Promise<PgDatabase>;
  /** A fresh schema name, nothing created (dropped after the file's tests). */
  schema(): string;
  /** A new pool on `schema` (closed after the file's tests). */
  pool(schema: string): PgDatabase;
}

export function pgHarnesses(component: string, migrations: readonly PgMigration[]): PgHarnesses {
  const schema = pgSchemas();
  const pools: PgDatabase[] = [];
  afterAll(async () => {
    for (const d of pools) await d.close().catch(() => undefined);
  });
  const pool = (s: string): PgDatabase => {
    const d = openPostgres({ url: PG_URL, schema: s, max: 2 });
    pools.push(d);
    return d;
  };
  return {
    pool,
    schema,
    harness(port) {
      const s = schema();
      let migrated: Promise<unknown> | undefined;
      return {
        open: () => {
          const db = pool(s);
          migrated ??= migratePostgres(db, component, migrations);
          return port(gated(db, migrated));
        },
      };
    },
    async database() {
      const db = pool(schema());
      await migratePostgres(db, component, migrations);
      return db;
    },
  };
}
