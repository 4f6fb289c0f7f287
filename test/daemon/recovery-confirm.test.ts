/**
 * The daemon confirms the preview it served. It keeps the digest and the preview of the plan it
 * computed and answered with, every view of the recovery shows those — never the plan file's —
 * and an apply is refused unless it confirms that digest: a plan file edited between the preview
 * and the confirmation (its digest recomputed) is refused whether the served digest or the file's
 * is confirmed, and nothing runs. Restored, the served digest applies it.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { BEFORE, agentFile, type Doc } from '../recovery/support/adopt.js';
import { closeDaemon } from '../support/daemon.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

let root: string;
let sink: WebhookSink;
let d: DaemonApp;
let auditId: string;
let recoveryId: string;
let served: string;
let servedPreview: unknown;
let destination: string;
let original: Buffer;

const get = (url: string) => d.app.inject({ method: 'GET', url, headers: AUTH });
const post = (url: string, payload?: unknown) =>
  d.app.inject({
    method: 'POST',
    url,
    headers: AUTH,
    ...(payload !== undefined ? { payload: payload as object } : {}),
  });
const planPath = () => join(destination, 'recovery', 'plan.json');

/** The plan file rewritten by `edit`, its digest recomputed the way the file computes it; the new digest. */
function tamper(edit: (plan: Doc) => void): string {
  writeFileSync(planPath(), original);
  const plan = JSON.parse(original.toString('utf8'));
  delete plan.plan_digest;
  edit(plan);
  const digest = createHash('sha256').update(canonicalJson(plan)).digest('hex');
  writeFileSync(planPath(), `${JSON.stringify({ ...plan, plan_digest: digest }, null, 2)}\n`);
  return digest;
}

beforeAll(async () => {
  root = tempRoot('loopx-daemon-confirm-');
  sink = await startWebhookSink({ port: 0 });
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
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir,
    logger: false,
  });
  const started = await post('/api/backups/b1/verify');
  expect(started.statusCode, started.body).toBe(202);
  const jobId = started.json().job_id as string;
  await get(`/api/backups/jobs/${jobId}/events`);
  auditId = (await get(`/api/backups/jobs/${jobId}`)).json().recovery_id;
  const planned = await post(`/api/audits/${auditId}/recoveries`, { goal_id: 'launch', destination_name: 'confirmed' });
  expect(planned.statusCode, planned.body).toBe(201);
  recoveryId = planned.json().recovery_id;
  served = planned.json().plan_digest;
  servedPreview = planned.json().preview;
  destination = join(dirname(root), 'confirmed');
  original = readFileSync(planPath());
}, 180_000);

afterAll(() => closeDaemon(d, sink));

describe('the daemon confirms the digest of the preview it served', () => {
  it('shows the served digest and preview, never those of a plan file edited after it served them', async () => {
    const edited = tamper((p) => {
      p.preview.lost_or_unknown = [];
    });
    const view = (await get(`/api/recoveries/${recoveryId}`)).json();
    expect(view.status).toMatchObject({ state: 'adoption_prepared', plan_digest: served, preview: servedPreview });
    expect(JSON.stringify(view)).not.toContain(edited);
    // The daemon's own record of what it served is never listed.
    expect(Object.keys(view).sort()).toEqual([
      'applying_now',
      'audit_id',
      'created_at',
      'destination_name',
      'goal_id',
      'last_apply_error',
      'recovery_id',
      'status',
    ]);
  });

  it('a plan file without host:supersede (digest recomputed) is refused for the served digest and for the file’s: nothing runs', async () => {
    const edited = tamper((p) => {
      p.steps = p.steps.filter((x: { action: string }) => x.action !== 'host:supersede');
    });
    for (const confirm of [served, edited]) {
      const r = await post(`/api/recoveries/${recoveryId}/apply`, { confirm });
      expect(r.statusCode, r.body).toBe(422);
      expect(r.json().error.code).toBe('recover_plan_tampered');
      expect(r.body).not.toContain(dirname(root));
    }
    expect(readdirSync(destination)).toEqual(['recovery']);
    expect((await get(`/api/recoveries/${recoveryId}`)).json().status.state).toBe('adoption_prepared');
  });

  it('a preview edited after it was served (digest recomputed) is refused for the file’s digest and for the served one, whose refusal says to plan again', async () => {
    const edited = tamper((p) => {
      p.preview.lost_or_unknown = [];
    });
    const fileDigest = await post(`/api/recoveries/${recoveryId}/apply`, { confirm: edited });
    expect(fileDigest.statusCode, fileDigest.body).toBe(422);
    expect(fileDigest.json().error.code).toBe('recover_confirm_mismatch');
    expect(fileDigest.json().error.next_action).not.toContain(edited);
    const servedDigest = await post(`/api/recoveries/${recoveryId}/apply`, { confirm: served });
    expect(servedDigest.statusCode, servedDigest.body).toBe(422);
    expect(servedDigest.json().error).toMatchObject({
      code: 'recover_confirm_mismatch',
      next_action: expect.stringContaining('plan the recovery again'),
    });
    expect(servedDigest.body).not.toContain(dirname(root));
    expect(readdirSync(destination)).toEqual(['recovery']);
  });

  it('the plan as served, restored, is applied by the served digest: complete, both fences established', async () => {
    writeFileSync(planPath(), original);
    const r = await post(`/api/recoveries/${recoveryId}/apply`, { confirm: served });
    expect(r.statusCode, r.body).toBe(202);
    await d.adoptions.settled(recoveryId);
    const view = (await get(`/api/recoveries/${recoveryId}`)).json();
    expect(view).toMatchObject({
      last_apply_error: null,
      status: {
        state: 'complete',
        plan_digest: served,
        fences: { source_established: true, destination_established: true },
      },
    });
  }, 120_000);
});
