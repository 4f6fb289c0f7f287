/**
 * The Capability Center offers the shipped Goal work agents of examples/agents by default — the
 * model-free `demo.goal-finisher` among them, beside `demo.goal-worker` — and a run of the
 * goal-finisher started from it is driven by the daemon until every open and blocked Todo is done.
 */
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { addTodo, createGoal, initRoot, listTodos, updateTodo } from '../../src/runtime/index.js';
import { tempRoot } from '../support/cli.js';
import { closeDaemon } from '../support/daemon.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };

let root: string;
let d: DaemonApp;
const get = (url: string) => d.app.inject({ method: 'GET', url, headers: AUTH });
const post = (url: string, payload: object) => d.app.inject({ method: 'POST', url, headers: AUTH, payload });

beforeAll(async () => {
  root = tempRoot('loopx-daemon-finisher-');
  initRoot(root);
  await createGoal(root, 'launch', 'Ship the launch post');
  for (const id of ['t1', 't2', 't3'])
    await addTodo(root, 'launch', { operation_id: `add-${id}`, todo_id: id, title: `Title of ${id}` });
  await updateTodo(root, 'launch', {
    operation_id: 'block-t2',
    todo_id: 't2',
    status: 'blocked',
    lease_owner: 'operator:test',
  });
  // No agentsDir: the daemon offers the package's examples/agents, as `loopx daemon` does by default.
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir: join(dirname(root), 'authority'),
    logger: false,
  });
}, 60_000);
afterAll(() => closeDaemon(d));

describe('demo.goal-finisher in the Capability Center', () => {
  it('is offered by default with the shipped Goal work agents, as a model-free agent', async () => {
    const agents = (await get('/api/agents')).json().agents as { id: string; model: string; turn_limit: number }[];
    expect(agents).toContainEqual({
      id: 'demo.goal-finisher',
      version: '1.0.0',
      turn_limit: 16,
      model: 'goal-finisher/goal-finisher-v1',
    });
    expect(agents.map((a) => a.id)).toContain('demo.goal-worker');
  });

  it('a run started from it finishes every open and blocked Todo', async () => {
    const r = await post('/api/goals/launch/work-runs', { agent: 'demo.goal-finisher' });
    expect(r.statusCode, r.body).toBe(202);
    const runId = r.json().run_id as string;
    let view: Record<string, unknown>;
    // Bounded by the test's timeout, never by a clock: the run is driven in the background.
    for (;;) {
      view = (await get(`/api/runs/${runId}`)).json() as Record<string, unknown>;
      if (view.status !== 'active' || view.waiting_for !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(view, JSON.stringify(view)).toMatchObject({ status: 'completed', completed_turns: 5, failure: null });
    expect((await listTodos(root, 'launch')).map((t) => [t.todo_id, t.status])).toEqual([
      ['t1', 'done'],
      ['t2', 'done'],
      ['t3', 'done'],
    ]);
  }, 60_000);
});
