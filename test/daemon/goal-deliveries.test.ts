/**
 * What a delivery's receiver did with it, said in the data the UI reads — from real Goal work runs
 * against the dev webhook sink, never from made-up documents. A Goal's delivery is stored once
 * (`stored`); delivering the same logical operation again sends nothing (`not_sent`, naming the
 * operation that delivered it); and when the root's effect journal no longer knows a delivery
 * (here its effects.db removed), the engine sends it again under the same logical idempotency key
 * and the receiver, which holds that key, replays it without storing it twice (`replayed`). Each
 * run's `ToolResulted` carries the result (`loopx run events --json`), the Goal's effects carry it
 * (`GET /api/goals/:id/activity`), and every document is valid against its published schema —
 * events recorded before the fields existed included.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { agentFile } from '../recovery/support/adopt.js';
import { REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { closeDaemon } from '../support/daemon.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };

const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(join(REPO, 'docs/schemas')).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(REPO, 'docs/schemas', f), 'utf8')) as Record<string, unknown>);
const errorsOf = (schema: string, doc: unknown) => {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${schema}.json`)!;
  return validate(doc) ? [] : validate.errors;
};

interface Ev {
  readonly type: string;
  readonly data: Record<string, unknown>;
}

let sink: WebhookSink;
let root: string;
let announce: string;
let publish: string;
const runs: Record<'first' | 'replayed' | 'again', string> = { first: '', replayed: '', again: '' };

async function workRun(agent: string): Promise<string> {
  const r = await loopxAsync([
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agent,
    '--sink',
    sink.deliveriesUrl,
    '--root',
    root,
    '--json',
  ]);
  expect(r.status, r.stderr).toBe(0);
  expect(r.json().status).toBe('completed');
  return r.json().run_id as string;
}

async function events(runId: string): Promise<Ev[]> {
  const r = await loopxAsync(['run', 'events', runId, '--root', root, '--json']);
  expect(r.status, r.stderr).toBe(0);
  const docs = r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Ev);
  for (const d of docs) expect(errorsOf('run-event', d), JSON.stringify(d)).toEqual([]);
  return docs;
}

const deliveries = async (runId: string) =>
  (await events(runId)).filter((e) => e.type === 'ToolResulted' && e.data.tool_name === 'webhook.deliver');
const op = (runId: string, turn: number) => `${runId}:t${turn}:k0`;

async function activity(): Promise<{ effects: Record<string, unknown>[] }> {
  const d: DaemonApp = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir: join(STATE_HOME, 'loopx', 'run-authority'),
    logger: false,
  });
  try {
    const res = await d.app.inject({ method: 'GET', url: '/api/goals/launch/activity', headers: AUTH });
    expect(res.statusCode, res.body).toBe(200);
    expect(errorsOf('daemon-goal-activity', res.json())).toEqual([]);
    return res.json();
  } finally {
    await closeDaemon(d);
  }
}

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  root = tempRoot('loopx-goal-deliveries-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
  const dir = dirname(root);
  announce = agentFile(dir, 'announce', [
    { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'the outline is ready' } }] },
    { text: 'Done.' },
  ]);
  publish = agentFile(dir, 'publish', [
    { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'the outline is ready' } }] },
    { text: 'Publishing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'the post is published' } }] },
    { text: 'Done.' },
  ]);
}, 60_000);
afterAll(async () => {
  await sink.close();
  if (root) rmSync(dirname(root), { recursive: true, force: true });
});

describe('what a receiver did with a Goal’s delivery, in its run’s events and the Goal’s activity', () => {
  it('a fresh delivery is `stored`: its run’s ToolResulted and the Goal’s effect say so', async () => {
    runs.first = await workRun(announce);
    expect(sink.deliveries()).toHaveLength(1);
    expect((await deliveries(runs.first)).map((e) => e.data)).toEqual([
      {
        call_id: `${runs.first}/t1/k0`,
        tool_name: 'webhook.deliver',
        status: 'ok',
        delivery_result: 'stored',
        duplicate_of: null,
      },
    ]);
    // Calls of other tools carry neither field.
    expect(
      (await events(runs.first)).filter((e) => e.type === 'ToolResulted' && e.data.tool_name !== 'webhook.deliver'),
    ).toEqual([]);
    expect((await activity()).effects).toEqual([
      expect.objectContaining({
        operation_id: op(runs.first, 1),
        outcome: 'committed',
        delivery_result: 'stored',
        duplicate_of: null,
      }),
    ]);
  }, 60_000);

  it('a delivery the receiver already holds under its key is `replayed`, never stored twice', async () => {
    // The effect journal loses what it delivered: the logical operation is unknown here now, so it is sent again, under the same key.
    for (const f of readdirSync(root).filter((n) => n.startsWith('effects.db'))) rmSync(join(root, f));
    runs.replayed = await workRun(announce);
    expect(sink.deliveries()).toHaveLength(1);
    expect(sink.attempts().counts.duplicate).toBe(1);
    expect((await deliveries(runs.replayed)).map((e) => e.data)).toEqual([
      {
        call_id: `${runs.replayed}/t1/k0`,
        tool_name: 'webhook.deliver',
        status: 'ok',
        delivery_result: 'replayed',
        duplicate_of: null,
      },
    ]);
    expect((await activity()).effects).toEqual([
      expect.objectContaining({
        operation_id: op(runs.replayed, 1),
        outcome: 'committed',
        delivery_result: 'replayed',
        duplicate_of: null,
      }),
    ]);
    // The first run's event keeps what the receiver did then: it was recorded when the call settled.
    expect((await deliveries(runs.first)).map((e) => e.data.delivery_result)).toEqual(['stored']);
  }, 60_000);

  it('a delivery whose logical operation the effect owner holds committed is `not_sent`, naming the operation that delivered it', async () => {
    runs.again = await workRun(publish);
    expect(sink.deliveries()).toHaveLength(2); // the new message only
    expect((await deliveries(runs.again)).map((e) => [e.data.delivery_result, e.data.duplicate_of])).toEqual([
      ['not_sent', op(runs.replayed, 1)],
      ['stored', null],
    ]);
    const effects = (await activity()).effects;
    expect(effects.map((e) => [e.operation_id, e.outcome, e.delivery_result, e.duplicate_of])).toEqual([
      [op(runs.replayed, 1), 'committed', 'replayed', null],
      [op(runs.again, 1), 'committed', 'not_sent', op(runs.replayed, 1)],
      [op(runs.again, 2), 'committed', 'stored', null],
    ]);
  }, 60_000);
});

describe('the published schemas of the two fields', () => {
  const toolResulted = (data: Record<string, unknown>) => ({
    run_id: 'run-a',
    sequence: 5,
    type: 'ToolResulted',
    at: '2025-06-01T10:00:00.000Z',
    data,
  });
  const base = { call_id: 'run-a/t1/k0', tool_name: 'webhook.deliver', status: 'ok' };

  it('an event recorded before them (neither field) is still valid', () => {
    expect(errorsOf('run-event', toolResulted(base))).toEqual([]);
    expect(errorsOf('run-event', toolResulted({ ...base, settled_by: 'effect_owner' }))).toEqual([]);
  });

  it('a half pair, an unknown result, a not_sent without its operation or a stored naming one is refused', () => {
    for (const bad of [
      { delivery_result: 'stored' },
      { duplicate_of: null },
      { delivery_result: 'sent', duplicate_of: null },
      { delivery_result: 'not_sent', duplicate_of: null },
      { delivery_result: 'stored', duplicate_of: 'run-b:t1:k0' },
    ])
      expect(errorsOf('run-event', toolResulted({ ...base, ...bad })), JSON.stringify(bad)).not.toEqual([]);
    expect(errorsOf('run-event', toolResulted({ ...base, delivery_result: null, duplicate_of: null }))).toEqual([]);
  });
});
