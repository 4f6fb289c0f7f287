/**
 * Recovering a Goal from the daemon, in-process (requests injected without a port), through the
 * same library calls as `loopx recover`: a proposed destination name beside the daemon's root,
 * the plan with its preview and digest, the confirmed apply in the background with its state read
 * back from the journal, a hold while the receiver is down settled once it is back, the refusals
 * (a name that is not one plain directory, an occupied destination, a wrong digest, a lifetime
 * already recovered) — and the state found again by a daemon started afresh on the same root.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { basename, dirname, join } from 'node:path';
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
/** Every recovery the daemon answers with is a daemon-recovery.schema.json document, naming no path. */
function expectRecovery(doc: unknown): void {
  const validate = ajv.getSchema('https://loopx.dev/schemas/daemon-recovery.json')!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
  expect(JSON.stringify(doc)).not.toContain(dirname(root));
}

let root: string;
let sink: WebhookSink;
let sinkJournal: string;
let d: DaemonApp;
let auditId: string;
let recoveryId: string;
let digest: string;
let name: string;

const get = (url: string) => d.app.inject({ method: 'GET', url, headers: AUTH });
const post = (url: string, payload?: unknown) =>
  d.app.inject({
    method: 'POST',
    url,
    headers: AUTH,
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });
const app = () =>
  buildApp({ root, token: TOKEN, loginTokens: new LoginTokens(), port: () => 80, authorityDir, logger: false });

beforeAll(async () => {
  root = tempRoot('loopx-daemon-recover-');
  sinkJournal = join(dirname(root), 'receiver.jsonl');
  sink = await startWebhookSink({ port: 0, journalPath: sinkJournal });
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
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
  d = await app();
  const started = await post('/api/backups/b1/verify');
  expect(started.statusCode, started.body).toBe(202);
  const jobId = started.json().job_id as string;
  await get(`/api/backups/jobs/${jobId}/events`);
  const job = (await get(`/api/backups/jobs/${jobId}`)).json();
  // Held only by the sessions' historical binding, which ordinary admission settles: adoptable.
  expect(job).toMatchObject({ state: 'held', error: null });
  auditId = job.recovery_id;
  // Its next action is the step that settles those holds — recovering a Goal into a new root — not an owner's internal step.
  const summary = (await get(`/api/audits/${auditId}`)).json();
  expect(summary.next_action).toMatch(
    /^readmit the session by recovering its Goal into a new root with loopx recover plan;/,
  );
}, 180_000);

afterAll(() => closeDaemon(d, sink));

describe('recovering a Goal from the daemon', () => {
  it('proposes a free destination name beside the daemon’s root, and creates nothing', async () => {
    const r = await get(`/api/audits/${auditId}/recoveries/proposal?goal=launch`);
    expect(r.statusCode, r.body).toBe(200);
    name = r.json().destination_name;
    expect(name).toBe(`${basename(root)}-launch-recovered`);
    expect(existsSync(join(dirname(root), name))).toBe(false);
  });

  it('refuses a name that is not one plain directory, an occupied destination, and a Goal the backup does not hold', async () => {
    for (const bad of ['../escape', '.hidden', 'a/b', '']) {
      const r = await post(`/api/audits/${auditId}/recoveries`, { goal_id: 'launch', destination_name: bad });
      expect(r.statusCode, bad).toBe(400);
      expect(['daemon_destination_name_invalid', 'daemon_field_invalid']).toContain(r.json().error.code);
    }
    expect(existsSync(join(dirname(root), 'escape'))).toBe(false);
    mkdirSync(join(dirname(root), 'occupied'), { mode: 0o700 });
    writeFileSync(join(dirname(root), 'occupied', 'keep.txt'), 'mine');
    const occupied = await post(`/api/audits/${auditId}/recoveries`, {
      goal_id: 'launch',
      destination_name: 'occupied',
    });
    expect(occupied.statusCode).toBe(409);
    expect(occupied.json().error.code).toBe('recover_destination_not_empty');
    const nope = await post(`/api/audits/${auditId}/recoveries`, {
      goal_id: 'nope',
      destination_name: 'nope-recovered',
    });
    expect(nope.statusCode).toBe(404);
    expect(nope.json().error.code).toBe('recover_goal_not_in_backup');
    expect((await get('/api/recoveries')).json().recoveries).toEqual([]);
  });

  it('plans with the preview and the digest; the list shows it prepared, naming no path', async () => {
    const r = await post(`/api/audits/${auditId}/recoveries`, { goal_id: 'launch', destination_name: name });
    expect(r.statusCode, r.body).toBe(201);
    const plan = r.json();
    recoveryId = plan.recovery_id;
    digest = plan.plan_digest;
    expect(plan).toMatchObject({
      destination_name: name,
      execution_authority_granted: false,
      goal: { goal_id: 'launch' },
    });
    expect(plan.preview.recovered_readable.join('\n')).toMatch(/Todos: 1 done, 1 blocked, 1 open/);
    const list = (await get('/api/recoveries')).json();
    expect(list.recoveries).toHaveLength(1);
    expectRecovery(list.recoveries[0]);
    expect(list.recoveries[0]).toMatchObject({
      recovery_id: recoveryId,
      goal_id: 'launch',
      destination_name: name,
      applying_now: false,
      status: { state: 'adoption_prepared' },
    });
    expect(JSON.stringify(list) + r.body).not.toContain(dirname(root));
  });

  it('refuses a digest that is not the plan’s, before anything runs', async () => {
    const r = await post(`/api/recoveries/${recoveryId}/apply`, { confirm: '0'.repeat(64) });
    expect(r.statusCode).toBe(422);
    expect(r.json().error.code).toBe('recover_confirm_mismatch');
    expect(r.body).not.toContain(dirname(root));
    expect((await get(`/api/recoveries/${recoveryId}`)).json().status.state).toBe('adoption_prepared');
  });

  it('applies in the background; with the receiver down it holds, and each hold resolves once the receiver is back', async () => {
    const port = sink.port;
    await sink.close();
    const r = await post(`/api/recoveries/${recoveryId}/apply`, { confirm: digest });
    expect(r.statusCode, r.body).toBe(202);
    await d.adoptions.settled(recoveryId);
    const held = (await get(`/api/recoveries/${recoveryId}`)).json();
    expect(held).toMatchObject({
      applying_now: false,
      last_apply_error: null,
      status: { state: 'reconciliation_held' },
    });
    expect(held.status.holds.length).toBeGreaterThan(0);
    expectRecovery(held);
    for (const h of held.status.holds) expect(h).toMatchObject({ owner: 'effect', continuation: expect.any(String) });
    sink = await startWebhookSink({ port, journalPath: sinkJournal });
    let last = held;
    for (const h of held.status.holds) {
      const resolved = await post(`/api/recoveries/${recoveryId}/holds/${encodeURIComponent(h.hold_id)}/resolve`, {});
      expect(resolved.statusCode, resolved.body).toBe(200);
      last = resolved.json();
    }
    expectRecovery(last);
    expect(last.status).toMatchObject({
      state: 'complete',
      fences: { source_established: true, destination_established: true },
    });
    // The new root is beside the daemon's: the CLI reads the Goal there under its new lifetime.
    const shown = await loopxAsync(['goal', 'show', 'launch', '--root', join(dirname(root), name), '--json']);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.json().goal_instance_id).toBe(last.status.goal.new_instance_id);
  }, 120_000);

  it('refuses a second recovery of the lifetime already recovered, at apply, before anything runs', async () => {
    const second = await post(`/api/audits/${auditId}/recoveries`, { goal_id: 'launch' });
    expect(second.statusCode, second.body).toBe(201);
    const r = await post(`/api/recoveries/${second.json().recovery_id}/apply`, { confirm: second.json().plan_digest });
    expect(r.statusCode).toBe(409);
    expect(r.json().error.code).toBe('recover_lifetime_superseded_elsewhere');
  });

  it('deletes an audit only by its recovery id, and only while no live recovery uses its workspace', async () => {
    const del = (id: string, confirm: string) =>
      d.app.inject({ method: 'DELETE', url: `/api/audits/${id}`, headers: AUTH, payload: { confirm } });
    const used = await del(auditId, auditId);
    expect(used.statusCode).toBe(409);
    expect(used.json().error.code).toBe('daemon_audit_in_use');
    expect((await get(`/api/audits/${auditId}`)).statusCode).toBe(200);
    const started = await post('/api/backups/b1/verify');
    const jobId = started.json().job_id as string;
    await get(`/api/backups/jobs/${jobId}/events`);
    const other = (await get(`/api/backups/jobs/${jobId}`)).json().recovery_id as string;
    const wrong = await del(other, auditId);
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().error.code).toBe('daemon_audit_confirm_mismatch');
    expect((await get(`/api/audits/${other}`)).statusCode).toBe(200);
    expect((await del(other, other)).statusCode).toBe(204);
    expect((await get(`/api/audits/${other}`)).json().error.code).toBe('audit_not_found');
    expect((await get('/api/audits')).json().audits.map((a: { recovery_id: string }) => a.recovery_id)).toEqual([
      auditId,
    ]);
    expect(existsSync(join(root, 'daemon', 'recoveries', jobId))).toBe(false);
  });

  it('a daemon on the new root shows the Goal as a new lifetime of the same lineage, superseding the recovered one', async () => {
    const recovered = await buildApp({
      root: join(dirname(root), name),
      token: TOKEN,
      loginTokens: new LoginTokens(),
      port: () => 80,
      authorityDir,
      logger: false,
    });
    try {
      const r = await recovered.app.inject({ method: 'GET', url: '/api/goals/launch', headers: AUTH });
      expect(r.statusCode, r.body).toBe(200);
      const status = (await get(`/api/recoveries/${recoveryId}`)).json().status;
      expect(r.json()).toMatchObject({
        goal_instance_id: status.goal.new_instance_id,
        lineage: {
          generation: 2,
          supersedes: { goal_instance_id: status.goal.recovered_instance_id, recovery_id: recoveryId },
        },
      });
      const own = (await get('/api/goals/launch')).json();
      expect(own.lineage).toBeNull();
    } finally {
      await recovered.backups.close();
      await recovered.app.close();
    }
  });

  it('is found again, complete, by a daemon started afresh on the same root', async () => {
    const again = await app();
    try {
      const r = await again.app.inject({ method: 'GET', url: `/api/recoveries/${recoveryId}`, headers: AUTH });
      expect(r.statusCode, r.body).toBe(200);
      expect(r.json()).toMatchObject({
        recovery_id: recoveryId,
        destination_name: name,
        status: { state: 'complete' },
      });
      const missing = await again.app.inject({
        method: 'GET',
        url: `/api/recoveries/${'f'.repeat(64)}`,
        headers: AUTH,
      });
      expect(missing.statusCode).toBe(404);
      expect(missing.json().error.code).toBe('daemon_recovery_not_found');
    } finally {
      await again.backups.close();
      await again.app.close();
    }
  });
});
