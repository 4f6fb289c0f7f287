/**
 * One Goal's canonical work in PostgreSQL while its root stays on SQLite, chosen per Goal at
 * `loopx goal create --work-provider postgresql --database-url env:NAME`, against the real
 * PostgreSQL: the choice is recorded by reference (never the URL), `loopx db migrate` migrates the
 * Goal's schema, the Goal's Todos and a work run live in that schema and in no work.db, another
 * Goal of the root stays on SQLite, the Goal's provider never changes, and a backup of the root
 * without the Goal's database variable is refused rather than silently missing that Goal. The
 * option shapes are refused as usage errors.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect, it } from 'vitest';
import { openPostgres } from '../../src/store/index.js';
import { startWebhookSink } from '../../src/dev/index.js';
import { REPO, loopxAsync, tempRoot, addLaunchTodos, todoStatuses } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';

const schema = pgSchemas();
// The URL the tests give by reference, with a password the root must never hold (trust auth ignores it).
const SECRET_URL = PG_URL.replace('postgres://postgres@', 'postgres://postgres:not-a-real-password-9c1e@');
const REF = 'env:LOOPX_TEST_WORK_URL';
const env = { LOOPX_TEST_WORK_URL: SECRET_URL };

// The documents this file prints that the json-schemas journey does not (a Goal's own schema in db migrate).
const ajv = new Ajv2020({ strict: true, allErrors: true });
const SCHEMA_DIR = join(REPO, 'docs/schemas');
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as object);
function expectValid(id: string, doc: unknown): void {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${id}.json`)!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
}

function everyFile(dir: string): string[] {
  return readdirSync(dir).flatMap((n) =>
    statSync(join(dir, n)).isDirectory() ? everyFile(join(dir, n)) : [join(dir, n)],
  );
}

it('refuses PostgreSQL options without --work-provider postgresql, and a provider it does not know', async () => {
  const root = tempRoot('loopx-workprov-');
  const at = ['--root', root, '--json'];
  expect((await loopxAsync(['init', ...at])).status).toBe(0);
  for (const extra of [
    ['--database-url', REF],
    ['--pg-schema', 'loopx_x'],
    ['--work-provider', 'sqlite', '--database-url', REF],
  ]) {
    const r = await loopxAsync(['goal', 'create', 'g', '--title', 'T', ...extra, ...at], env);
    expect(r.status, extra.join(' ')).toBe(2);
    expect(r.json().error.code).toBe('store_options_invalid');
  }
  expect(
    (await loopxAsync(['goal', 'create', 'g', '--title', 'T', '--work-provider', 'mysql', ...at])).json().error.code,
  ).toBe('store_provider_unknown');
  // On a root on SQLite there is no URL to default to.
  const noUrl = await loopxAsync(['goal', 'create', 'g', '--title', 'T', '--work-provider', 'postgresql', ...at], env);
  expect(noUrl.status).toBe(2);
  expect(noUrl.json().error.code).toBe('database_url_required');
  // A reference whose variable is not set: refused before anything is recorded.
  expect(
    (
      await loopxAsync([
        'goal',
        'create',
        'g',
        '--title',
        'T',
        '--work-provider',
        'postgresql',
        '--database-url',
        REF,
        ...at,
      ])
    ).json().error.code,
  ).toBe('database_url_missing');
  expect((await loopxAsync(['goal', 'list', ...at])).json().goals).toEqual([]);
  expect(
    everyFile(root).some((f) => f.includes(join('goals', 'g'))),
    'nothing of the Goal was made',
  ).toBe(false);
});

describePg('a Goal whose work lives in PostgreSQL, in a root on SQLite', () => {
  it('keeps its Todos and a work run in its schema, migrated by db migrate; the root holds no URL and another Goal stays on SQLite', async () => {
    const root = tempRoot('loopx-workprov-');
    const name = schema();
    const at = ['--root', root, '--json'];
    expect((await loopxAsync(['init', ...at])).status).toBe(0);
    const create = [
      'goal',
      'create',
      'launch',
      '--title',
      'Ship the launch post',
      '--work-provider',
      'postgresql',
      '--database-url',
      REF,
      '--pg-schema',
      name,
      ...at,
    ];

    // The schema is not migrated: refused with the one thing to do, and no Goal is made…
    expect((await loopxAsync(create, env)).json().error).toMatchObject({
      code: 'pg_schema_not_migrated',
      next_action: expect.stringContaining('loopx db migrate'),
    });
    expect((await loopxAsync(['goal', 'list', ...at])).json().goals).toEqual([]);
    // …but the choice is kept, so db migrate migrates the Goal's schema (the root itself has none).
    const migrated = await loopxAsync(['db', 'migrate', ...at], env);
    expect(migrated.status, migrated.stderr).toBe(0);
    expectValid('db-migrate', migrated.json());
    expect(migrated.json()).toEqual({
      provider: 'sqlite',
      schema: null,
      components: [],
      goal_work_schemas: [
        { database_url: REF, schema: name, goals: ['launch'], components: [{ component: 'work', from: 0, to: 3 }] },
      ],
    });
    expect((await loopxAsync(['db', 'migrate', ...at], env)).json().goal_work_schemas[0].components).toEqual([
      { component: 'work', from: 3, to: 3 },
    ]);

    const created = await loopxAsync(create, env);
    expect(created.status, created.stderr).toBe(0);
    const other = await loopxAsync(['goal', 'create', 'notes', '--title', 'Keep notes', ...at], env);
    expect(other.status, other.stderr).toBe(0);
    await addLaunchTodos(at, env);
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'notes', '--title', 'Write one', '--id', 'n1', ...at], env)).status,
    ).toBe(0);

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
    expect(await todoStatuses('launch', at, env)).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'open'],
    ]);
    const shown = (await loopxAsync(['goal', 'show', 'launch', ...at], env)).json();
    expectValid('goal-show', shown);
    expect(shown).toMatchObject({ todos: { open: 1, done: 1, blocked: 1 }, work_provider: 'postgresql' });
    expect((await loopxAsync(['goal', 'show', 'notes', ...at], env)).json()).toMatchObject({
      todos: { open: 1 },
      work_provider: 'sqlite',
    });

    // The Goal's work is rows of its schema, and in no work.db; the other Goal's is its work.db.
    const files = everyFile(root).map((f) => f.slice(root.length + 1));
    expect(files).not.toContain(join('goals', 'launch', 'work.db'));
    expect(files).toContain(join('goals', 'notes', 'work.db'));
    const db = openPostgres({ url: PG_URL, schema: name, max: 1 });
    try {
      const stores = await db.query<{ goal_id: string; n: number }>(
        'SELECT s.goal_id, (SELECT count(*)::int FROM work_commits c WHERE c.goal_key = s.goal_key) AS n FROM work_stores s',
      );
      expect(stores.map((s) => s.goal_id)).toEqual(['launch']);
      expect(stores[0]!.n, 'three adds and the run’s updates').toBeGreaterThan(3);
      // The root's other owners stay where the root keeps them: no session or effect tables here.
      const tables = await db.query<{ t: string }>(
        'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1',
        [name],
      );
      expect(tables.map((r) => r.t)).not.toContain('sessions');
    } finally {
      await db.close();
    }

    // Without its variable the Goal's work is refused, typed; the SQLite Goal does not need it.
    expect((await loopxAsync(['todo', 'list', '--goal', 'launch', ...at])).json().error.code).toBe(
      'database_url_missing',
    );
    expect((await loopxAsync(['todo', 'list', '--goal', 'notes', ...at])).status).toBe(0);
    // A backup reads the Goal's work from its schema (test/cli/backup-goal-work-apart.test.ts): without the variable it is refused, typed, and nothing is published.
    const backup = await loopxAsync(['backup-state', '--execute', ...at]);
    expect(backup.json().error.code).toBe('database_url_missing');
    expect(
      existsSync(join(root, 'backups')) ? readdirSync(join(root, 'backups')).filter((f) => !f.startsWith('.')) : [],
    ).toEqual([]);

    // The Goal's provider never changes, not even for a new lifetime of its id.
    expect((await loopxAsync(['goal', 'retire', 'launch', ...at], env)).status).toBe(0);
    expect(
      (
        await loopxAsync(['goal', 'create', 'launch', '--title', 'Again', '--work-provider', 'sqlite', ...at], env)
      ).json().error.code,
    ).toBe('work_provider_change_refused');
    expect(
      (
        await loopxAsync(
          [
            'goal',
            'create',
            'notes',
            '--title',
            'Moved',
            '--work-provider',
            'postgresql',
            '--database-url',
            REF,
            ...at,
          ],
          env,
        )
      ).json().error.code,
    ).toBe('work_provider_change_refused');
    const again = await loopxAsync(['goal', 'create', 'launch', '--title', 'Again', ...at], env);
    expect(again.status, again.stderr).toBe(0);
    expect((await loopxAsync(['goal', 'show', 'launch', ...at], env)).json().work_provider).toBe('postgresql');

    // No file of the root holds the URL or its password; the reference is all it keeps.
    for (const f of everyFile(root)) {
      const bytes = readFileSync(f);
      expect(bytes.includes('not-a-real-password'), f).toBe(false);
      expect(bytes.includes(PG_URL), f).toBe(false);
    }
    expect(files.some((f) => readFileSync(join(root, f)).includes(REF))).toBe(true);
  }, 120_000);

  it('keeps a Goal of a root on PostgreSQL in its own work.db with --work-provider sqlite, or in a schema of its own', async () => {
    const root = tempRoot('loopx-workprov-pg-');
    const name = schema();
    const at = ['--root', root, '--json'];
    expect(
      (await loopxAsync(['init', '--store', 'postgresql', '--database-url', REF, '--pg-schema', name, ...at], env))
        .status,
    ).toBe(0);
    expect((await loopxAsync(['db', 'migrate', ...at], env)).status).toBe(0);
    const created = await loopxAsync(
      ['goal', 'create', 'local', '--title', 'Local work', '--work-provider', 'sqlite', ...at],
      env,
    );
    expect(created.status, created.stderr).toBe(0);
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'local', '--title', 'One', '--id', 't1', ...at], env)).status,
    ).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'shared', '--title', 'In the database', ...at], env)).status).toBe(0);
    expect((await loopxAsync(['goal', 'show', 'local', ...at], env)).json()).toMatchObject({
      todos: { open: 1 },
      work_provider: 'sqlite',
    });
    expect((await loopxAsync(['goal', 'show', 'shared', ...at], env)).json().work_provider).toBe('postgresql');
    const files = everyFile(root).map((f) => f.slice(root.length + 1));
    expect(files).toContain(join('goals', 'local', 'work.db'));
    expect(files).not.toContain(join('goals', 'shared', 'work.db'));

    // A schema of its own, on the root's URL reference: migrated with the root's by db migrate.
    const own = schema();
    const apart = [
      'goal',
      'create',
      'apart',
      '--title',
      'Its own schema',
      '--work-provider',
      'postgresql',
      '--pg-schema',
      own,
      ...at,
    ];
    expect((await loopxAsync(apart, env)).json().error.code).toBe('pg_schema_not_migrated');
    const migrated = (await loopxAsync(['db', 'migrate', ...at], env)).json();
    expect(migrated).toMatchObject({
      provider: 'postgresql',
      schema: name,
      goal_work_schemas: [{ database_url: REF, schema: own, goals: ['apart'] }],
    });
    expect(migrated.components).toContainEqual({ component: 'work', from: 3, to: 3 });
    expect(migrated.goal_work_schemas[0].components).toEqual([{ component: 'work', from: 0, to: 3 }]);
    expect((await loopxAsync(apart, env)).status).toBe(0);
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'apart', '--title', 'One', '--id', 't1', ...at], env)).status,
    ).toBe(0);
    const db = openPostgres({ url: PG_URL, schema: own, max: 1 });
    try {
      expect((await db.query<{ goal_id: string }>('SELECT goal_id FROM work_stores')).map((r) => r.goal_id)).toEqual([
        'apart',
      ]);
    } finally {
      await db.close();
    }
  }, 120_000);
});
