/**
 * The real PostgreSQL the tests use: the server on 127.0.0.1:5432 (`LOOPX_TEST_PG_URL` to name
 * another), a fresh schema per test file, dropped after it. Without a server the PostgreSQL tests
 * skip — except under CI=true, where a missing server fails them (.ci/run starts one).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, describe } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/store/index.js';

export const PG_URL = process.env.LOOPX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

function serverUp(): boolean {
  try {
    execFileSync('pg_isready', ['-q', '-d', PG_URL], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

export const PG_AVAILABLE = serverUp();
if (process.env.CI === 'true' && !PG_AVAILABLE)
  throw new Error(`CI=true but PostgreSQL does not answer at ${PG_URL} (.ci/run starts it)`);

/** `describe` when the server answers, `describe.skip` otherwise (never under CI=true: that throws above). */
export const describePg = PG_AVAILABLE ? describe : describe.skip;

/** A fresh schema name (`t_<hex>`) per call; every schema made here is dropped after the file's tests. */
export function pgSchemas(): () => string {
  const made: string[] = [];
  afterAll(async () => {
    if (made.length === 0 || !PG_AVAILABLE) return;
    const admin = openPostgres({ url: PG_URL, schema: 'public', max: 1 });
    try {
      for (const s of made) await admin.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    } finally {
      await admin.close();
    }
  });
  return () => {
    const s = `t_${randomBytes(6).toString('hex')}`;
    made.push(s);
    return s;
  };
}

/** A database handle on a fresh schema of the test server (closed after the file's tests). */
export function pgDatabases(): () => PgDatabase {
  const schema = pgSchemas();
  const open: PgDatabase[] = [];
  afterAll(async () => {
    for (const d of open) await d.close().catch(() => undefined);
  });
  return () => {
    const d = openPostgres({ url: PG_URL, schema: schema() });
    open.push(d);
    return d;
  };
}
