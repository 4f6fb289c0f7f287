/**
 * One Goal recovered from a verified backup into a new root whose Goal state lives in PostgreSQL,
 * through the real CLI: the plan names the schema and the URL only by reference; the apply makes
 * the root, records its store, migrates a schema that held no installation (so the new root starts
 * with an installation identity of its own), and adopts the Goal's work and effects there — no
 * SQLite store of Goal state is made in the destination; the unfinished Todo continues through
 * ordinary admission. A schema that already holds an installation is refused as a destination.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { migratePostgres, openPostgres } from '../../src/store/index.js';
import { loopxAsync } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';
import { okAsync, sourceWithBackup, type Source } from './support/adopt.js';

describePg('loopx recover into a root on PostgreSQL', () => {
  const schemas = pgSchemas();
  const schema = schemas();
  let sink: WebhookSink;
  let s: Source;
  const env = { LX_RECOVER_PG: PG_URL };

  beforeAll(async () => {
    process.env.LX_RECOVER_PG = PG_URL; // the CLI children inherit it; the URL itself is never an argument
    sink = await startWebhookSink({ port: 0 });
    s = await sourceWithBackup(sink);
  }, 240_000);
  afterAll(async () => {
    await sink.close();
  });
  /** `recover plan` of the source's Goal into `destination`, its Goal state in `pgSchema` of the test server (by reference). */
  const planInto = (destination: string, pgSchema: string) =>
    okAsync(s, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      destination,
      '--database-url',
      'env:LX_RECOVER_PG',
      '--pg-schema',
      pgSchema,
      '--root',
      s.root,
    ]);

  it('refuses a schema that already holds an installation, before adopting anything', async () => {
    const taken = schemas();
    const other = openPostgres({ url: PG_URL, schema: taken, max: 1 });
    try {
      await migratePostgres(other, 'loopx', []); // another root's installation lives there
    } finally {
      await other.close();
    }
    const destination = join(s.dir, 'occupied');
    const plan = await planInto(destination, taken);
    const r = await loopxAsync([
      'recover',
      'apply',
      '--destination',
      destination,
      '--confirm',
      plan.plan_digest,
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(r.status).toBe(4);
    expect(r.json().error.code).toBe('recover_destination_schema_occupied');
    expect(
      (
        await loopxAsync(['recover', 'status', '--destination', destination, '--authority-dir', s.authority, '--json'])
      ).json().receipts,
    ).toEqual([]);
  }, 120_000);

  it('adopts the Goal into a fresh schema and continues its work there', async () => {
    const destination = join(s.dir, 'on-postgres');
    const plan = await planInto(destination, schema);
    expect(plan.destination_store).toEqual({ provider: 'postgresql', database_url: 'env:LX_RECOVER_PG', schema });
    expect(JSON.stringify(plan)).not.toContain('postgres://');

    const st = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest]);
    expect(st.state, JSON.stringify(st.holds)).toBe('complete');
    // The Goal state is in the schema, not in files of the destination.
    for (const f of ['effects.db', 'sessions.db', 'quota.db']) expect(existsSync(join(destination, f)), f).toBe(false);
    expect(readdirSync(join(destination, 'goals', 'launch')).some((n) => n.endsWith('.db'))).toBe(false);
    const db = openPostgres({ url: PG_URL, schema, max: 1 });
    try {
      expect((await db.query<{ goal_id: string }>('SELECT goal_id FROM work_stores')).map((r) => r.goal_id)).toEqual([
        'launch',
      ]);
      expect(Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM effects'))[0]!.n)).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
    const status = await okAsync(s, ['db', 'status', '--root', destination]);
    expect(status.installation).toMatchObject({ state: 'active', restore_generation: 0 });
    expect(
      (await okAsync(s, ['todo', 'list', '--goal', 'launch', '--root', destination])).todos.map(
        (t: { status: string }) => t.status,
      ),
    ).toEqual(['done', 'blocked', 'open']);

    const r = await loopxAsync(
      [
        'work',
        'run',
        '--goal',
        'launch',
        '--agent',
        s.agents.cont,
        '--root',
        destination,
        '--authority-dir',
        s.authority,
        '--json',
      ],
      env,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.json().status).toBe('completed');
    expect(
      (await okAsync(s, ['todo', 'list', '--goal', 'launch', '--root', destination])).todos.find(
        (t: { todo_id: string }) => t.todo_id === 't3',
      ).status,
    ).toBe('done');
    expect(readFileSync(join(destination, 'machine', 'configuration.json'), 'utf8')).not.toContain('postgres://');
  }, 240_000);
});
