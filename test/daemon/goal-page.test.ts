/**
 * What the Goal page reads and starts over the daemon, in-process against a real root: a Goal
 * work run started by the operator (answered once admitted, driven in the background, its result
 * the same as `loopx work run`'s), refused typed and before anything changes for a paused Goal or
 * an unknown agent; the Goal's sessions, runs, effects and holds; its committed history in pages;
 * and its progress over time with each Todo's last receipt. The Goals list carries counts, lease
 * mode and last activity; an unknown recovered root is refused.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { SOURCE_KILL_POINT } from '../../src/runtime/drill/definition.js';
import { REPO, STATE_HOME, cliFromSources, loopxAsync, tempRoot } from '../support/cli.js';
import { closeDaemon } from '../support/daemon.js';

cliFromSources(); // the in-process engine drives runs whose plan identity must match the CLI's

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

// Every answer checked against its published schema: daemon-goal.schema.json, daemon-goal-activity.schema.json,
// daemon-goal-history.schema.json and daemon-goal-progress.schema.json.
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(join(REPO, 'docs/schemas')).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(REPO, 'docs/schemas', f), 'utf8')) as Record<string, unknown>);
function valid(schema: string, doc: unknown): unknown {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${schema}.json`)!;
  expect(validate(doc) ? [] : validate.errors, schema).toEqual([]);
  return doc;
}

let root: string;
let d: DaemonApp;
let sink: WebhookSink;
const get = async (url: string) => {
  const res = await d.app.inject({ method: 'GET', url, headers: AUTH });
  // Each Goal answer as published (a refusal is the error schema's, checked elsewhere).
  const schema =
    res.statusCode !== 200
      ? undefined
      : (/\/api\/goals\/[^/?]+\/(activity|history|progress)/.exec(url)?.[1] ??
        (/^\/api\/goals/.test(url) ? '' : undefined));
  if (schema !== undefined) valid(schema === '' ? 'daemon-goal' : `daemon-goal-${schema}`, res.json());
  return res;
};
const post = (url: string, payload?: object) =>
  d.app.inject({ method: 'POST', url, headers: AUTH, ...(payload ? { payload } : {}) });

/** Wait (bounded by the test's timeout, never by a clock) until the run is no longer being driven. */
async function settled(runId: string): Promise<Record<string, unknown>> {
  for (;;) {
    const v = (await get(`/api/runs/${runId}`)).json() as Record<string, unknown>;
    if (v.status !== 'active' || v.waiting_for !== null) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  root = tempRoot('loopx-daemon-goal-page-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).status).toBe(0);
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir,
    logger: false,
  });
}, 120_000);
afterAll(() => closeDaemon(d, sink));

describe('the Goal page over the daemon', () => {
  it('offers the Goal work agents, and refuses an unknown agent or a paused Goal before anything changes', async () => {
    const agents = (await get('/api/agents')).json().agents as { id: string }[];
    expect(agents.map((a) => a.id)).toContain('demo.goal-worker');
    expect(agents.map((a) => a.id)).not.toContain('demo.minimal'); // not a Goal work agent
    const unknown = await post('/api/goals/launch/work-runs', { agent: 'nobody' });
    expect(unknown.json().error.code).toBe('daemon_field_invalid');
    expect((await post('/api/goals/launch/pause')).statusCode).toBe(200);
    const paused = await post('/api/goals/launch/work-runs', {
      agent: 'demo.goal-worker',
      sink_url: sink.deliveriesUrl,
    });
    expect(paused.json().error).toMatchObject({ code: 'goal_not_active' });
    expect((await post('/api/goals/launch/resume')).statusCode).toBe(200);
    const activity = (await get('/api/goals/launch/activity')).json();
    expect(activity).toMatchObject({ sessions: [], runs: [], effects: [], holds: [] });
  });

  it('starts a Goal work run that the daemon drives to the same result as the CLI', async () => {
    const r = await post('/api/goals/launch/work-runs', { agent: 'demo.goal-worker', sink_url: sink.deliveriesUrl });
    expect(r.statusCode, r.body).toBe(202);
    const runId = r.json().run_id as string;
    expect(runId).toMatch(/^run_[0-9a-f]+$/);
    const final = await settled(runId);
    expect(final, JSON.stringify(final)).toMatchObject({ status: 'completed' });
    const todos = (await loopxAsync(['todo', 'list', '--goal', 'launch', '--root', root, '--json'])).json().todos as {
      todo_id: string;
      status: string;
    }[];
    expect(todos.map((t) => `${t.todo_id}:${t.status}`)).toEqual(['t1:done', 't2:blocked', 't3:open']);
    expect(sink.deliveries()).toHaveLength(1);
  });

  it("lists the Goal's session, run and committed effect, and no hold", async () => {
    const a = (await get('/api/goals/launch/activity')).json();
    expect(a.sessions).toHaveLength(1);
    expect(a.runs).toEqual([
      expect.objectContaining({ status: 'completed', session_id: a.sessions[0].session_id, waiting_for: null }),
    ]);
    // Each mutating call of the run is an effect: two Todo updates and one delivery, all committed.
    expect(a.effects.map((e: { kind: string }) => e.kind).sort()).toEqual([
      'webhook.deliver',
      'work.todo_update',
      'work.todo_update',
    ]);
    expect(
      a.effects.every(
        (e: { outcome: string; run_id: string }) => e.outcome === 'committed' && e.run_id === a.runs[0].run_id,
      ),
    ).toBe(true);
    expect(a.effects[0].call_id).toMatch(new RegExp(`^${a.runs[0].run_id}/t\\d+/k\\d+$`));
    expect(a.holds).toEqual([]);
    expect(JSON.stringify(a)).not.toContain(root);
  });

  it('holds a delivery whose run died after sending it: owner effect, settled on its run by its one next action', async () => {
    expect(
      (await loopxAsync(['goal', 'create', 'crash', '--title', 'Crash mid-delivery', '--root', root])).status,
    ).toBe(0);
    for (const title of ['Draft the outline', 'Review with design'])
      expect((await loopxAsync(['todo', 'add', '--goal', 'crash', '--title', title, '--root', root])).status).toBe(0);
    // The run is killed right after the receiver took the delivery, before the effect owner heard back.
    const killed = await loopxAsync(
      [
        'work',
        'run',
        '--goal',
        'crash',
        '--agent',
        'examples/agents/goal-worker.json',
        '--sink',
        sink.deliveriesUrl,
        '--root',
        root,
      ],
      {
        LOOPX_TEST_FAULT: SOURCE_KILL_POINT,
      },
    );
    expect(killed.status).not.toBe(0);
    const a = (await get('/api/goals/crash/activity')).json();
    const delivery = a.effects.find((e: { kind: string }) => e.kind === 'webhook.deliver');
    expect(a.holds).toEqual([
      {
        subject: delivery.operation_id,
        owner: 'effect',
        reason: 'dispatched_not_settled',
        next_action: `settle it once ${delivery.target} says whether it took effect: loopx run resolve ${delivery.run_id} ${delivery.call_id} (--committed RESULT | --absent | --abandon)`,
        run_id: delivery.run_id,
      },
    ]);
    // Settled on its run, the hold is gone.
    expect(
      (await loopxAsync(['run', 'resolve', delivery.run_id, delivery.call_id, '--absent', '--root', root])).status,
    ).toBe(0);
    expect((await get('/api/goals/crash/activity')).json().holds).toEqual([]);
  });

  it('pages the committed history, newest page first, and walks to the oldest', async () => {
    const head = (await get('/api/goals/launch')).json().committed_transactions as number;
    const newest = (await get('/api/goals/launch/history?limit=2')).json();
    expect(newest).toMatchObject({ head, after: head - 2, newer: null, older: head - 4 });
    expect(newest.transactions.map((t: { cursor: number }) => t.cursor)).toEqual([head - 1, head]);
    const seen: number[] = [];
    for (let after: number | null = 0; after !== null;) {
      const page = (await get(`/api/goals/launch/history?after=${after}&limit=2`)).json() as {
        transactions: { cursor: number }[];
        newer: number | null;
      };
      seen.push(...page.transactions.map((t) => t.cursor));
      after = page.newer;
    }
    expect(seen).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    const first = (await get('/api/goals/launch/history?after=0&limit=1')).json().transactions[0];
    expect(first).toMatchObject({
      cursor: 1,
      operation: 'add_todo',
      todo_id: 't1',
      todo_title: 'Draft the outline',
      todo_status: 'open',
    });
    for (const bad of ['limit=0', 'limit=201', 'after=-1', 'after=x'])
      expect((await get(`/api/goals/launch/history?${bad}`)).json().error.code, bad).toBe('daemon_field_invalid');
  });

  it('shows a batch of Todo updates as one transaction naming each Todo it changed', async () => {
    expect((await loopxAsync(['goal', 'create', 'batch', '--title', 'Batched', '--root', root])).status).toBe(0);
    for (const title of ['First', 'Second'])
      expect((await loopxAsync(['todo', 'add', '--goal', 'batch', '--title', title, '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['todo', 'update', 't2', 't1', '--goal', 'batch', '--status', 'done', '--root', root])).status,
    ).toBe(0);
    const page = (await get('/api/goals/batch/history')).json();
    expect(page.transactions.at(-1)).toMatchObject({
      cursor: 3,
      operation: 'update_todos',
      todo_id: null,
      todos: [
        { todo_id: 't2', todo_title: 'Second', todo_status: 'done' },
        { todo_id: 't1', todo_title: 'First', todo_status: 'done' },
      ],
    });
    expect(page.transactions[0]).not.toHaveProperty('todos');
    const p = (await get('/api/goals/batch/progress')).json();
    expect([p.last_receipts.t1.operation, p.last_receipts.t2.operation]).toEqual(['update_todos', 'update_todos']);
  });

  it("draws the Goal's progress from its whole history, with each Todo's last receipt", async () => {
    const p = (await get('/api/goals/launch/progress')).json();
    const head = (await get('/api/goals/launch')).json().committed_transactions as number;
    expect(p.head).toBe(head);
    expect(p.points[0]).toMatchObject({ cursor: 1, counts: { open: 1, done: 0 } });
    expect(p.points.at(-1)).toMatchObject({ cursor: head, counts: { open: 1, done: 1, blocked: 1, deferred: 0 } });
    expect(p.last_receipts.t1.operation).toBe('update_todo');
    expect(p.last_receipts.t3.operation).toBe('add_todo');
  });

  it('lists the Goals with Todo counts, lease mode and last activity; an unknown recovered root is refused', async () => {
    const goals = (await get('/api/goals')).json().goals as { goal_id: string }[];
    expect(goals.find((g) => g.goal_id === 'launch')).toEqual(
      expect.objectContaining({
        goal_id: 'launch',
        counts: { open: 1, done: 1, blocked: 1, deferred: 0 },
        handoff_mode: 'hard_lease',
        work_provider: 'sqlite',
        last_activity: expect.any(String),
      }),
    );
    expect((await get('/api/roots')).json()).toEqual({ roots: [] });
    const r = await get('/api/goals?root=elsewhere');
    expect(r.statusCode).toBe(404);
    expect(r.json().error.code).toBe('daemon_root_unknown');
    expect((await get('/api/goals?root=..%2Fx')).json().error.code).toBe('daemon_destination_name_invalid');
  });
});
