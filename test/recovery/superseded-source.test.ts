/**
 * The source root after a completed recovery of its Goal: every way an operator could make it
 * write for the superseded lifetime again — another authority (an empty `--authority-dir`, another
 * HOME, a copy of the authority without its lifetimes/, lifetimes/ moved away), an edited
 * goal.json, a lifecycle change, a re-created alias (also after the Goal's directory was removed
 * by hand), through the CLI and the daemon — is refused with its code, and an independent receiver
 * stores nothing more. Real CLI children, real SQLite, a real loopback receiver with a journal.
 */
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { loopxAsync, rel } from '../support/cli.js';
import { agentFile, type Doc } from './support/adopt.js';
import { as, backupVerified, newUser, recoverInto, workedSource, type User } from './support/adopt-users.js';

let sink: WebhookSink;
let u: User;
let S: string;
let R: string;
let stale: string;

/** What an old writer would do: deliver news, then close a Todo. */
const STALE = [
  { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'stale news' } }] },
  {
    text: 'Closing.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't3', status: 'done', note: 'stale close' } }],
  },
  { text: 'Done.' },
];
/** A new lifetime under the old alias would announce the outline again (a new lineage: a new idempotency key). */
const AGAIN = [
  { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'outline ready' } }] },
  { text: 'Done.' },
];

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  u = newUser('loopx-superseded-source-');
  S = u.root;
  stale = agentFile(u.dir, 'stale', STALE);
  await workedSource(u, sink.deliveriesUrl);
  await backupVerified(u);
  R = join(u.dir, 'recovered');
  const st = await recoverInto(u, R);
  expect(st.state, JSON.stringify(st.holds)).toBe('complete');
}, 240_000);
afterAll(async () => {
  await sink.close();
});

/** Stored deliveries of one message, at the receiver. */
const stored = (message: string) =>
  sink.deliveries().filter((d) => (d.body as { message?: string }).message === message).length;

/** A CLI command that must be refused: its exit status and code. */
async function refused(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; code: string | undefined }> {
  const r = await loopxAsync([...args, '--json'], env);
  expect(r.status, `${args.join(' ')} was admitted:\n${r.stdout}`).not.toBe(0);
  return { status: r.status, code: (JSON.parse(r.stdout || '{}') as Doc).error?.code };
}

const attack = (authority: string[]) => [
  ['work', 'run', '--goal', 'launch', '--agent', stale, '--sink', sink.deliveriesUrl, '--root', S, ...authority],
  ['todo', 'update', '--goal', 'launch', 't3', '--status', 'done', '--root', S, ...authority],
];

/** Every old-writer attempt under `authority` is refused with `code`; nothing reached the receiver or the Todos. */
async function expectFenced(authority: string[], code: string, env: Record<string, string> = {}): Promise<void> {
  for (const args of attack(authority)) expect((await refused(args, env)).code, args.join(' ')).toBe(code);
  expect(stored('stale news')).toBe(0);
  const todos = (await as(u, ['todo', 'list', '--goal', 'launch', '--root', S])).todos as {
    todo_id: string;
    status: string;
  }[];
  expect(todos.find((t) => t.todo_id === 't3')?.status).toBe('open');
}

describe('a root belongs to one run authority', () => {
  it('an empty --authority-dir is not the root’s authority: root_authority_mismatch', async () => {
    await expectFenced(['--authority-dir', mkdtempSync(join(u.dir, 'empty-'))], 'root_authority_mismatch');
  });

  it('another HOME (its own default authority) is not the root’s authority: root_authority_mismatch', async () => {
    const home = mkdtempSync(join(u.dir, 'home-'));
    await expectFenced([], 'root_authority_mismatch', { HOME: home, XDG_STATE_HOME: '' });
  });

  it('a copy of the authority without lifetimes/ is seen as rolled back: authority_rolled_back', async () => {
    const copy = join(u.dir, 'authority-copy');
    cpSync(u.authority, copy, { recursive: true, preserveTimestamps: true });
    rmSync(join(copy, 'lifetimes'), { recursive: true });
    await expectFenced(['--authority-dir', copy], 'authority_rolled_back');
  });

  it('the authority’s lifetimes/ moved away is seen as rolled back, and writers are refused until it is back', async () => {
    const aside = join(u.dir, 'lifetimes-aside');
    renameSync(join(u.authority, 'lifetimes'), aside);
    try {
      await expectFenced(['--authority-dir', u.authority], 'authority_rolled_back');
    } finally {
      rmSync(join(u.authority, 'lifetimes'), { recursive: true, force: true });
      renameSync(aside, join(u.authority, 'lifetimes'));
    }
    // Back in place: the lifetime is superseded again, as recorded.
    await expectFenced(['--authority-dir', u.authority], 'goal_lifetime_superseded');
  });

  it('a goal.json whose goal_instance_id was edited names another lifetime than its work store: goal_identity_mismatch', async () => {
    const file = join(S, 'goals', 'launch', 'goal.json');
    const original = readFileSync(file);
    const doc = JSON.parse(original.toString('utf8')) as { goal_instance_id: string };
    const last = doc.goal_instance_id.slice(-1);
    doc.goal_instance_id = `${doc.goal_instance_id.slice(0, -1)}${last === '0' ? '1' : '0'}`;
    writeFileSync(file, `${JSON.stringify(doc)}\n`);
    try {
      await expectFenced(['--authority-dir', u.authority], 'goal_identity_mismatch');
    } finally {
      writeFileSync(file, original);
    }
  });
});

describe('the superseded lifetime stays closed in its old root', () => {
  it('over the daemon: pause, resume and retire are refused goal_lifetime_superseded', async () => {
    const TOKEN = 'test-token-0123456789';
    const d = await buildApp({
      root: S,
      token: TOKEN,
      loginTokens: new LoginTokens(),
      port: () => 80,
      authorityDir: u.authority,
      logger: false,
    });
    try {
      for (const verb of ['pause', 'resume', 'retire']) {
        const r = await d.app.inject({
          method: 'POST',
          url: `/api/goals/launch/${verb}`,
          headers: { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` },
        });
        expect(r.statusCode, `${verb}: ${r.body}`).toBe(409);
        expect(r.json().error.code).toBe('goal_lifetime_superseded');
        // Over HTTP no path is named, not even the recovered root's.
        expect(r.body).not.toContain(u.dir);
      }
    } finally {
      await d.backups.close();
      await d.app.close();
    }
    expect((await as(u, ['goal', 'show', 'launch', '--root', S])).lifecycle).toBe('active');
  });

  it('in the CLI: retire and pause are refused, the alias is not created again — also after its directory was removed by hand — and nothing is delivered twice', async () => {
    const at = ['--root', S, '--authority-dir', u.authority];
    // The refusal names the root the recovery made, as typed from here, and runs as printed: the Goal's new lifetime there.
    const retire = await loopxAsync(['goal', 'retire', 'launch', ...at, '--json']);
    const next = (JSON.parse(retire.stdout) as Doc).error.next_action as string;
    expect(next).toBe(
      `continue the Goal in the root it was recovered into: loopx goal show launch --root ${rel(R)} --authority-dir ${rel(u.authority)}`,
    );
    const there = await loopxAsync([...next.slice(next.indexOf('loopx ') + 'loopx '.length).split(' '), '--json']);
    expect(there.status, there.stderr).toBe(0);
    const old = (await as(u, ['goal', 'show', 'launch', '--root', S])).goal_instance_id as string;
    expect((JSON.parse(there.stdout) as Doc).goal_instance_id).not.toBe(old);
    expect((await refused(['goal', 'retire', 'launch', ...at])).code).toBe('goal_lifetime_superseded');
    expect((await refused(['goal', 'pause', 'launch', ...at])).code).toBe('goal_lifetime_superseded');
    expect((await refused(['goal', 'create', 'launch', '--title', 'Again', ...at])).code).toBe('goal_alias_superseded');
    rmSync(join(S, 'goals', 'launch'), { recursive: true });
    const again = await refused(['goal', 'create', 'launch', '--title', 'Again', ...at]);
    expect(again).toEqual({ status: 4, code: 'goal_alias_superseded' });
    expect(
      (await refused(['work', 'run', '--goal', 'launch', '--agent', agentFile(u.dir, 'again', AGAIN), ...at])).code,
    ).toBe('goal_not_found');
    // The receiver, independently: the outline was announced once, by the lifetime that did it.
    expect(stored('outline ready')).toBe(1);
    expect(stored('stale news')).toBe(0);
    // The recovered root is untouched by any of it and takes the Goal's work.
    expect((await as(u, ['goal', 'show', 'launch', '--root', R])).lifecycle).toBe('active');
  });
});
