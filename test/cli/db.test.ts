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
import { startWebhookSink } from '../../src/dev/index.js';
import { REPO, loopxAsync, tempRoot, addLaunchTodos, todoStatuses } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';

const schema = pgSchemas();
// The URL the tests give by reference, with a password the root must never hold.
const SECRET_URL = PG_URL.replace('postgres://postgres@', 'postgres://postgres:not-a-real-password-7f3a@');

function everyFile(dir: string): string[] {
  return readdirSync(dir).flatMap((n) =>
    statSync(join(dir, n)).isDirectory() ? everyFile(join(dir, n)) : [join(dir, n)],
  );
}

it('refuses a store it does not know, or a URL given inline', async () => {
  const root = tempRoot('loopx-db-');
  expect((await loopxAsync(['init', '--root', root, '--store', 'mysql', '--json'])).json().error.code).toBe(
    'store_provider_unknown',
  );
  expect((await loopxAsync(['init', '--root', root, '--store', 'postgresql', '--json'])).json().error.code).toBe(
    'store_options_invalid',
  );
  const inline = await loopxAsync([
    'init',
    '--root',
    root,
    '--store',
    'postgresql',
    '--database-url',
    SECRET_URL,
    '--json',
  ]);
  expect(inline.json().error.code).toBe('database_url_ref_invalid');
  expect(inline.stdout + inline.stderr).not.toContain('not-a-real-password');
});

describePg('a root whose Goal state lives in PostgreSQL', () => {
  it('is initialised by reference, migrated when asked, and never holds the URL', async () => {
    const root = tempRoot('loopx-db-');
    const name = schema();
    const env = { LOOPX_TEST_DATABASE_URL: SECRET_URL };
    const missing = await loopxAsync([
      'init',
      '--root',
      root,
      '--store',
      'postgresql',
      '--database-url',
      'env:LOOPX_TEST_DATABASE_URL',
      '--pg-schema',
      name,
      '--json',
    ]);
    expect(missing.json().error).toMatchObject({
      code: 'database_url_missing',
      next_action: expect.stringContaining('export LOOPX_TEST_DATABASE_URL='),
    });

    const init = await loopxAsync(
      [
        'init',
        '--root',
        root,
        '--store',
        'postgresql',
        '--database-url',
        'env:LOOPX_TEST_DATABASE_URL',
        '--pg-schema',
        name,
        '--json',
      ],
      env,
    );
    expect(init.status, init.stderr).toBe(0);
    expect(init.json()).toEqual({
      initialized: true,
      store: { provider: 'postgresql', database_url: 'env:LOOPX_TEST_DATABASE_URL', schema: name },
    });
    // Again: the same answer. Another store for this root: refused.
    expect((await loopxAsync(['init', '--root', root, '--json'], env)).json().store).toEqual({
      provider: 'postgresql',
      database_url: 'env:LOOPX_TEST_DATABASE_URL',
      schema: name,
    });
    expect((await loopxAsync(['init', '--root', root, '--store', 'sqlite', '--json'], env)).json().error.code).toBe(
      'store_provider_change_refused',
    );

    const admin = openPostgres({ url: PG_URL, schema: 'public', max: 1 });
    try {
      const exists = async () =>
        (await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1', [name]))[0]!
          .n;
      expect(await exists(), 'init creates nothing in the database').toBe(0);
      const migrated = await loopxAsync(['db', 'migrate', '--root', root, '--json'], env);
      expect(migrated.status, migrated.stderr).toBe(0);
      expect(migrated.json()).toMatchObject({ provider: 'postgresql', schema: name });
      // Every owner with a PostgreSQL provider is a component; each is migrated once.
      expect(migrated.json().components).toContainEqual({ component: 'work', from: 0, to: 3 });
      expect(migrated.json().components).toContainEqual({ component: 'effect', from: 0, to: 1 });
      expect(migrated.json().components).toContainEqual({ component: 'quota', from: 0, to: 1 });
      expect(migrated.json().components).toContainEqual({ component: 'session', from: 0, to: 1 });
      expect(migrated.json().components).toContainEqual({ component: 'scheduler', from: 0, to: 1 });
      const again = (await loopxAsync(['db', 'migrate', '--root', root, '--json'], env)).json();
      expect(again.components).toContainEqual({ component: 'effect', from: 1, to: 1 });
      expect(again.components).toContainEqual({ component: 'quota', from: 1, to: 1 });
      expect(again.components).toContainEqual({ component: 'session', from: 1, to: 1 });
      expect(await exists()).toBe(1);
      expect(
        (await loopxAsync(['db', 'migrate', '--root', root, '--json'])).json().error.code,
        'the URL is read at run time, every time',
      ).toBe('database_url_missing');
    } finally {
      await admin.close();
    }
    for (const f of everyFile(root)) expect(readFileSync(f).includes('not-a-real-password'), f).toBe(false);
  });

  it('does its Goal work in PostgreSQL: Goals, Todos and a work run, with no SQLite store of Goal state in the root', async () => {
    const root = tempRoot('loopx-db-work-');
    const name = schema();
    const env = { LOOPX_TEST_DATABASE_URL: PG_URL };
    const at = ['--root', root, '--json'];
    expect(
      (
        await loopxAsync(
          [
            'init',
            '--store',
            'postgresql',
            '--database-url',
            'env:LOOPX_TEST_DATABASE_URL',
            '--pg-schema',
            name,
            ...at,
          ],
          env,
        )
      ).status,
    ).toBe(0);
    // Not migrated yet: refused with the one thing to do.
    expect((await loopxAsync(['goal', 'create', 'g', '--title', 'T', ...at], env)).json().error).toMatchObject({
      code: 'pg_schema_not_migrated',
      next_action: expect.stringContaining('loopx db migrate'),
    });
    expect(
      everyFile(root).some((f) => f.includes(join('goals', 'g'))),
      'no half-made Goal',
    ).toBe(false);
    expect((await loopxAsync(['db', 'migrate', ...at], env)).status).toBe(0);

    const created = await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at], env);
    expect(created.status, created.stderr).toBe(0);
    await addLaunchTodos(at, env);
    // The scripted worker completes t1, delivers one webhook and blocks t2.
    const sink = await startWebhookSink({ port: 0 });
    const run = await loopxAsync(
      [
        'work',
        'run',
        '--goal',
        'launch',
        '--agent',
        join(REPO, 'examples/agents/goal-worker.json'),
        '--sink',
        sink.deliveriesUrl,
        ...at,
      ],
      env,
    ).finally(() => sink.close());
    expect(run.status, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ status: 'completed', failure: null });
    expect(sink.deliveries()).toHaveLength(1);

    expect(await todoStatuses('launch', at, env)).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'open'],
    ]);
    const shown = (await loopxAsync(['goal', 'show', 'launch', ...at], env)).json();
    expect(shown).toMatchObject({ goal_id: 'launch', todos: { open: 1, done: 1, blocked: 1, deferred: 0 } });

    // The Goal's files are in the root; its work, sessions, effects and quota are not SQLite files
    // there (engine.db, the engine's own run store, is not Goal state).
    const files = everyFile(root).map((f) => f.slice(root.length + 1));
    expect(files).toContain(join('goals', 'launch', 'goal.json'));
    expect(files.filter((f) => f.endsWith('.db'))).toEqual(['engine.db']);
    for (const f of [join('goals', 'launch', 'work.db'), 'sessions.db', 'effects.db', 'quota.db'])
      expect(files).not.toContain(f);
    // They are rows of the root's schema.
    const db = openPostgres({ url: PG_URL, schema: name, max: 1 });
    try {
      const count = async (table: string) =>
        (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;
      expect(await count('work_stores')).toBe(1);
      expect(await count('work_commits')).toBeGreaterThan(3);
      expect(await count('effects'), 'the webhook and the Todo updates').toBeGreaterThan(0);
      expect(await count('sessions')).toBe(1);
      expect(await count('spends')).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
    // Its files are not all its state: a backup plans its owners' capture from the database
    // (test/cli/backup-postgres.test.ts), and the legacy manifest, which could not hold it, is refused.
    expect((await loopxAsync(['backup-state', ...at], env)).json()).toMatchObject({
      dry_run: true,
      counts: { goals: 1 },
    });
    expect((await loopxAsync(['backup-state', '--execute', '--format', 'v0', ...at], env)).json().error.code).toBe(
      'store_provider_unsupported',
    );
    // The URL is read at run time: without its variable, the Goal's work is refused typed.
    expect((await loopxAsync(['todo', 'list', '--goal', 'launch', ...at])).json().error.code).toBe(
      'database_url_missing',
    );
  }, 120_000);

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
      const installs = roles.map((role) => ({
        role,
        root: tempRoot('loopx-db-tenant-'),
        schema: schema(),
        env: { LOOPX_TEST_DATABASE_URL: urlAs(role) },
      }));
      for (const i of installs) {
        const init = await loopxAsync(
          [
            'init',
            '--root',
            i.root,
            '--store',
            'postgresql',
            '--database-url',
            'env:LOOPX_TEST_DATABASE_URL',
            '--pg-schema',
            i.schema,
            '--json',
          ],
          i.env,
        );
        expect(init.status, init.stderr).toBe(0);
        const migrated = await loopxAsync(['db', 'migrate', '--root', i.root, '--json'], i.env);
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
      expect(
        (
          await loopxAsync(
            [
              'init',
              '--root',
              intruder,
              '--store',
              'postgresql',
              '--database-url',
              'env:LOOPX_TEST_DATABASE_URL',
              '--pg-schema',
              a.schema,
              '--json',
            ],
            b.env,
          )
        ).status,
      ).toBe(0);
      const taken = await loopxAsync(['db', 'migrate', '--root', intruder, '--json'], b.env);
      expect(taken.json().error.code).toBe('pg_permission_denied');
      expect(taken.stdout + taken.stderr).not.toContain('postgres://');
      // A role the server does not know, and a server that does not answer: typed, and the URL never shown.
      const stranger = await loopxAsync(['db', 'migrate', '--root', a.root, '--json'], {
        LOOPX_TEST_DATABASE_URL: urlAs(`nobody_${tag}`),
      });
      expect(stranger.json().error.code).toBe('pg_auth_failed');
      const away = await loopxAsync(['db', 'migrate', '--root', a.root, '--json'], {
        LOOPX_TEST_DATABASE_URL: 'postgres://postgres:not-a-real-password-7f3a@127.0.0.1:1/test',
      });
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
