/**
 * What the root alone cannot tell, and what the authority's marks can: a whole authority directory
 * restored from before a recovery lets the old root's first delivery through to the receiver,
 * which refuses it `fence_stale` — and from then on the root itself records its lifetime as
 * superseded and admits nothing more for it (a stated limit: nothing is stopped before that first
 * delivery). A recovered root restored from an older copy of itself is behind its authority's mark
 * and takes no writer (`root_rolled_back`), so a Todo id is never reused with other content. And a
 * retired alias's new lifetime starts on a work store of its own. Real CLI children, real SQLite, a
 * real loopback receiver.
 */
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { loopxAsync } from '../support/cli.js';
import { agentFile, type Doc } from './support/adopt.js';
import { as, backupVerified, newUser, recoverInto, workedSource, type User } from './support/adopt-users.js';

let sink: WebhookSink;
let u: User;
let S: string;
let R: string;
let authorityBefore: string;

const STALE = [
  { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'stale news' } }] },
  {
    text: 'Closing.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't3', status: 'done', note: 'stale close' } }],
  },
  { text: 'Done.' },
];

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  u = newUser('loopx-rolled-back-');
  S = u.root;
  await workedSource(u, sink.deliveriesUrl);
  await backupVerified(u);
  // The whole authority directory as it was before the recovery (as a restore of it would bring back).
  authorityBefore = join(u.dir, 'authority-before');
  cpSync(u.authority, authorityBefore, { recursive: true, preserveTimestamps: true });
  R = join(u.dir, 'recovered');
  const st = await recoverInto(u, R);
  expect(st.state, JSON.stringify(st.holds)).toBe('complete');
}, 240_000);
afterAll(async () => {
  await sink.close();
});

const stored = (message: string) =>
  sink.deliveries().filter((d) => (d.body as { message?: string }).message === message).length;

async function code(args: readonly string[]): Promise<string | undefined> {
  const r = await loopxAsync([...args, '--json']);
  return r.status === 0 ? undefined : ((JSON.parse(r.stdout || '{}') as Doc).error?.code as string | undefined);
}

describe('an authority directory restored from before the recovery', () => {
  it('cannot be told apart by the old root alone, but the receiver tells it: before its work run sends, the root asks, learns of the newer lifetime, and admits nothing more', async () => {
    const at = ['--root', S, '--authority-dir', authorityBefore];
    // The old root's authority knows of no recovery; the receiver it delivered to holds the newer lifetime's fence.
    const attempts = sink.attempts().attempts.length;
    expect(await code(['work', 'run', '--goal', 'launch', '--agent', agentFile(u.dir, 'stale', STALE), ...at])).toBe(
      'goal_lifetime_superseded',
    );
    expect(sink.attempts().attempts).toHaveLength(attempts);
    expect(stored('stale news')).toBe(0);
    // From that answer the root records the lifetime as superseded in its own goal owner: nothing more is admitted.
    const todos = (await as({ authority: authorityBefore }, ['todo', 'list', '--goal', 'launch', '--root', S]))
      .todos as { todo_id: string; status: string }[];
    expect(todos.find((t) => t.todo_id === 't3')?.status).toBe('open');
    expect(await code(['todo', 'add', '--goal', 'launch', '--title', 'More', ...at])).toBe('goal_lifetime_superseded');
    expect(await code(['work', 'run', '--goal', 'launch', '--agent', agentFile(u.dir, 'stale', STALE), ...at])).toBe(
      'goal_lifetime_superseded',
    );
    expect(await code(['goal', 'retire', 'launch', ...at])).toBe('goal_lifetime_superseded');
    expect(await code(['goal', 'create', 'launch', '--title', 'Again', ...at])).toBe('goal_alias_superseded');
    expect(stored('stale news')).toBe(0);
  }, 120_000);
});

describe('a recovered root restored from an older copy of itself', () => {
  it('is behind its authority’s mark: writers are refused root_rolled_back, and no Todo id is reused with other content', async () => {
    const early = join(u.dir, 'recovered-goals-early');
    cpSync(join(R, 'goals'), early, { recursive: true, preserveTimestamps: true });
    const added = await as(u, ['todo', 'add', '--goal', 'launch', '--title', 'Write the follow-up', '--root', R]);
    const id = added.todo.todo_id as string;
    // The operator restores the Goal's files from the earlier copy.
    rmSync(join(R, 'goals'), { recursive: true });
    cpSync(early, join(R, 'goals'), { recursive: true, preserveTimestamps: true });
    const r = await loopxAsync([
      'todo',
      'add',
      '--goal',
      'launch',
      '--title',
      'Something else',
      '--root',
      R,
      '--authority-dir',
      u.authority,
      '--json',
    ]);
    expect(r.status).toBe(4);
    const err = (JSON.parse(r.stdout) as Doc).error;
    expect(err.code).toBe('root_rolled_back');
    expect(err.next_action).toMatch(/^recover the Goal from a backup into a new root: loopx recover plan /);
    const todos = (await as(u, ['todo', 'list', '--goal', 'launch', '--root', R])).todos as {
      todo_id: string;
      title: string;
    }[];
    expect(todos.find((t) => t.todo_id === id)).toBeUndefined();
    expect(todos.some((t) => t.title === 'Something else')).toBe(false);
  }, 60_000);
});

describe('a retired alias created again', () => {
  it('starts its new lifetime on a work store of its own; the retired lifetime’s work is kept aside, never adopted', async () => {
    const v = newUser('loopx-retired-alias-');
    const at = ['--root', v.root];
    await as(v, ['init', ...at]);
    const first = await as(v, ['goal', 'create', 'notes', '--title', 'Notes', ...at]);
    await as(v, ['todo', 'add', '--goal', 'notes', '--title', 'Old work', ...at]);
    await as(v, ['goal', 'retire', 'notes', ...at]);
    const second = await as(v, ['goal', 'create', 'notes', '--title', 'Notes again', ...at]);
    expect(second.goal_instance_id).not.toBe(first.goal_instance_id);
    expect((await as(v, ['todo', 'list', '--goal', 'notes', ...at])).todos).toEqual([]);
    expect((await as(v, ['goal', 'show', 'notes', ...at])).committed_transactions).toBe(0);
    expect(existsSync(join(v.root, 'goals', 'notes', 'retired', first.goal_instance_id, 'work.db'))).toBe(true);
    const t = await as(v, ['todo', 'add', '--goal', 'notes', '--title', 'New work', ...at]);
    expect(t.todo).toMatchObject({ todo_id: 't1', title: 'New work' });
  }, 60_000);
});
