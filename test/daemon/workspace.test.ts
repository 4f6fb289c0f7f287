/**
 * The daemon's recovery-workspace readback in-process (requests injected without a port):
 * `GET /api/audits/:id/workspace` and `…/workspace/goals/:goal` answer the documents of
 * `backup-state workspace ls|show --json` (the same library calls, validated against the same JSON
 * Schemas), refuse an unknown audit or Goal with a typed 404, name no path, and leave every byte
 * of the workspace as it was: a workspace is inert evidence, and reading it changes nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { seedSample } from '../../src/runtime/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { treeState } from '../support/tree.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);

function expectValid(name: string, doc: unknown): void {
  const { $id } = JSON.parse(readFileSync(join(SCHEMA_DIR, `${name}.schema.json`), 'utf8')) as { $id: string };
  const validate = ajv.getSchema($id)!;
  const ok = validate(doc);
  expect(ok ? [] : validate.errors, `${name}.schema.json rejects:\n${JSON.stringify(doc, null, 2)}`).toEqual([]);
}

let root: string;
let d: DaemonApp;
let recoveryId: string;
let sink: WebhookSink;
let destination: string;

const get = (url: string) => d.app.inject({ method: 'GET', url, headers: AUTH });

beforeAll(async () => {
  // The root `npm start` shows: Goal `sample`, three Todos worked by the scripted agent, one webhook delivery.
  root = tempRoot('loopx-daemon-workspace-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0); // and the run authority the seed's run needs
  sink = await startWebhookSink({ port: 0 });
  expect((await seedSample(root, { webhookUrl: sink.deliveriesUrl, authorityDir })).seeded).toBe(true);
  expect((await loopxAsync(['backup-state', '--execute', '--backup-id', 'w1', '--root', root])).status).toBe(0);
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir,
    logger: false,
  });
  const started = await d.app.inject({ method: 'POST', url: '/api/backups/w1/verify', headers: AUTH });
  expect(started.statusCode, started.body).toBe(202);
  const jobId = started.json().job_id as string;
  expect((await get(`/api/backups/jobs/${jobId}/events`)).body).toContain('event: result');
  const job = (await get(`/api/backups/jobs/${jobId}`)).json();
  expect(job).toMatchObject({ state: 'held', error: null });
  recoveryId = job.recovery_id;
  destination = join(root, 'daemon', 'recoveries', jobId);
}, 120_000);

afterAll(async () => {
  await sink?.close();
  await d?.backups.close();
  await d?.app.close();
});

describe('the workspace of an audit', () => {
  it('lists what the workspace holds — Goals with Todo counts and committed transactions, runs, sessions, effects by outcome — as backup-workspace-ls', async () => {
    const r = await get(`/api/audits/${recoveryId}/workspace`);
    expect(r.statusCode, r.body).toBe(200);
    const doc = r.json();
    expectValid('backup-workspace-ls', doc);
    expect(doc).toMatchObject({
      recovery_id: recoveryId,
      backup_id: 'w1',
      operator_state: 'audit_held',
      execution_authority_granted: false,
      runs_readable: true,
      sessions: 1,
    });
    expect(doc.goals).toEqual([
      expect.objectContaining({
        goal_id: 'sample',
        title: 'Ship the launch post',
        lifecycle: 'active',
        work_readable: true,
        todos_by_status: { done: 1, blocked: 1, open: 1 },
      }),
    ]);
    expect(doc.goals[0].committed_transactions).toBeGreaterThan(0);
    expect(doc.runs).toHaveLength(1);
    expect(doc.effects_by_outcome.committed).toBeGreaterThan(0);
    // The same library call as the command line: the same document.
    const cli = await loopxAsync(['backup-state', 'workspace', 'ls', destination, '--json']);
    expect(cli.status, cli.stderr).toBe(0);
    expect(doc).toEqual(cli.json());
  });

  it('shows one Goal with its Todos, sessions, the runs bound to them and its effects, as backup-workspace-show', async () => {
    const r = await get(`/api/audits/${recoveryId}/workspace/goals/sample`);
    expect(r.statusCode, r.body).toBe(200);
    const doc = r.json();
    expectValid('backup-workspace-show', doc);
    expect(doc).toMatchObject({
      recovery_id: recoveryId,
      execution_authority_granted: false,
      goal: { goal_id: 'sample', title: 'Ship the launch post' },
      work: { readable: true },
    });
    expect(doc.todos.map((t: { title: string }) => t.title)).toEqual([
      'Draft the outline',
      'Review with design',
      'Publish the post',
    ]);
    expect(doc.sessions).toHaveLength(1);
    expect(doc.runs.map((x: { run_id: string }) => x.run_id)).toEqual([doc.sessions[0].run_id]);
    expect(doc.effects).toContainEqual(
      expect.objectContaining({ kind: 'webhook.deliver', outcome: 'committed', hold: null }),
    );
    const cli = await loopxAsync(['backup-state', 'workspace', 'show', destination, '--goal', 'sample', '--json']);
    expect(cli.status, cli.stderr).toBe(0);
    expect(doc).toEqual(cli.json());
  });

  it('an unknown audit is a typed 404 on both routes; an unknown Goal is a typed 404 workspace_goal_not_found naming the listing route', async () => {
    for (const url of [
      `/api/audits/${'0'.repeat(64)}/workspace`,
      `/api/audits/${'0'.repeat(64)}/workspace/goals/sample`,
      '/api/audits/nope/workspace',
      '/api/audits/..%2F..%2Fetc/workspace',
    ]) {
      const r = await get(url);
      expect(r.statusCode, url).toBe(404);
      expect(r.json().error.code, url).toBe('audit_not_found');
      expectValid('error', r.json());
    }
    const missing = await get(`/api/audits/${recoveryId}/workspace/goals/nope`);
    expect(missing.statusCode).toBe(404);
    expectValid('error', missing.json());
    expect(missing.json().error).toMatchObject({
      code: 'workspace_goal_not_found',
      next_action: `list the workspace's Goals: GET /api/audits/${recoveryId}/workspace`,
    });
  });

  it('names no path: neither the root, the workspace nor any absolute path, in any answer', async () => {
    const bodies = await Promise.all(
      [
        `/api/audits/${recoveryId}/workspace`,
        `/api/audits/${recoveryId}/workspace/goals/sample`,
        `/api/audits/${recoveryId}/workspace/goals/nope`,
      ].map(async (u) => (await get(u)).body),
    );
    for (const body of bodies) {
      expect(body).not.toContain(dirname(root));
      expect(body).not.toContain(relative(process.cwd(), destination));
      expect(body).not.toContain(tmpdir());
      expect(body).not.toContain('runtime-root');
      // An absolute path outside the API's own routes.
      expect(body).not.toMatch(/(?<![A-Za-z0-9:])\/(?!api\/)[A-Za-z0-9._-]+\//);
    }
  });

  it('reading the workspace changes none of its bytes, names, modes or times', async () => {
    const before = treeState(destination);
    for (let i = 0; i < 2; i++) {
      expect((await get(`/api/audits/${recoveryId}/workspace`)).statusCode).toBe(200);
      expect((await get(`/api/audits/${recoveryId}/workspace/goals/sample`)).statusCode).toBe(200);
      expect((await get(`/api/audits/${recoveryId}/workspace/goals/nope`)).statusCode).toBe(404);
    }
    expect(treeState(destination)).toEqual(before);
  });
});
