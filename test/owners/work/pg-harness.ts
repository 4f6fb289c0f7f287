/**
 * The work provider's PostgreSQL harness: one migrated installation schema per test file on the
 * real server, a store (row key) per harness, and a pool of its own per `open()` — a second open is
 * a second process's view of the same store. Pools are closed after each test.
 */
import { afterAll, afterEach } from 'vitest';
import { migratePostgres, openPostgres, type PgDatabase } from '../../../src/store/index.js';
import {
  WORK_PG_COMPONENT,
  WORK_PG_MIGRATIONS,
  openPostgresWorkProvider,
  type WorkProvider,
} from '../../../src/owners/work/index.js';
import { PG_URL, pgSchemas } from '../../support/pg.js';
import type { WorkProviderHarness } from '../conformance/work-provider.conformance.js';
import { GOAL } from './support.js';

export interface PgWorkHarness extends WorkProviderHarness {
  readonly schema: string;
  readonly store_key: string;
  open(options?: { expected_incarnation?: string; goal_id?: string }): Promise<WorkProvider>;
  /** A pool of its own on the harness's schema (closed after the test). */
  database(): PgDatabase;
}

/** Call once per test file: `harness(key?)` makes a store `key` (fresh unless named) in the file's migrated schema. */
export function pgWorkHarnesses(): (key?: string) => PgWorkHarness {
  const schemaOf = pgSchemas();
  let schema: Promise<string> | undefined;
  let pools: PgDatabase[] = [];
  const pool = (s: string): PgDatabase => {
    const db = openPostgres({ url: PG_URL, schema: s, max: 2 });
    pools.push(db);
    return db;
  };
  const migrated = (): Promise<string> =>
    (schema ??= (async () => {
      const s = schemaOf();
      const db = openPostgres({ url: PG_URL, schema: s, max: 1 });
      try {
        await migratePostgres(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS);
      } finally {
        await db.close();
      }
      return s;
    })());
  const closeAll = async () => {
    const open = pools;
    pools = [];
    await Promise.all(open.map((d) => d.close().catch(() => undefined)));
  };
  afterEach(closeAll);
  afterAll(closeAll);
  let n = 0;
  return (key = `store-${++n}-${Math.random().toString(16).slice(2, 8)}`) => {
    let name = '';
    return {
      get schema() {
        return name;
      },
      store_key: key,
      database: () => pool(name),
      async open(o = {}) {
        name = await migrated();
        return openPostgresWorkProvider(pool(name), {
          store_key: key,
          goal_id: o.goal_id ?? GOAL,
          ...(o.expected_incarnation ? { expected_incarnation: o.expected_incarnation } : {}),
        });
      },
    };
  };
}
