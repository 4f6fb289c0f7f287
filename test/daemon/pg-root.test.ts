/**
 * A daemon serving a root whose Goal state lives in PostgreSQL: its Goals page reads them from the
 * database, and stopping the daemon ends its connections (its pools are closed, not left for the
 * process's exit). The daemon's connections are told apart by a role of their own.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startDaemon } from '../../src/daemon/server.js';
import { rootPostgres } from '../../src/owners/index.js';
import { openPostgres, type PgDatabase } from '../../src/store/index.js';
import { STATE_HOME, loopxAsync, loopxChild, tempRoot } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';

describePg('a daemon on a root on PostgreSQL', () => {
  const schema = pgSchemas()();
  const role = `loopx_daemon_${randomBytes(4).toString('hex')}`;
  const admin = openPostgres({ url: PG_URL, schema: 'public', max: 1 });
  const url = PG_URL.replace(/^postgres:\/\/[^@]*@/, `postgres://${role}@`);
  afterAll(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await admin.close();
  });
  const connections = async (): Promise<number> =>
    Number(
      (await admin.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1', [role]))[0]!.n,
    );

  it('serves its Goals from the database and ends its connections when it stops', async () => {
    const [{ d: dbName }] = (await admin.query<{ d: string }>('SELECT current_database() AS d')) as [{ d: string }];
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    await admin.query(`GRANT CREATE ON DATABASE "${dbName}" TO ${role}`);
    const env = { LX_DAEMON_PG: url };
    process.env.LX_DAEMON_PG = url;
    const root = tempRoot('loopx-daemon-pg-');
    const at = ['--root', root];
    expect(
      (
        await loopxAsync(
          ['init', ...at, '--store', 'postgresql', '--database-url', 'env:LX_DAEMON_PG', '--pg-schema', schema],
          env,
        )
      ).status,
    ).toBe(0);
    expect((await loopxAsync(['db', 'migrate', ...at], env)).status).toBe(0);
    expect((await loopxChild(['goal', 'create', 'launch', '--title', 'Launch', ...at], env)).status).toBe(0);
    expect((await loopxChild(['todo', 'add', '--goal', 'launch', '--title', 'write it', ...at], env)).status).toBe(0);
    expect(await connections()).toBe(0);

    let served!: PgDatabase;
    const d = await startDaemon({
      root,
      port: 0,
      logger: false,
      authorityDir: join(STATE_HOME, 'loopx', 'run-authority'),
    });
    try {
      const r = await fetch(`${d.url}api/goals`, { headers: { authorization: `Bearer ${d.token}` } });
      expect(r.status).toBe(200);
      const body = (await r.json()) as { goals: { goal_id: string; todos: Record<string, number> }[] };
      expect(body.goals.find((g) => g.goal_id === 'launch')).toBeDefined();
      served = rootPostgres(root)!; // the pool the daemon's requests used (one per URL and schema per process)
      expect(await connections(), 'the daemon reads the Goal from the database').toBeGreaterThan(0);
    } finally {
      await d.close();
    }
    // Its pool was ended by the shutdown (not left to idle out): it takes no more queries, and the root's next use opens another.
    await expect(served.query('SELECT 1')).rejects.toThrow();
    const reopened = rootPostgres(root)!;
    expect(reopened).not.toBe(served);
    await reopened.close();
    await expect.poll(connections, { timeout: 30_000 }).toBe(0);
  }, 120_000);
});
