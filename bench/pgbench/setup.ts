/**
 * The work commit statement alone against a raw INSERT, with no Node in the way: pgbench's side of
 * bench/postgres.bench.ts. `npx tsx bench/pgbench/setup.ts <schema>` migrates a fresh schema
 * (127.0.0.1:5432/test as user postgres; LOOPX_BENCH_PG_URL names another), opens eight Goals
 * g1…g8 through the work owner (one Todo each) and the raw table, and prints the pgbench commands:
 * each client commits on its own Goal (work-commit.sql) or inserts its own rows (raw-insert.sql).
 * Drop the schema afterwards (`DROP SCHEMA <schema> CASCADE`). Setup only: nothing is measured here.
 */
import { migratePostgres, openPostgres } from '../../src/store/index.js';
import {
  WORK_PG_COMPONENT,
  WORK_PG_MIGRATIONS,
  openPostgresWorkProvider,
  openWork,
} from '../../src/owners/work/index.js';

const URL = process.env.LOOPX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = process.argv[2] ?? 'loopx_pgbench';
const db = openPostgres({ url: URL, schema, max: 2 });
try {
  await migratePostgres(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS);
  for (let i = 1; i <= 8; i++) {
    const work = await openWork({
      provider: await openPostgresWorkProvider(db, { store_key: `g${i}`, goal_id: `g${i}` }),
    });
    await work.addTodo({ operation_id: 'add', todo_id: 't1', title: 'first title' });
    work.close();
  }
  await db.query(`CREATE TABLE raw_commits (
    goal_key TEXT NOT NULL, cursor BIGINT NOT NULL, provider_revision TEXT NOT NULL, operation_id TEXT NOT NULL,
    request_digest TEXT NOT NULL, events TEXT NOT NULL, receipt TEXT NOT NULL,
    PRIMARY KEY (goal_key, cursor), UNIQUE (goal_key, operation_id))`);
  const run = (script: string) =>
    `PGOPTIONS='-c search_path=${schema}' pgbench -n -M prepared -c 8 -j 2 -T 20 -D started=0 -f bench/pgbench/${script} "${URL}"`;
  process.stdout.write(`${run('raw-insert.sql')}\n${run('work-commit.sql')}\n`);
} finally {
  await db.close();
}
