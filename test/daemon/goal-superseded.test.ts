/**
 * The daemon's Goal routes on a lifetime a recovery superseded, in-process (requests injected
 * without a port): after the daemon recovers Goal `launch` into a new root beside its own, the old
 * Goal — on its page and in the list — says where it continues (`superseded_by`: the new lifetime,
 * the root's id, and the name the daemon serves it under), naming no path; the Goal at that name
 * is the new lifetime, live; a Goal no recovery touched says null. Every answer is a
 * daemon-goal.schema.json document.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { BEFORE, agentFile } from '../recovery/support/adopt.js';
import { closeDaemon } from '../support/daemon.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);
/** A daemon-goal.schema.json document that names no path. */
function expectGoalDoc(doc: unknown): void {
  const validate = ajv.getSchema('https://loopx.dev/schemas/daemon-goal.json')!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
  expect(JSON.stringify(doc)).not.toContain(dirname(root));
}

let root: string;
let sink: WebhookSink;
let d: DaemonApp;
let name: string;
let oldLifetime: string;

const get = (url: string) => d.app.inject({ method: 'GET', url, headers: AUTH });
const post = (url: string, payload?: unknown) =>
  d.app.inject({
    method: 'POST',
    url,
    headers: AUTH,
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });

beforeAll(async () => {
  root = tempRoot('loopx-daemon-superseded-');
  sink = await startWebhookSink({ port: 0 });
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'notes', '--title', 'Keep the notes', '--root', root])).status).toBe(0);
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).status).toBe(0);
  const w = await loopxAsync([
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agentFile(dirname(root), 'before', BEFORE),
    '--sink',
    sink.deliveriesUrl,
    '--root',
    root,
  ]);
  expect(w.status, w.stderr).toBe(0);
  expect(
    (await loopxAsync(['backup-state', '--execute', '--profile', 'quiescent', '--backup-id', 'b1', '--root', root]))
      .status,
  ).toBe(0);
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir,
    logger: false,
  });
  oldLifetime = (await get('/api/goals/launch')).json().goal_instance_id;
  const started = await post('/api/backups/b1/verify');
  expect(started.statusCode, started.body).toBe(202);
  const jobId = started.json().job_id as string;
  await get(`/api/backups/jobs/${jobId}/events`);
  const auditId = (await get(`/api/backups/jobs/${jobId}`)).json().recovery_id as string;
  const plan = await post(`/api/audits/${auditId}/recoveries`, { goal_id: 'launch' });
  expect(plan.statusCode, plan.body).toBe(201);
  name = plan.json().destination_name;
  const applied = await post(`/api/recoveries/${plan.json().recovery_id}/apply`, { confirm: plan.json().plan_digest });
  expect(applied.statusCode, applied.body).toBe(202);
  await d.adoptions.settled(plan.json().recovery_id);
  expect((await get(`/api/recoveries/${plan.json().recovery_id}`)).json().status.state).toBe('complete');
}, 240_000);

afterAll(() => closeDaemon(d, sink));

describe('a Goal whose lifetime a recovery of this daemon superseded', () => {
  it('names the root it continues in by the name the daemon serves it under, and the new lifetime — no path', async () => {
    const r = await get('/api/goals/launch');
    expect(r.statusCode, r.body).toBe(200);
    const goal = r.json();
    expectGoalDoc(goal);
    expect(goal).toMatchObject({ goal_id: 'launch', goal_instance_id: oldLifetime, lifecycle: 'active' });
    expect(goal.superseded_by).toEqual({
      goal_instance_id: expect.stringMatching(/^ginst_[0-9a-f]{32}$/),
      root_id: expect.any(String),
      root: name,
      recovery_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      recorded_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(goal.superseded_by.goal_instance_id).not.toBe(oldLifetime);

    // The name serves the Goal's new lifetime there, live.
    const there = (await get(`/api/goals/launch?root=${encodeURIComponent(name)}`)).json();
    expectGoalDoc(there);
    expect(there).toMatchObject({
      goal_instance_id: goal.superseded_by.goal_instance_id,
      superseded_by: null,
      lineage: { supersedes: { goal_instance_id: oldLifetime } },
    });
  });

  it('says so in the Goals list too; a Goal no recovery touched says null', async () => {
    const list = (await get('/api/goals')).json();
    expectGoalDoc(list);
    const byId = Object.fromEntries(
      (list.goals as { goal_id: string; superseded_by: unknown }[]).map((g) => [g.goal_id, g.superseded_by]),
    );
    expect(byId.launch).toMatchObject({ root: name });
    expect(byId.notes).toBeNull();
    const recovered = (await get(`/api/goals?root=${encodeURIComponent(name)}`)).json();
    expectGoalDoc(recovered);
    expect(recovered.goals.map((g: { superseded_by: unknown }) => g.superseded_by)).toEqual([null]);
  });

  it('still refuses its writers, as the page’s disabled controls say', async () => {
    const r = await post('/api/goals/launch/todos', { title: 'From the old lifetime' });
    expect(r.statusCode).toBe(409);
    expect(r.json().error.code).toBe('goal_lifetime_superseded');
  });
});
