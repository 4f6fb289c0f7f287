/**
 * Choosing where a root's Goal state lives, against the real PostgreSQL: `loopx init --store
 * postgresql --database-url env:NAME` records the provider, the URL's *reference* and a schema —
 * never the URL (nor its password) — and `loopx db migrate` creates that schema when asked. A
 * reference that does not resolve, a bad option and a switch of an existing root's store are
 * refused, changing nothing.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openPostgres } from '../../src/store/index.js';
import { loopx, tempRoot } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';

const schema = pgSchemas();
// The URL the tests give by reference, with a password the root must never hold.
const SECRET_URL = PG_URL.replace('postgres://postgres@', 'postgres://postgres:not-a-real-password-7f3a@');

function everyFile(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? everyFile(join(dir, n)) : [join(dir, n)]));
}

it('refuses a store it does not know, or a URL given inline', () => {
  const root = tempRoot('loopx-db-');
  expect(loopx(['init', '--root', root, '--store', 'mysql', '--json']).json().error.code).toBe('store_provider_unknown');
  expect(loopx(['init', '--root', root, '--store', 'postgresql', '--json']).json().error.code).toBe('store_options_invalid');
  const inline = loopx(['init', '--root', root, '--store', 'postgresql', '--database-url', SECRET_URL, '--json']);
  expect(inline.json().error.code).toBe('database_url_ref_invalid');
  expect(inline.stdout + inline.stderr).not.toContain('not-a-real-password');
});

describePg('a root whose Goal state lives in PostgreSQL', () => {
  it('is initialised by reference, migrated when asked, and never holds the URL', async () => {
    const root = tempRoot('loopx-db-');
    const name = schema();
    const env = { LOOPX_TEST_DATABASE_URL: SECRET_URL };
    const missing = loopx(['init', '--root', root, '--store', 'postgresql', '--database-url', 'env:LOOPX_TEST_DATABASE_URL', '--pg-schema', name, '--json']);
    expect(missing.json().error).toMatchObject({ code: 'database_url_missing', next_action: expect.stringContaining('export LOOPX_TEST_DATABASE_URL=') });

    const init = loopx(['init', '--root', root, '--store', 'postgresql', '--database-url', 'env:LOOPX_TEST_DATABASE_URL', '--pg-schema', name, '--json'], env);
    expect(init.status, init.stderr).toBe(0);
    expect(init.json()).toEqual({ initialized: true, store: { provider: 'postgresql', database_url: 'env:LOOPX_TEST_DATABASE_URL', schema: name } });
    // Again: the same answer. Another store for this root: refused.
    expect(loopx(['init', '--root', root, '--json'], env).json().store).toEqual({ provider: 'postgresql', database_url: 'env:LOOPX_TEST_DATABASE_URL', schema: name });
    expect(loopx(['init', '--root', root, '--store', 'sqlite', '--json'], env).json().error.code).toBe('store_provider_change_refused');

    const admin = openPostgres({ url: PG_URL, schema: 'public', max: 1 });
    try {
      const exists = async () => (await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1', [name]))[0]!.n;
      expect(await exists(), 'init creates nothing in the database').toBe(0);
      const migrated = loopx(['db', 'migrate', '--root', root, '--json'], env);
      expect(migrated.status, migrated.stderr).toBe(0);
      expect(migrated.json()).toMatchObject({ provider: 'postgresql', schema: name });
      // Every owner with a PostgreSQL provider is a component; each is migrated once.
      expect(migrated.json().components).toContainEqual({ component: 'work', from: 0, to: 1 });
      expect(migrated.json().components).toContainEqual({ component: 'effect', from: 0, to: 1 });
      expect(migrated.json().components).toContainEqual({ component: 'quota', from: 0, to: 1 });
      expect(migrated.json().components).toContainEqual({ component: 'session', from: 0, to: 1 });
      expect(migrated.json().components).toContainEqual({ component: 'scheduler', from: 0, to: 1 });
      const again = loopx(['db', 'migrate', '--root', root, '--json'], env).json();
      expect(again.components).toContainEqual({ component: 'effect', from: 1, to: 1 });
      expect(again.components).toContainEqual({ component: 'quota', from: 1, to: 1 });
      expect(again.components).toContainEqual({ component: 'session', from: 1, to: 1 });
      expect(await exists()).toBe(1);
      expect(loopx(['db', 'migrate', '--root', root, '--json']).json().error.code, 'the URL is read at run time, every time').toBe('database_url_missing');
    } finally {
      await admin.close();
    }
    for (const f of everyFile(root)) expect(readFileSync(f).includes('not-a-real-password'), f).toBe(false);
    // Its Goal state is in PostgreSQL: no Goal work is split into the root's SQLite stores meanwhile.
    const before = everyFile(root).sort();
    const created = loopx(['goal', 'create', 'g', '--title', 'T', '--root', root, '--json'], env);
    expect(created.json().error.code).toBe('store_not_openable');
    expect(everyFile(root).sort()).toEqual(before);
  });

  it('keeps installations apart: each in its own schema under its own role, which cannot read the other', async () => {
    const admin = openPostgres({ url: PG_URL, schema: 'public', max: 1 });
    const tag = randomBytes(4).toString('hex');
    const roles = [`loopx_a_${tag}`, `loopx_b_${tag}`];
    const [dbName] = (await admin.query<{ d: string }>('SELECT current_database() AS d')).map((r) => r.d);
    const urlAs = (role: string) => PG_URL.replace(/^postgres:\/\/[^@]*@/, `postgres://${role}@`);
    try {
      for (const r of roles) {
        await admin.query(`CREATE ROLE ${r} LOGIN`);
        await admin.query(`GRANT CREATE ON DATABASE "${dbName}" TO ${r}`);
      }
      const installs = roles.map((role) => ({ role, root: tempRoot('loopx-db-tenant-'), schema: schema(), env: { LOOPX_TEST_DATABASE_URL: urlAs(role) } }));
      for (const i of installs) {
        const init = loopx(['init', '--root', i.root, '--store', 'postgresql', '--database-url', 'env:LOOPX_TEST_DATABASE_URL', '--pg-schema', i.schema, '--json'], i.env);
        expect(init.status, init.stderr).toBe(0);
        const migrated = loopx(['db', 'migrate', '--root', i.root, '--json'], i.env);
        expect(migrated.status, migrated.stderr).toBe(0);
      }
      const [a, b] = installs as [(typeof installs)[0], (typeof installs)[0]];
      const asB = openPostgres({ url: urlAs(b.role), schema: b.schema, max: 1 });
      try {
        const refused = await asB.query(`SELECT * FROM "${a.schema}".loopx_schema_versions`).then(
          () => 'read',
          (e: { code?: string }) => e.code,
        );
        expect(refused, "B reading A's schema").toBe('42501'); // insufficient_privilege
      } finally {
        await asB.close();
      }
      // B cannot take over A's schema by naming it either: its migrate is refused, A's tables untouched.
      const intruder = tempRoot('loopx-db-tenant-');
      expect(loopx(['init', '--root', intruder, '--store', 'postgresql', '--database-url', 'env:LOOPX_TEST_DATABASE_URL', '--pg-schema', a.schema, '--json'], b.env).status).toBe(
        0,
      );
      const taken = loopx(['db', 'migrate', '--root', intruder, '--json'], b.env);
      expect(taken.json().error.code).toBe('pg_permission_denied');
      expect(taken.stdout + taken.stderr).not.toContain('postgres://');
      // A role the server does not know, and a server that does not answer: typed, and the URL never shown.
      const stranger = loopx(['db', 'migrate', '--root', a.root, '--json'], { LOOPX_TEST_DATABASE_URL: urlAs(`nobody_${tag}`) });
      expect(stranger.json().error.code).toBe('pg_auth_failed');
      const away = loopx(['db', 'migrate', '--root', a.root, '--json'], { LOOPX_TEST_DATABASE_URL: 'postgres://postgres:not-a-real-password-7f3a@127.0.0.1:1/test' });
      expect(away.json().error.code).toBe('pg_unreachable');
      expect(away.stdout + away.stderr).not.toContain('not-a-real-password');
    } finally {
      for (const r of roles) {
        await admin.query(`DROP OWNED BY ${r} CASCADE`).catch(() => undefined);
        await admin.query(`DROP ROLE IF EXISTS ${r}`).catch(() => undefined);
      }
      await admin.close();
    }
  });
});
