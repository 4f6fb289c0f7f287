/**
 * An apply reads only what it verified. The recovery workspace's goal.json is swapped for the
 * goal.json of an unrelated live Goal (another root of the same user, same alias, another
 * lifetime) — after the apply's freshness check, or between an apply killed mid-way and its
 * re-run: the apply is refused `recover_workspace_changed` before any step uses the swapped bytes,
 * nothing is superseded (both Goals still take writes), and the recovery is not complete. Swapped
 * after the apply staged what it reads, the bytes are never read: the recovery supersedes the
 * audited lifetime and no other. Real CLI children (paused with a `stop:` fault point, killed with
 * a SIGKILL one), a real loopback receiver.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { resumeUntilEnded, stopped } from '../support/stops.js';
import { CLI, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { okAsync, planAsync, sourceWithBackup, type Doc, type Source } from './support/adopt.js';

let sink: WebhookSink;
let s: Source;
/** Another live root of the same user, whose Goal `launch` is another lifetime. */
let other: string;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink, { afterCapture: false });
  other = tempRoot();
  expect((await loopxAsync(['init', ...s.at(other)])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'An unrelated Goal', ...s.at(other)])).status).toBe(
    0,
  );
}, 240_000);
afterAll(async () => {
  await sink.close();
});

const workspaceGoal = () => join(s.workspace, 'workspace', 'runtime-root', 'goals', 'launch', 'goal.json');
const instanceOf = (path: string): string =>
  (JSON.parse(readFileSync(path, 'utf8')) as { goal_instance_id: string }).goal_instance_id;

/** Put the other root's goal.json in the workspace's place; the returned function puts the original back. */
function swapGoal(): () => void {
  const original = readFileSync(workspaceGoal());
  copyFileSync(join(other, 'goals', 'launch', 'goal.json'), workspaceGoal());
  return () => writeFileSync(workspaceGoal(), original);
}

/** `recover apply` paused at `point` (a `stop:` fault); `during` runs while it is paused, then it is resumed to its end. */
async function applyPausedAt(
  destination: string,
  digest: string,
  point: string,
  during: () => void,
): Promise<{ status: number | null; doc: Doc }> {
  const child = spawn(
    process.execPath,
    [
      ...CLI,
      'recover',
      'apply',
      '--destination',
      destination,
      '--confirm',
      digest,
      '--authority-dir',
      s.authority,
      '--json',
    ],
    {
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME, LOOPX_TEST_FAULT: `stop:${point}` },
    },
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const ended = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  try {
    await expect.poll(() => stopped(child.pid!), { timeout: 90_000 }).toBe(true);
    during();
  } finally {
    // A stop point fires each time it is reached: resumed at every one until the apply ends.
    resumeUntilEnded(child, ended);
  }
  const status = await ended;
  return { status, doc: JSON.parse(out) as Doc };
}

/** A writer of `root`'s Goal is admitted: its lifetime is not superseded. */
const writable = async (root: string, title: string) =>
  expect((await okAsync(s, ['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).result).toBe(
    'applied',
  );

/** No lifetime of this user's run authority is recorded as superseded. */
const noneSuperseded = () =>
  expect(
    existsSync(join(s.authority, 'lifetimes'))
      ? readdirSync(join(s.authority, 'lifetimes')).filter((n) => n.endsWith('.json'))
      : [],
  ).toEqual([]);

describe('an apply reads only what it verified', () => {
  it('a goal.json swapped after the freshness check is refused recover_workspace_changed; nothing is superseded and the recovery is not complete', async () => {
    const { destination, doc } = await planAsync(s, 'swap-after-fresh');
    let restore = () => {};
    try {
      const r = await applyPausedAt(destination, doc.plan_digest, 'recover.apply.after-fresh', () => {
        restore = swapGoal();
      });
      expect(r.status, JSON.stringify(r.doc)).toBe(3);
      expect(r.doc.error.code).toBe('recover_workspace_changed');
      expect(r.doc.error.next_action).toBe(
        'verify the backup again into a new workspace and plan the recovery from it',
      );
    } finally {
      restore();
    }
    noneSuperseded();
    await writable(other, 'the other Goal still takes writes');
    await writable(s.root, 'the source still takes writes');
    const status = await okAsync(s, ['recover', 'status', '--destination', destination]);
    expect(status.state).not.toBe('complete');
    expect(status.state).toBe('adoption_prepared');
    // Nothing was made in the destination, and nothing staged is left behind.
    expect(readdirSync(destination)).toEqual(['recovery']);
    expect(readdirSync(join(destination, 'recovery')).sort()).not.toContain('staging');
  }, 180_000);

  it('a goal.json swapped before an interrupted apply is re-run is refused recover_workspace_changed; the lifetime it names is never superseded', async () => {
    const { destination, doc } = await planAsync(s, 'swap-before-rerun');
    const crashed = await loopxAsync(
      [
        'recover',
        'apply',
        '--destination',
        destination,
        '--confirm',
        doc.plan_digest,
        '--authority-dir',
        s.authority,
        '--json',
      ],
      {
        LOOPX_TEST_FAULT: 'recover.goal:rebind.before',
      },
    );
    expect(crashed.signal).toBe('SIGKILL');
    const restore = swapGoal();
    try {
      const rerun = await loopxAsync([
        'recover',
        'apply',
        '--destination',
        destination,
        '--confirm',
        doc.plan_digest,
        '--authority-dir',
        s.authority,
        '--json',
      ]);
      expect(rerun.status, rerun.stdout + rerun.stderr).toBe(3);
      expect(rerun.json().error.code).toBe('recover_workspace_changed');
    } finally {
      restore();
    }
    noneSuperseded();
    await writable(other, 'the other Goal still takes writes after the re-run');
    await writable(s.root, 'the source still takes writes after the re-run');
    const status = await okAsync(s, ['recover', 'status', '--destination', destination]);
    expect(status.state).toBe('applying');
    const journal = readFileSync(join(destination, 'recovery', 'journal.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { event: string; action?: string });
    expect(journal.filter((e) => e.event === 'done').map((e) => e.action)).toEqual([
      'host:destination',
      'config:rebind',
    ]);
    expect(existsSync(join(destination, 'recovery', 'staging'))).toBe(false);
  }, 180_000);

  it('a goal.json swapped after the apply staged its reads is never read: the audited lifetime is superseded, and no other', async () => {
    const { destination, doc } = await planAsync(s, 'swap-after-staging');
    const audited = instanceOf(workspaceGoal());
    const unrelated = instanceOf(join(other, 'goals', 'launch', 'goal.json'));
    let restore = () => {};
    let r: { status: number | null; doc: Doc };
    try {
      r = await applyPausedAt(destination, doc.plan_digest, 'recover.host:destination.before', () => {
        restore = swapGoal();
      });
    } finally {
      restore();
    }
    expect(r.status, JSON.stringify(r.doc)).toBe(0);
    expect(r.doc.state).toBe('complete');
    expect(readdirSync(join(s.authority, 'lifetimes')).filter((n) => n.endsWith('.json'))).toEqual([`${audited}.json`]);
    expect(existsSync(join(s.authority, 'lifetimes', `${unrelated}.json`))).toBe(false);
    await writable(other, 'the other Goal is nobody’s recovery');
    const source = await loopxAsync([
      'todo',
      'add',
      '--goal',
      'launch',
      '--title',
      'the recovered lifetime is fenced',
      ...s.at(s.root),
      '--json',
    ]);
    expect(source.status).toBe(4);
    expect(source.json().error.code).toBe('goal_lifetime_superseded');
    expect(existsSync(join(destination, 'recovery', 'staging'))).toBe(false);
  }, 180_000);
});
