/**
 * A root's PostgreSQL server restored physically, on servers the test starts: a base backup
 * (`pg_basebackup`) started as it is on another port — the same system identifier, database and
 * table, on the same timeline — and the same backup replayed from the WAL archive to a chosen LSN
 * and promoted (a new timeline). Each is recognised as a restored copy by the server's own facts,
 * refuses every write until `db rotate`, and the rotation's preview counts what the copy lacks
 * against the original (or says it cannot). After the rotation every receipt up to the restore
 * point reads back exactly — the same cursor, the same Todo — and a write past it, which the copy
 * never held, applies once.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { openGoalWork } from '../../src/owners/work/index.js';
import type { WorkTransaction } from '../../src/owners/work/index.js';
import { loopxChild, tempRoot } from '../support/cli.js';
import { expectSchemaValid as valid } from '../support/pg-restore.js';
import { PgServer, canRunServers } from '../support/pg-servers.js';

// Skipped only where no PostgreSQL server binaries (or no `postgres` user) exist; under CI=true that fails instead.
if (process.env.CI === 'true' && !canRunServers())
  throw new Error('CI=true but this machine cannot start PostgreSQL servers of its own');

const SCHEMA = 'loopx_main';

/** A write's JSON answer, through a process of its own. */
async function write(args: readonly string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  const r = await loopxChild([...args, '--json'], env);
  expect(r.status, `${args.join(' ')}\n${r.stderr}`).toBe(0);
  return r.json();
}

(canRunServers() ? describe : describe.skip)('a physical restore of a root’s server', () => {
  let primary: PgServer;
  let root: string;
  let asIs: string;
  let forRecovery: string;
  let restoreLsn: string;
  const env: Record<string, string> = {};
  /** What each operation answered on the original, by operation id, up to the restore point and after it. */
  const before = new Map<string, { args: string[]; answer: Record<string, unknown> }>();
  const after = new Map<string, { args: string[]; answer: Record<string, unknown> }>();
  const history: WorkTransaction[] = [];

  const at = (): string[] => ['--root', root];
  const recordAs = async (into: typeof before, id: string, args: string[]) =>
    into.set(id, { args, answer: await write([...args, '--operation-id', id, ...at()], env) });

  beforeAll(async () => {
    primary = await PgServer.fresh({ archive: true });
    env.LX_PR_A = primary.url();
    root = tempRoot('loopx-pg-physical-');
    await write(
      ['init', '--store', 'postgresql', '--database-url', 'env:LX_PR_A', '--pg-schema', SCHEMA, ...at()],
      env,
    );
    await write(['db', 'migrate', ...at()], env);
    await write(['goal', 'create', 'g1', '--title', 'restored goal', ...at()], env);
    await recordAs(before, 'op-1', ['todo', 'add', '--goal', 'g1', '--title', 'before the base backup']);
    asIs = primary.baseBackup();
    forRecovery = primary.baseBackup();
    await recordAs(before, 'op-2', ['todo', 'add', '--goal', 'g1', '--title', 'after the base backup']);
    await recordAs(before, 'op-3', ['todo', 'update', 't1', '--goal', 'g1', '--status', 'done']);
    restoreLsn = primary.sql('SELECT pg_current_wal_lsn()');
    await recordAs(after, 'op-4', ['todo', 'add', '--goal', 'g1', '--title', 'past the restore point']);
    await recordAs(after, 'op-5', ['todo', 'update', 't2', '--goal', 'g1', '--status', 'done']);
    await primary.archiveNow();
    Object.assign(process.env, env);
    const work = await openGoalWork({ root, goal_id: 'g1' });
    try {
      for await (const t of work.iterateHistory()) history.push(t);
    } finally {
      work.close();
    }
  }, 180_000);

  it('a base backup started as it is, on another port, is a restored copy: the original alone admits writes', async () => {
    const copy = await PgServer.fromBackup(asIs);
    // Nothing of the recorded server a physical copy could tell apart but the port it listens on.
    expect(copy.sql('SELECT system_identifier FROM pg_control_system()')).toBe(
      primary.sql('SELECT system_identifier FROM pg_control_system()'),
    );
    const onCopy = { ...env, LX_PR_A: copy.url() };
    const refused = await loopxChild(
      ['todo', 'add', '--goal', 'g1', '--title', 'on the copy', ...at(), '--json'],
      onCopy,
    );
    expect(refused.status, refused.stdout).toBe(3);
    expect(refused.json().error.code).toBe('store_restored_pending_rotation');
    const status = await loopxChild(['db', 'status', ...at(), '--json'], onCopy);
    valid('db-status.schema.json', status.json());
    expect(status.json().installation).toMatchObject({
      state: 'restored_pending_rotation',
      recorded_state: 'active',
      changed: ['server_port'],
      recorded_server: { port: primary.port },
      live_server: { port: copy.port },
    });
    // A session claiming the original's facts (the setting an earlier version kept per connection) changes nothing.
    const identity = (status.json().installation as { store_identity: string }).store_identity;
    expect(() =>
      copy.sql(
        `SET search_path = ${SCHEMA}; SELECT set_config('loopx.live_server', pg_backend_pid()::text || ':' || (SELECT system_identifier FROM pg_control_system())::text
           || ':1:' || (SELECT oid FROM pg_database WHERE datname = current_database())::text, false);
         SELECT loopx_admit('${identity}', 0)`,
      ),
    ).toThrow(/restored, pending rotation/);
    // The original keeps its writers.
    await write(['todo', 'add', '--goal', 'g1', '--title', 'on the original, beside the copy', ...at()], env);
    copy.stop();
  }, 120_000);

  it('a point-in-time restore is a restored copy; rotating it counts what it lacks, and every receipt up to the point reads back', async () => {
    const pitr = await PgServer.fromBackup(forRecovery, { recovery: { archiveOf: primary, lsn: restoreLsn } });
    await pitr.until('SELECT pg_is_in_recovery()', 'f');
    expect(Number(pitr.sql('SELECT timeline_id FROM pg_control_checkpoint()'))).toBeGreaterThan(1);
    env.LX_PR_B = pitr.url();
    const onCopy = { ...env, LX_PR_A: pitr.url() };
    const refused = await loopxChild(
      ['todo', 'add', '--goal', 'g1', '--title', 'too early', ...at(), '--json'],
      onCopy,
    );
    expect(refused.json().error.code).toBe('store_restored_pending_rotation');
    const status = (await loopxChild(['db', 'status', ...at(), '--json'], onCopy)).json();
    expect(status.installation.changed).toEqual(expect.arrayContaining(['timeline', 'server_port']));

    // The original out of reach: the preview says the later writes cannot be counted.
    const blind = await loopxChild(['db', 'rotate', '--database-url', 'env:LX_PR_B', ...at(), '--json'], {
      ...env,
      LX_PR_A: 'postgres://postgres@127.0.0.1:1/postgres',
    });
    expect(blind.status, blind.stderr).toBe(0);
    expect(blind.json().later_writes).toEqual({ original: 'unreachable', count: null, goals: [] });

    // Reachable: the original's head is past the copy's by the writes after the restore point (and the one beside the copy).
    const plan = (await loopxChild(['db', 'rotate', '--database-url', 'env:LX_PR_B', ...at(), '--json'], env)).json();
    valid('db-rotation-plan.schema.json', plan);
    expect(plan.restore_detected).toBe(true);
    expect(plan.later_writes).toMatchObject({ original: 'compared', count: 3 });
    const copied = history.find((t) => t.operation_id.endsWith('op-3'))!.cursor;
    expect(plan.copy_heads).toEqual([{ goal_id: 'g1', cursor: copied }]);
    const rotated = await loopxChild(
      [
        'db',
        'rotate',
        '--database-url',
        'env:LX_PR_B',
        '--confirm',
        plan.digest,
        '--abandon-later-writes',
        '3',
        ...at(),
        '--json',
      ],
      env,
    );
    expect(rotated.status, rotated.stderr).toBe(0);
    expect(rotated.json()).toMatchObject({ restore_generation: 1, original: 'superseded' });

    // Every receipt up to the restore point, asked again under its operation id: the same answer, never a second write.
    for (const [id, { args, answer }] of before) {
      const again = await write([...args, '--operation-id', id, ...at()], env);
      expect(again).toEqual({ ...answer, result: 'already_applied' });
    }
    // The history up to the point, transaction by transaction.
    Object.assign(process.env, env);
    const work = await openGoalWork({ root, goal_id: 'g1' });
    const restored: WorkTransaction[] = [];
    try {
      for await (const t of work.iterateHistory()) restored.push(t);
    } finally {
      work.close();
    }
    expect(restored.slice(0, copied)).toEqual(history.slice(0, copied));
    // A write the copy never held (past the point) is absent: asked again, it applies once, at the copy's next cursor.
    const { args } = after.get('op-4')!;
    const applied = await write([...args, '--operation-id', 'op-4', ...at()], env);
    expect(applied).toMatchObject({ result: 'applied', cursor: restored.length + 1 });
    expect((await write([...args, '--operation-id', 'op-4', ...at()], env)).result).toBe('already_applied');

    // The superseded original refuses its writers.
    const old = await loopxChild(['todo', 'add', '--goal', 'g1', '--title', 'x', ...at(), '--json'], {
      ...env,
      LX_PR_B: primary.url(),
    });
    expect(old.json().error.code).toBe('store_superseded');
  }, 180_000);
});
