/**
 * A root's PostgreSQL primary fails over to its streaming standby, on servers the test starts
 * (`pg_basebackup -R`). The primary dies (an immediate stop) while a writer process is committing
 * Todo updates and while a `work run` is paused with a delivery's dispatch recorded and its request
 * not yet sent. The standby is promoted; loopx refuses it until the operator
 * rotates it (`db rotate`, the original unreachable), then continues: every update whose answer
 * was lost reads back as committed or absent and is applied at most once, and the Goal's work goes
 * on with no delivery made twice. The old primary is started again: a new writer through the root
 * is refused (the root is bound to the rotated installation; `db status` shows it superseded), and
 * the run that was admitted on it before it died, let go on, sends its delivery under its old fence:
 * the receiver, which has seen the rotated installation's, refuses it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { agentDocument, CONTINUE, type ScriptStep } from '../../src/runtime/drill/definition.js';
import { deliveryFence } from '../../src/owners/goal/index.js';
import { openGoalWork } from '../../src/owners/work/index.js';
import { CLI, DATA_HOME, REPO, STATE_HOME, addLaunchTodos, loopxChild, tempRoot } from '../support/cli.js';
import { PgWriter } from '../support/pg-restore.js';
import { PgServer, canRunServers } from '../support/pg-servers.js';

// Skipped only where no PostgreSQL server binaries (or no `postgres` user) exist; under CI=true that fails instead.
if (process.env.CI === 'true' && !canRunServers())
  throw new Error('CI=true but this machine cannot start PostgreSQL servers of its own');

/** The run paused on the old primary, about to announce the draft (resumed, it sends it under its old fence). */
const ON_THE_PRIMARY: readonly ScriptStep[] = [
  {
    text: 'Starting the post.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't3', note: 'draft started' } }],
  },
  {
    text: 'Announcing the draft.',
    tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'post draft ready' } }],
  },
  { text: 'More later.' },
];

const stateOf = (pid: number): string => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0]!;

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 2400; i++) {
    if (ok()) return;
    await sleep(50);
  }
  throw new Error(`never: ${what}`);
}

(canRunServers() ? describe : describe.skip)('a failover of a root’s PostgreSQL server', () => {
  let primary: PgServer;
  let standby: PgServer;
  let sink: WebhookSink;
  let root: string;
  let dir: string;
  const env: Record<string, string> = {};
  const at = (): string[] => ['--root', root];
  let paused: ChildProcess;
  let pausedExit: Promise<number | null>;
  const answers = new Map<string, Record<string, unknown>>();

  afterAll(async () => {
    paused?.kill('SIGKILL');
    await sink?.close();
  });

  beforeAll(async () => {
    primary = await PgServer.fresh();
    standby = await PgServer.fromBackup(primary.baseBackup({ standby: true }));
    sink = await startWebhookSink({ port: 0 });
    dir = mkdtempSync(join(tmpdir(), 'loopx-failover-'));
    writeFileSync(join(dir, 'primary.json'), JSON.stringify(agentDocument('primary', ON_THE_PRIMARY)));
    writeFileSync(join(dir, 'continue.json'), JSON.stringify(agentDocument('continue', CONTINUE)));
    env.LX_FO_DB = primary.url();
    root = tempRoot('loopx-failover-root-');
    const ok = async (args: string[]) => {
      const r = await loopxChild([...args, ...at(), '--json'], env);
      expect(r.status, `${args.join(' ')}\n${r.stderr}`).toBe(0);
      return r.json();
    };
    await ok(['init', '--store', 'postgresql', '--database-url', 'env:LX_FO_DB', '--pg-schema', 'loopx_main']);
    await ok(['db', 'migrate']);
    await ok(['goal', 'create', 'launch', '--title', 'Ship the launch post']);
    await addLaunchTodos(at(), env);
  }, 180_000);

  it('the primary dies mid-write and mid-delivery; the promoted standby, rotated, continues with nothing applied or delivered twice', async () => {
    // A run pauses with its delivery's dispatch recorded and the request not yet sent.
    paused = spawn(
      process.execPath,
      [
        ...CLI,
        'work',
        'run',
        '--goal',
        'launch',
        '--agent',
        join(dir, 'primary.json'),
        '--sink',
        sink.deliveriesUrl,
        ...at(),
      ],
      {
        cwd: REPO,
        env: {
          ...process.env,
          XDG_STATE_HOME: STATE_HOME,
          XDG_DATA_HOME: DATA_HOME,
          ...env,
          LOOPX_TEST_FAULT: 'stop:effect.webhook.before-send',
        },
        stdio: 'ignore',
      },
    );
    pausedExit = new Promise((resolve) => paused.on('exit', (code) => resolve(code)));
    await until('the run paused before its delivery', () => stateOf(paused.pid!) === 'T');
    expect(sink.deliveries()).toEqual([]);
    // Its dispatch is on the standby before the primary dies.
    const lsn = primary.sql('SELECT pg_current_wal_lsn()');
    await standby.until(`SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn`, 't');

    // A writer commits updates back to back; the primary dies under it.
    const writer = new PgWriter(root, 'launch', env);
    expect(await writer.next()).toEqual({ ready: true });
    const ops = Array.from({ length: 12 }, (_, i) => `fo-${i + 1}`);
    for (const op of ops) writer.send(`op ${op} update t2 ${op}`);
    for (let i = 0; i < 3; i++) answers.set(ops[i]!, await writer.next());
    primary.stop('immediate');
    for (const op of ops.slice(3)) answers.set(op, await writer.next());
    writer.stop();
    const lost = ops.filter((op) => answers.get(op)!.ok !== true);
    // The first answers came before the primary died; at least one write was cut off.
    expect(ops.slice(0, 3).map((op) => answers.get(op))).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    expect(lost.length).toBeGreaterThan(0);

    // The standby promoted: a new timeline, on another server — refused until rotated.
    standby.promote();
    await standby.until('SELECT pg_is_in_recovery()', 'f');
    env.LX_FO_NEW = standby.url();
    const early = await loopxChild(['todo', 'add', '--goal', 'launch', '--title', 'x', ...at(), '--json'], {
      ...env,
      LX_FO_DB: standby.url(),
    });
    expect(early.json().error.code).toBe('store_restored_pending_rotation');
    const plan = (await loopxChild(['db', 'rotate', '--database-url', 'env:LX_FO_NEW', ...at(), '--json'], env)).json();
    expect(plan.changed).toEqual(expect.arrayContaining(['timeline', 'server_port']));
    expect(plan.later_writes).toEqual({ original: 'unreachable', count: null, goals: [] });
    const rotated = await loopxChild(
      ['db', 'rotate', '--database-url', 'env:LX_FO_NEW', '--confirm', plan.digest, ...at(), '--json'],
      env,
    );
    expect(rotated.status, rotated.stderr).toBe(0);
    expect(rotated.json()).toMatchObject({ restore_generation: 1, original: 'unreachable' });
    // The receiver the Goal delivers to now refuses the old installation's fence, before any new delivery.
    const fence = deliveryFence({ generation: 1 }, 1);
    expect(rotated.json().receivers).toEqual([
      { goal_id: 'launch', target: `webhook:127.0.0.1:${sink.port}`, fence, result: 'raised' },
    ]);
    const lifetime = (await loopxChild(['goal', 'show', 'launch', ...at(), '--json'], env)).json().goal_instance_id;
    expect(await (await fetch(`${sink.url}/fences?goal_lineage=${lifetime}`)).json()).toEqual({
      goal_lineage: lifetime,
      newest_fence: fence,
      lifetime,
    });

    // Every update whose answer was lost, asked again: committed (its receipt) or absent (applied now), once.
    for (const op of lost) {
      const again = await loopxChild(
        ['todo', 'update', 't2', '--goal', 'launch', '--note', op, '--operation-id', op, ...at(), '--json'],
        env,
      );
      expect(again.status, `${again.stdout}${again.stderr}`).toBe(0);
      expect(['applied', 'already_applied']).toContain(again.json().result);
    }
    Object.assign(process.env, env);
    const work = await openGoalWork({ root, goal_id: 'launch' });
    const seen = new Map<string, number>();
    try {
      for await (const t of work.iterateHistory()) seen.set(t.operation_id, (seen.get(t.operation_id) ?? 0) + 1);
    } finally {
      work.close();
    }
    for (const op of ops.filter((o) => answers.get(o)!.ok === true || lost.includes(o)))
      expect([op, seen.get(op)]).toEqual([op, 1]);

    // The Goal's work goes on from the promoted server: the draft announcement is not made again.
    const cont = await loopxChild(
      [
        'work',
        'run',
        '--goal',
        'launch',
        '--agent',
        join(dir, 'continue.json'),
        '--sink',
        sink.deliveriesUrl,
        ...at(),
        '--json',
      ],
      env,
    );
    expect(cont.status, cont.stderr).toBe(0);
    const messages = sink.deliveries().map((d) => (d.body as { message?: string }).message);
    // The draft announcement the dead run had dispatched stays its own (held, never sent by another run); the rest once.
    expect(messages).toEqual(['post published']);
    expect(sink.attempts().counts.duplicate ?? 0).toBe(0);
  }, 300_000);

  it('the old primary, started again, admits no writer through the root: it is an incarnation the root left behind', async () => {
    primary.start();
    const onOld = { ...env, LX_FO_NEW: primary.url() };
    const refused = await loopxChild(['todo', 'add', '--goal', 'launch', '--title', 'x', ...at(), '--json'], onOld);
    expect(refused.status, refused.stdout).toBe(3);
    expect(refused.json().error.code).toBe('store_superseded');
    // `db migrate` through it never binds the root back to the old installation.
    expect((await loopxChild(['db', 'migrate', ...at(), '--json'], onOld)).status).toBe(0);
    const again = await loopxChild(['todo', 'add', '--goal', 'launch', '--title', 'x', ...at(), '--json'], onOld);
    expect(again.json().error.code).toBe('store_superseded');
    // Rotating it into the root would abandon the promoted server's writes: refused.
    const rotate = await loopxChild(['db', 'rotate', '--database-url', 'env:LX_FO_NEW', ...at(), '--json'], onOld);
    expect(rotate.status, rotate.stdout).toBe(3);
    expect(rotate.json().error.code).toBe('db_rotation_older_installation');
    const status = (await loopxChild(['db', 'status', ...at(), '--json'], onOld)).json();
    expect(status).toMatchObject({ binding: 'older', installation: { state: 'superseded', restore_generation: 0 } });

    // The run admitted on the old primary before it died goes on with it, and sends its delivery
    // under the fence it was admitted with: the receiver, which has seen the rotated installation's
    // fence, refuses it. Nothing of it is stored, and the Goal's lifetime is not taken for superseded.
    const stored = sink.deliveries().length;
    paused.kill('SIGCONT');
    await pausedExit;
    const fromOld = sink.attempts().attempts.filter((a) => a.result !== 'stored');
    expect(fromOld.map((a) => [a.result, a.fence])).toEqual([['refused_stale_fence', 1]]);
    expect(sink.deliveries()).toHaveLength(stored);
    expect(sink.deliveries().map((d) => d.fence)).toEqual([deliveryFence({ generation: 1 }, 1)]);
    expect(sink.attempts().counts.stored ?? 0).toBe(1);
    // (A lifetime the root had recorded as superseded would refuse this writer.)
    const added = await loopxChild(['todo', 'add', '--goal', 'launch', '--title', 'after', ...at(), '--json'], env);
    expect(added.status, added.stderr).toBe(0);
  }, 300_000);
});
