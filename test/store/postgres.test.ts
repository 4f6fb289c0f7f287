/**
 * The PostgreSQL plumbing against the real server: migrations applied once and in order by the
 * migrator only, a provider refusing a schema it was not migrated to or one newer than it knows,
 * transactions that roll back whole, a COMMIT whose connection is terminated at the commit point
 * reported as ambiguous (never as applied or failed), the server's identity, and database URLs
 * by reference only.
 */
import { expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/index.js';
import {
  PgCommitAmbiguous,
  databaseUrlFrom,
  isRegisteredStoreProvider,
  migratePostgres,
  openPostgres,
  requireSchemaVersion,
  type PgMigration,
} from '../../src/store/index.js';
import { PG_URL, describePg, pgDatabases } from '../support/pg.js';

const database = pgDatabases();
const V1: PgMigration = { version: 1, sql: 'CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL)' };
const V2: PgMigration = { version: 2, sql: 'ALTER TABLE items ADD COLUMN note TEXT' };

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isLoopxError(e)) return e.code;
    throw e;
  }
  throw new Error('expected a refusal');
}

it('registers postgresql as a store provider', () => {
  expect(isRegisteredStoreProvider('postgresql')).toBe(true);
});

it('takes a database URL by reference only, read from the environment at run time', async () => {
  expect(databaseUrlFrom('env:DB', { DB: 'postgres://u@h/d' })).toBe('postgres://u@h/d');
  expect(await codeOf(Promise.resolve().then(() => databaseUrlFrom('postgres://u:secret@h/d', {})))).toBe(
    'database_url_ref_invalid',
  );
  expect(await codeOf(Promise.resolve().then(() => databaseUrlFrom('env:NOT_SET_ANYWHERE', {})))).toBe(
    'database_url_missing',
  );
  expect(await codeOf(Promise.resolve().then(() => openPostgres({ url: PG_URL, schema: 'Robert"); DROP' })))).toBe(
    'pg_schema_name_invalid',
  );
});

describePg('PostgreSQL plumbing on the real server', () => {
  it('migrates only when asked, once and in order; a provider refuses an unmigrated or a newer schema', async () => {
    const db = database();
    expect(await codeOf(requireSchemaVersion(db, 'probe', [V1]))).toBe('pg_schema_not_migrated');
    expect(await migratePostgres(db, 'probe', [V1])).toEqual({ from: 0, to: 1 });
    await requireSchemaVersion(db, 'probe', [V1]);
    expect(await codeOf(requireSchemaVersion(db, 'probe', [V1, V2]))).toBe('pg_schema_not_migrated');
    expect(await migratePostgres(db, 'probe', [V2, V1])).toEqual({ from: 1, to: 2 });
    expect(await migratePostgres(db, 'probe', [V1, V2])).toEqual({ from: 2, to: 2 });
    await db.query('INSERT INTO items (id, n, note) VALUES ($1, $2, $3)', ['a', 1, 'x']);
    // An older loopx meets a newer schema: it neither reads nor migrates it.
    expect(await codeOf(requireSchemaVersion(db, 'probe', [V1]))).toBe('pg_schema_version_unknown');
    expect(await codeOf(migratePostgres(db, 'probe', [V1]))).toBe('pg_schema_version_unknown');
  });

  it('two migrators at once apply each migration once', async () => {
    const a = database();
    const b = openPostgres({ url: PG_URL, schema: a.schema });
    try {
      const both = await Promise.all([migratePostgres(a, 'race', [V1, V2]), migratePostgres(b, 'race', [V1, V2])]);
      expect(both.map((r) => r.to)).toEqual([2, 2]);
      expect(both.map((r) => r.from).sort()).toEqual([0, 2]);
    } finally {
      await b.close();
    }
  });

  it('rolls a transaction back whole when its body rejects', async () => {
    const db = database();
    await migratePostgres(db, 'probe', [V1]);
    await expect(
      db.transaction(async (q) => {
        await q('INSERT INTO items (id, n) VALUES ($1, $2)', ['x', 1]);
        throw new Error('decided against it');
      }),
    ).rejects.toThrow('decided against it');
    expect(await db.query('SELECT * FROM items')).toEqual([]);
  });

  it('reports a COMMIT whose connection was terminated at the commit point as ambiguous', async () => {
    const db = database();
    await migratePostgres(db, 'probe', [V1]);
    const killer = openPostgres({ url: PG_URL, schema: db.schema, max: 1 });
    try {
      const outcome = await db
        .transaction(async (q) => {
          await q('INSERT INTO items (id, n) VALUES ($1, $2)', ['y', 1]);
          const [{ pid }] = (await q<{ pid: number }>('SELECT pg_backend_pid() AS pid')) as [{ pid: number }];
          // The body is done; the commit point comes next, on a connection the server has just ended.
          await killer.query('SELECT pg_terminate_backend($1)', [pid]);
        })
        .then(
          () => 'applied',
          (e: unknown) => (e instanceof PgCommitAmbiguous ? 'ambiguous' : `failed: ${String(e)}`),
        );
      expect(outcome).toBe('ambiguous');
      // The pool gave up the broken connection: the next statement works.
      expect(await db.query('SELECT count(*)::int AS n FROM items')).toEqual([{ n: 0 }]);
    } finally {
      await killer.close();
    }
  });

  it('an autocommit write answers its rows, is prepared under its name on its connection, and a refusal by the server is its error (not ambiguous)', async () => {
    const name = database().schema;
    const db = openPostgres({ url: PG_URL, schema: name, max: 1 });
    try {
      await migratePostgres(db, 'probe', [V1]);
      const insert = 'INSERT INTO items (id, n) VALUES ($1, $2) RETURNING id, n';
      expect(await db.autocommit(insert, ['a', 1], 'probe_insert')).toEqual([{ id: 'a', n: 1 }]);
      expect(await db.autocommit(insert, ['b', 2], 'probe_insert')).toEqual([{ id: 'b', n: 2 }]);
      expect(await db.autocommit(insert, ['c', 3])).toEqual([{ id: 'c', n: 3 }]);
      // One connection in the pool: the statement named once is prepared there.
      expect(await db.autocommit('SELECT name, statement FROM pg_prepared_statements', [])).toEqual([
        { name: 'probe_insert', statement: insert },
      ]);
      const refused = await db.autocommit(insert, ['a', 4], 'probe_insert').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).not.toBeInstanceOf(PgCommitAmbiguous);
      expect((refused as { code?: unknown }).code).toBe('23505');
      expect(await db.query('SELECT id, n FROM items ORDER BY id')).toEqual([
        { id: 'a', n: 1 },
        { id: 'b', n: 2 },
        { id: 'c', n: 3 },
      ]);
    } finally {
      await db.close();
    }
  });

  it('keeps startup options the URL carries beside the schema it adds', async () => {
    const name = database().schema; // a fresh schema name, dropped after the file
    const db = openPostgres({
      url: `${PG_URL}?options=${encodeURIComponent('-c statement_timeout=12345')}`,
      schema: name,
      max: 1,
    });
    try {
      await migratePostgres(db, 'probe', [V1]);
      await db.query('INSERT INTO items (id, n) VALUES ($1, $2)', ['z', 1]);
      expect(await db.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '12345ms' }]);
      expect(await db.query('SELECT id FROM items')).toEqual([{ id: 'z' }]);
    } finally {
      await db.close();
    }
  });

  it("reads the server's identity: system identifier, timeline, database", async () => {
    const id = await database().serverIdentity();
    expect(id.system_identifier).toMatch(/^\d+$/);
    expect(id.timeline).toBeGreaterThanOrEqual(1);
    expect(id.database_oid).toBeGreaterThan(0);
  });
});
