/**
 * What an audited backup holds, in the operator's terms (`GET /api/audits/:id/contents`), and the
 * audits listed by when they were made and from which source (`GET /api/audits`) — from a real
 * root made with the real CLI (a Goal with three Todos, a Goal work run that delivered a webhook
 * to a real receiver, a quiescent backup) verified through an in-process daemon twice: in place
 * as a backup of the root, and as an upload of the same pair. The answers name no absolute path,
 * the printed command reads the workspace as printed, the public summary stays redacted, and no
 * Goal title reaches the daemon's log.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { CLI, REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { closeDaemon } from '../support/daemon.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');
const TITLE = 'Ship the launch post';

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);
/** daemon-audit-contents.schema.json and daemon-audit-list.schema.json are exercised here. */
function expectValid(name: 'daemon-audit-contents' | 'daemon-audit-list', doc: unknown): void {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${name}.json`)!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
}

let root: string;
let sink: WebhookSink;
let d: DaemonApp;
const logs: string[] = [];
let inPlace: string;
let uploaded: string;

const get = (url: string, headers: Record<string, string> = AUTH) => d.app.inject({ method: 'GET', url, headers });
const app = () =>
  buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir,
    logger: { level: 'debug', stream: { write: (line: string) => void logs.push(line) } },
  });

/** Run a verify job to its end; its audit's recovery id. */
async function verified(started: { statusCode: number; body: string; json(): { job_id: string } }): Promise<string> {
  expect(started.statusCode, started.body).toBe(202);
  const jobId = started.json().job_id;
  await get(`/api/backups/jobs/${jobId}/events`);
  const job = (await get(`/api/backups/jobs/${jobId}`)).json();
  expect(job).toMatchObject({ state: 'held', error: null });
  return job.recovery_id as string;
}

async function verifyUpload(): Promise<string> {
  const { upload_id } = (await d.app.inject({ method: 'POST', url: '/api/backups/uploads', headers: AUTH })).json() as {
    upload_id: string;
  };
  for (const [part, file] of [
    ['archive', 'b1.tar.gz'],
    ['manifest', 'b1.manifest.json'],
  ] as const) {
    const r = await d.app.inject({
      method: 'PUT',
      url: `/api/backups/uploads/${upload_id}/${part}`,
      headers: { ...AUTH, 'content-type': 'application/octet-stream' },
      payload: readFileSync(join(root, 'backups', file)),
    });
    expect(r.statusCode, r.body).toBe(200);
  }
  return verified(
    await d.app.inject({ method: 'POST', url: `/api/backups/uploads/${upload_id}/verify`, headers: AUTH }),
  );
}

beforeAll(async () => {
  root = tempRoot('loopx-daemon-contents-');
  sink = await startWebhookSink({ port: 0, journalPath: join(dirname(root), 'receiver.jsonl') });
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', TITLE, '--root', root])).status).toBe(0);
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).status).toBe(0);
  const w = await loopxAsync([
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    join(REPO, 'examples/agents/goal-worker.json'),
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
  d = await app();
  inPlace = await verified(await d.app.inject({ method: 'POST', url: '/api/backups/b1/verify', headers: AUTH }));
  uploaded = await verifyUpload();
}, 240_000);

afterAll(() => closeDaemon(d, sink));

/** No absolute path of this machine: not the root's, its parent's, nor the temp directory's. */
function expectPathFree(text: string): void {
  for (const p of [root, dirname(root), tmpdir(), STATE_HOME]) expect(text).not.toContain(p);
  expect(text).not.toMatch(/"\//);
}

describe('an audit in the operator’s terms', () => {
  it('names the Goal by its id and title, with its lifecycle, Todos by status, committed history, runs and effects', async () => {
    const r = await get(`/api/audits/${inPlace}/contents`);
    expect(r.statusCode, r.body).toBe(200);
    const c = r.json();
    expectValid('daemon-audit-contents', c);
    expect(c).toMatchObject({
      recovery_id: inPlace,
      backup_id: 'b1',
      execution_authority_granted: false,
      runs_readable: true,
    });
    expect(c.goals).toHaveLength(1);
    const g = c.goals[0];
    expect(g).toMatchObject({ goal_id: 'launch', title: TITLE, lifecycle: 'active', activation_eligible: true });
    const rows: Record<string, { count: number; next_action: string }> = Object.fromEntries(
      (g.rows as { item: string; count: number; next_action: string }[]).map((x) => [x.item, x]),
    );
    expect(Object.keys(rows)).toEqual(['goal', 'todos', 'history', 'sessions', 'runs', 'effects']);
    // The agent finished the outline and blocked the review; publishing stayed open.
    expect(rows.todos).toMatchObject({
      count: 3,
      by_status: { done: 1, blocked: 1, open: 1 },
      owner: 'work',
      classification: 'recovered_readable',
    });
    // The committed history is the work store's, as the workspace reader counts it.
    const ls = (await get(`/api/audits/${inPlace}/workspace`)).json();
    expect(rows.history).toMatchObject({ owner: 'work', count: ls.goals[0].committed_transactions });
    expect(rows.history!.count).toBeGreaterThan(3);
    expect(rows.goal).toMatchObject({ owner: 'goal', count: 1, classification: 'recovered_readable' });
    expect(rows.runs).toMatchObject({
      owner: 'engine',
      count: 1,
      by_status: { completed: 1 },
      classification: 'historical_only',
    });
    expect(rows.effects).toMatchObject({
      owner: 'effect',
      count: 3,
      by_status: { committed: 3 },
      classification: 'historical_only',
    });
    expect(g.runs).toEqual([expect.objectContaining({ lifecycle: 'completed', definition_id: 'demo.goal-worker' })]);
    expect((g.effects as { kind: string }[]).map((e) => e.kind).sort()).toEqual([
      'webhook.deliver',
      'work.todo_update',
      'work.todo_update',
    ]);
    // Each row carries the audit component's classification and next action; an owner's hold, where one names it, is the next action.
    const audit = JSON.parse((await get(`/api/audits/${inPlace}/raw`)).body);
    for (const row of g.rows) {
      const comp = audit.components.find((x: { component_id: string }) => x.component_id === row.component_id);
      expect(comp, row.item).toBeDefined();
      expect(row.classification).toBe(comp.classification);
      expect(row.next_action).toBe(row.holds[0]?.next_action ?? comp.next_action);
    }
    expect(rows.sessions).toMatchObject({
      owner: 'session',
      count: 1,
      holds: [expect.objectContaining({ code: 'session_binding_historical', owner: 'session' })],
    });
    expect(rows.sessions!.next_action).toMatch(/readmit the session/);
    expect(c.holds).toEqual([expect.objectContaining({ code: 'session_binding_historical', goal_id: 'launch' })]);
  });

  it('names the components by owner and what they belong to, beside their ids', async () => {
    const c = (await get(`/api/audits/${inPlace}/contents`)).json();
    const summary = (await get(`/api/audits/${inPlace}`)).json();
    expect((c.components as { component_id: string }[]).map((x) => x.component_id)).toEqual(
      (summary.components as { component_id: string }[]).map((x) => x.component_id),
    );
    const work = c.components.find((x: { owner_kind: string }) => x.owner_kind === 'work');
    expect(work).toMatchObject({
      name: 'Goal launch: work',
      goal_id: 'launch',
      what: expect.stringContaining('Todos'),
    });
    expect(c.components.find((x: { owner_kind: string }) => x.owner_kind === 'session')).toMatchObject({
      name: 'whole root: session',
      goal_id: null,
    });
  });

  it('shows where the workspace lies relative to the root, and a command that reads it without changing it, as printed', async () => {
    const c = (await get(`/api/audits/${inPlace}/contents`)).json();
    expect(c.workspace.directory).toMatch(/^daemon\/recoveries\/job_[0-9a-f]{32}\/workspace$/);
    expect(existsSync(join(root, c.workspace.directory, 'runtime-root'))).toBe(true);
    expect(c.workspace.read_only).toBe(`in the root's directory: ${c.workspace.command}`);
    for (const command of [c.workspace.command, c.goals[0].read_command] as string[]) {
      const words = command.split(' ');
      expect(words[0]).toBe('loopx');
      const r = spawnSync(process.execPath, [...CLI, ...words.slice(1)], {
        cwd: root,
        env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(TITLE);
      expect(r.stdout).toContain('inert');
    }
  });

  it('names no absolute path; the public summary and the log stay free of the Goal', async () => {
    const contents = await get(`/api/audits/${inPlace}/contents`);
    expectPathFree(contents.body);
    expectPathFree((await get('/api/audits')).body);
    const summary = (await get(`/api/audits/${inPlace}`)).body;
    expect(summary).not.toContain(TITLE);
    expect(summary).not.toContain('"launch"');
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join('\n')).not.toContain(TITLE);
  });

  it('is for the token’s holder only, and an unknown audit is audit_not_found', async () => {
    expect((await get(`/api/audits/${inPlace}/contents`, { host: AUTH.host })).statusCode).toBe(401);
    const missing = await get(`/api/audits/${'0'.repeat(64)}/contents`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('audit_not_found');
  });
});

describe('audits listed by when they were made and from which source', () => {
  it('lists each audit newest verification first, with its source, the backup’s creation time and its Goals', async () => {
    const list = (await get('/api/audits')).json();
    expectValid('daemon-audit-list', list);
    const created = JSON.parse(readFileSync(join(root, 'backups', 'b1.manifest.json'), 'utf8')).created_at as string;
    expect(list.audits.map((a: { recovery_id: string }) => a.recovery_id)).toEqual([uploaded, inPlace]);
    expect(list.audits[0]).toMatchObject({
      source: { kind: 'upload', backup_id: 'b1', backup_created_at: created },
      goals: 1,
    });
    expect(list.audits[1]).toMatchObject({
      source: { kind: 'root_backup', backup_id: 'b1', backup_created_at: created },
      goals: 1,
    });
    expect(list.audits[0].verified_at >= list.audits[1].verified_at).toBe(true);
    expect(list.audits[1].verified_at >= created).toBe(true);
    const contents = (await get(`/api/audits/${uploaded}/contents`)).json();
    expect(contents).toMatchObject({ verified_at: list.audits[0].verified_at, source: { kind: 'upload' } });
  });

  it('a daemon started afresh on the same root still knows each audit’s source; a deleted audit takes its source record with it', async () => {
    await d.backups.close();
    await d.adoptions.close();
    await d.app.close();
    d = await app();
    const list = (await get('/api/audits')).json();
    expect(list.audits.map((a: { source: { kind: string } }) => a.source.kind)).toEqual(['upload', 'root_backup']);
    const del = await d.app.inject({
      method: 'DELETE',
      url: `/api/audits/${uploaded}`,
      headers: AUTH,
      payload: { confirm: uploaded },
    });
    expect(del.statusCode, del.body).toBe(204);
    expect((await get('/api/audits')).json().audits.map((a: { recovery_id: string }) => a.recovery_id)).toEqual([
      inPlace,
    ]);
    expect(readdirSync(join(root, 'daemon', 'audit-sources'))).toHaveLength(1);
  });
});
