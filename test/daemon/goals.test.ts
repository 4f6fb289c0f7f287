/**
 * The daemon's Goal and Todo writes in-process, through the same runtime calls as `loopx todo`
 * and `loopx goal`: add a Todo (a retry with its Idempotency-Key answers the same receipt), change
 * its status and note, pause, resume and retire the Goal; typed refusals for a bad field, an
 * unknown Goal and a byte copy of the root — each changing nothing.
 */
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

let root: string;
let d: DaemonApp;
const get = (app: DaemonApp, url: string) => app.app.inject({ method: 'GET', url, headers: AUTH });
const post = (app: DaemonApp, url: string, payload?: object, key?: string) =>
  app.app.inject({
    method: 'POST',
    url,
    headers: { ...AUTH, ...(key ? { 'idempotency-key': key } : {}) },
    ...(payload ? { payload } : {}),
  });
const make = (r: string) =>
  buildApp({ root: r, token: TOKEN, loginTokens: new LoginTokens(), port: () => 80, authorityDir, logger: false });

beforeAll(async () => {
  root = tempRoot('loopx-daemon-goals-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
  d = await make(root);
}, 60_000);
afterAll(async () => {
  await d?.backups.close();
  await d?.app.close();
});

describe('Goal and Todo writes over the daemon', () => {
  it('adds a Todo; the same Idempotency-Key answers the same receipt and adds nothing more', async () => {
    const first = await post(d, '/api/goals/launch/todos', { title: 'Draft the outline' }, 'add-1');
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json()).toMatchObject({
      result: 'applied',
      todo: { todo_id: 't1', title: 'Draft the outline', status: 'open' },
    });
    const again = await post(d, '/api/goals/launch/todos', { title: 'Draft the outline' }, 'add-1');
    expect(again.json()).toEqual(first.json());
    expect((await get(d, '/api/goals/launch')).json().todos).toHaveLength(1);
  });

  it('changes a Todo’s status and note, as the CLI reads it back', async () => {
    const r = await post(d, '/api/goals/launch/todos/t1', { status: 'done', note: 'drafted' });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().todo).toMatchObject({ todo_id: 't1', status: 'done', note: 'drafted' });
    const cli = await loopxAsync(['todo', 'list', '--goal', 'launch', '--root', root, '--json']);
    expect(cli.json().todos[0]).toMatchObject({ todo_id: 't1', status: 'done', note: 'drafted' });
  });

  it('refuses a bad field, an unknown Goal and an empty update, changing nothing', async () => {
    const before = (await get(d, '/api/goals/launch')).json();
    for (const [url, body, code] of [
      ['/api/goals/launch/todos', { title: '' }, 'daemon_field_invalid'],
      ['/api/goals/launch/todos/t1', { status: 'finished' }, 'daemon_field_invalid'],
      ['/api/goals/launch/todos/t1', {}, 'daemon_field_invalid'],
      ['/api/goals/nope/todos', { title: 'x' }, 'goal_not_found'],
    ] as const) {
      const r = await post(d, url, body);
      expect(r.json().error.code, url).toBe(code);
    }
    expect((await get(d, '/api/goals/launch')).json()).toEqual(before);
  });

  it('pauses, resumes and retires the Goal; a retired one is refused further transitions', async () => {
    expect((await post(d, '/api/goals/launch/pause')).json().lifecycle).toBe('paused');
    expect((await post(d, '/api/goals/launch/resume')).json().lifecycle).toBe('active');
    expect((await post(d, '/api/goals/launch/retire')).json().lifecycle).toBe('retired');
    const r = await post(d, '/api/goals/launch/resume');
    expect(r.statusCode).toBeGreaterThanOrEqual(400);
    expect((await loopxAsync(['goal', 'show', 'launch', '--root', root, '--json'])).json().lifecycle).toBe('retired');
  });

  it('refuses every write in a byte copy of the root (root_is_copy)', async () => {
    const copy = join(dirname(root), 'copy');
    cpSync(root, copy, { recursive: true });
    const c = await make(copy);
    try {
      const r = await post(c, '/api/goals/launch/todos', { title: 'copied' });
      expect(r.json().error.code).toBe('root_is_copy');
    } finally {
      await c.backups.close();
      await c.app.close();
    }
  });
});
