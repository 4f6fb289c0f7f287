/**
 * The daemon's API in-process (requests injected without a port): every route's success and its
 * refusals, the guards (401 without the bearer token, 403 for a foreign Host or Origin, a one-time
 * login token), uploads streamed under the verifier's limits (413, nothing left staged), verify
 * jobs and immutable audit readback (the same bytes and digest as on disk).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, MAX_PENDING_UPLOADS, type DaemonApp } from '../../src/daemon/index.js';
import { BackupService } from '../../src/daemon/backups.js';
import { PassThrough } from 'node:stream';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { cliFromSources, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

cliFromSources();

const TOKEN = 'test-token-0123456789';
const HOST = { host: '127.0.0.1:80' };
const AUTH = { ...HOST, authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

let sink: WebhookSink;
let root: string;
let archive: Buffer;
let manifest: Buffer;
let d: DaemonApp;
let login: LoginTokens;
let suspendedRun: string;

async function appFor(r: string): Promise<{ d: DaemonApp; login: LoginTokens }> {
  const l = new LoginTokens();
  return {
    d: await buildApp({ root: r, token: TOKEN, loginTokens: l, port: () => 80, authorityDir, logger: false }),
    login: l,
  };
}

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  root = tempRoot('loopx-daemon-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).status).toBe(0);
  const run = await loopxAsync([
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    'examples/agents/goal-worker.json',
    '--sink',
    sink.deliveriesUrl,
    '--root',
    root,
    '--json',
  ]);
  expect(run.status, run.stderr).toBe(0);
  const started = await loopxAsync([
    'run',
    'start',
    '--agent',
    'examples/agents/researcher.json',
    '--suspend-after-turns',
    '1',
    '--root',
    root,
    '--json',
  ]);
  expect(started.status, started.stderr).toBe(0);
  suspendedRun = started.json().run_id;
  const out = join(dirname(root), 'out');
  expect(
    (await loopxAsync(['backup-state', '--execute', '--output-dir', out, '--backup-id', 'b1', '--root', root])).status,
  ).toBe(0);
  archive = readFileSync(join(out, 'b1.tar.gz'));
  manifest = readFileSync(join(out, 'b1.manifest.json'));
  ({ d, login } = await appFor(root));
}, 120_000);

afterAll(async () => {
  await d?.backups.close();
  await d?.app.close();
  await sink.close();
});

const inject = (
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  extra: { headers?: Record<string, string>; payload?: unknown } = {},
) =>
  d.app.inject({
    method,
    url,
    headers: { ...AUTH, ...(extra.headers ?? {}) },
    ...(extra.payload !== undefined ? { payload: extra.payload as string } : {}),
  });
const octet = { 'content-type': 'application/octet-stream' };

describe('guards', () => {
  it('refuses an API request without the bearer token (401) or with a wrong one', async () => {
    const none = await d.app.inject({ method: 'GET', url: '/api/runs', headers: HOST });
    expect(none.statusCode).toBe(401);
    expect(none.json().error.code).toBe('daemon_unauthorized');
    const wrong = await d.app.inject({
      method: 'GET',
      url: '/api/runs',
      headers: { ...HOST, authorization: 'Bearer nope' },
    });
    expect(wrong.statusCode).toBe(401);
  });

  it('refuses a foreign Host (403) and a foreign Origin (403), even with the token (DNS rebinding)', async () => {
    const host = await d.app.inject({ method: 'GET', url: '/api/runs', headers: { ...AUTH, host: 'evil.example:80' } });
    expect(host.statusCode).toBe(403);
    expect(host.json().error.code).toBe('daemon_forbidden_host');
    const port = await d.app.inject({ method: 'GET', url: '/api/runs', headers: { ...AUTH, host: '127.0.0.1:81' } });
    expect(port.statusCode).toBe(403);
    const origin = await d.app.inject({
      method: 'GET',
      url: '/api/runs',
      headers: { ...AUTH, origin: 'http://evil.example' },
    });
    expect(origin.statusCode).toBe(403);
    expect(origin.json().error.code).toBe('daemon_forbidden_origin');
    const same = await d.app.inject({
      method: 'GET',
      url: '/api/runs',
      headers: { ...AUTH, origin: 'http://127.0.0.1:80' },
    });
    expect(same.statusCode).toBe(200);
  });

  it('exchanges a login token exactly once', async () => {
    const t = login.issue();
    const first = await d.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: HOST,
      payload: { login_token: t },
    });
    expect(first.statusCode).toBe(200);
    expect(first.json().token).toBe(TOKEN);
    const again = await d.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: HOST,
      payload: { login_token: t },
    });
    expect(again.statusCode).toBe(401);
    expect(again.json().error.code).toBe('daemon_login_invalid');
    const bad = await d.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: HOST,
      payload: { login_token: 42 },
    });
    expect(bad.statusCode).toBe(401);
  });

  it('issues another one-time login address to a bearer of the token only; it exchanges once', async () => {
    const refused = await d.app.inject({ method: 'POST', url: '/api/session/login-urls', headers: HOST });
    expect(refused.statusCode).toBe(401);
    const issued = await d.app.inject({ method: 'POST', url: '/api/session/login-urls', headers: AUTH });
    expect(issued.statusCode).toBe(201);
    const url = issued.json().login_url as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:80\/#login=[A-Za-z0-9_-]{43}$/);
    const t = url.split('#login=')[1];
    expect(
      (await d.app.inject({ method: 'POST', url: '/api/session', headers: HOST, payload: { login_token: t } }))
        .statusCode,
    ).toBe(200);
    const again = await d.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: HOST,
      payload: { login_token: t },
    });
    expect(again.json().error).toMatchObject({
      code: 'daemon_login_invalid',
      next_action: 'print a new login address: loopx daemon login-url',
    });
  });

  it('answers unknown API routes with a typed 404 and sets no-sniff and frame headers', async () => {
    const r = await inject('GET', '/api/nothing');
    expect(r.statusCode).toBe(404);
    expect(r.json().error.code).toBe('daemon_route_not_found');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['x-frame-options']).toBe('DENY');
  });

  it('health names the root by id, never by path', async () => {
    const r = await inject('GET', '/api/health');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ ok: true });
    expect(r.body).not.toContain(root);
  });
});

describe('runs', () => {
  it('lists and shows runs; an unknown run is a typed 404', async () => {
    const list = await inject('GET', '/api/runs');
    expect(list.statusCode).toBe(200);
    expect(list.json().runs.map((r: { run_id: string }) => r.run_id)).toContain(suspendedRun);
    const show = await inject('GET', `/api/runs/${suspendedRun}`);
    expect(show.statusCode).toBe(200);
    expect(show.json()).toMatchObject({ run_id: suspendedRun, status: 'suspended' });
    const missing = await inject('GET', '/api/runs/run_nope');
    expect(missing.statusCode).toBe(404);
  });

  it('streams events as server-sent events, resumable from a cursor (Last-Event-ID or ?after)', async () => {
    const all = await inject('GET', `/api/runs/${suspendedRun}/events`);
    expect(all.statusCode).toBe(200);
    expect(all.headers['content-type']).toContain('text/event-stream');
    const ids = [...all.body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids.length).toBeGreaterThan(2);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const resumed = await inject('GET', `/api/runs/${suspendedRun}/events`, {
      headers: { 'last-event-id': String(ids[1]) },
    });
    expect([...resumed.body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual(ids.slice(2));
    const after = await inject('GET', `/api/runs/${suspendedRun}/events?after=${ids.at(-2)}`);
    expect([...after.body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual(ids.slice(-1));
    const bad = await inject('GET', `/api/runs/${suspendedRun}/events?after=x`);
    expect(bad.statusCode).toBe(400);
    const missing = await inject('GET', '/api/runs/run_nope/events');
    expect(missing.statusCode).toBe(404);
  });

  it('exports a suspended run as signed bytes and imports them into another root; a re-import is refused', async () => {
    const exported = await inject('POST', `/api/runs/${suspendedRun}/export`);
    expect(exported.statusCode, exported.body).toBe(200);
    const bytes = exported.rawPayload;
    expect(exported.headers['x-loopx-sha256']).toBe(createHash('sha256').update(bytes).digest('hex'));
    const other = tempRoot('loopx-daemon-import-');
    expect((await loopxAsync(['init', '--root', other])).status).toBe(0);
    const o = await appFor(other);
    try {
      const imported = await o.d.app.inject({
        method: 'POST',
        url: '/api/runs/import',
        headers: { ...AUTH, ...octet },
        payload: bytes,
      });
      expect(imported.statusCode, imported.body).toBe(200);
      expect(imported.json()).toMatchObject({ run_id: suspendedRun, status: 'suspended' });
      const again = await o.d.app.inject({
        method: 'POST',
        url: '/api/runs/import',
        headers: { ...AUTH, ...octet },
        payload: bytes,
      });
      expect(again.statusCode).toBeGreaterThanOrEqual(400);
      expect(again.json().error.code).toMatch(/^[a-z_]+$/);
      const resumed = await o.d.app.inject({
        method: 'POST',
        url: `/api/runs/${suspendedRun}/resume`,
        headers: AUTH,
        payload: { turns: 1 },
      });
      expect(resumed.statusCode, resumed.body).toBe(200);
      const suspended = await o.d.app.inject({
        method: 'POST',
        url: `/api/runs/${suspendedRun}/suspend`,
        headers: AUTH,
      });
      expect(suspended.statusCode, suspended.body).toBeLessThan(500);
    } finally {
      await o.d.app.close();
    }
    for (const path of ['/api/runs/run_nope/export', '/api/runs/run_nope/suspend', '/api/runs/run_nope/resume']) {
      const r = await inject('POST', path);
      expect(r.statusCode, path).toBe(404);
      expect(r.json().error.code).toMatch(/^[a-z_]+$/);
    }
    const badTurns = await inject('POST', `/api/runs/${suspendedRun}/resume`, { payload: { turns: 0 } });
    expect(badTurns.statusCode).toBe(400);
    const notSnapshot = await inject('POST', '/api/runs/import', {
      headers: octet,
      payload: Buffer.from('not a snapshot'),
    });
    expect(notSnapshot.statusCode).toBe(422);
    const notOctet = await inject('POST', '/api/runs/import', { payload: { x: 1 } });
    expect(notOctet.statusCode).toBe(400);
  }, 60_000);
});

describe('goals', () => {
  it('lists Goals and shows one with its Todos; an unknown Goal is a typed 404', async () => {
    const list = await inject('GET', '/api/goals');
    expect(list.statusCode).toBe(200);
    expect(list.json().goals.map((g: { goal_id: string }) => g.goal_id)).toEqual(['launch']);
    const show = await inject('GET', '/api/goals/launch');
    expect(show.statusCode).toBe(200);
    expect(show.json().todos).toHaveLength(3);
    expect(show.json().counts.done).toBeGreaterThan(0);
    const missing = await inject('GET', '/api/goals/nope');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('goal_not_found');
  });
});

describe('backups', () => {
  const upload = async (a: Buffer, m: Buffer): Promise<string> => {
    const created = await inject('POST', '/api/backups/uploads');
    expect(created.statusCode).toBe(201);
    const id = created.json().upload_id as string;
    const pa = await inject('PUT', `/api/backups/uploads/${id}/archive`, { headers: octet, payload: a });
    expect(pa.statusCode, pa.body).toBe(200);
    expect(pa.json()).toEqual({ bytes: a.length, sha256: createHash('sha256').update(a).digest('hex') });
    const pm = await inject('PUT', `/api/backups/uploads/${id}/manifest`, { headers: octet, payload: m });
    expect(pm.statusCode).toBe(200);
    return id;
  };
  const finished = async (jobId: string) => {
    const events = await inject('GET', `/api/backups/jobs/${jobId}/events`);
    expect(events.headers['content-type']).toContain('text/event-stream');
    expect(events.body).toContain('event: result');
    const job = await inject('GET', `/api/backups/jobs/${jobId}`);
    return { job: job.json(), events: events.body };
  };

  it('uploads, verifies into a new inert workspace and reads the audit back immutably', async () => {
    const id = await upload(archive, manifest);
    const started = await inject('POST', `/api/backups/uploads/${id}/verify`);
    expect(started.statusCode).toBe(202);
    const { job, events } = await finished(started.json().job_id);
    expect(job).toMatchObject({ state: 'held', error: null });
    expect(existsSync(join(root, 'daemon', 'uploads', id)), 'the upload is removed once its job ends').toBe(false);
    expect(events).toContain('event: progress');
    const list = await inject('GET', '/api/audits');
    const item = list.json().audits.find((a: { recovery_id: string }) => a.recovery_id === job.recovery_id);
    expect(item).toMatchObject({ backup_id: 'b1', phase: 'held', execution_authority_granted: false });
    const summary = await inject('GET', `/api/audits/${job.recovery_id}`);
    expect(summary.statusCode).toBe(200);
    expect(summary.json()).toMatchObject({ recovery_id: job.recovery_id, execution_authority_granted: false });
    expect(summary.body).not.toContain('runtime-root/');
    const raw = await inject('GET', `/api/audits/${job.recovery_id}/raw`);
    const onDisk = readFileSync(join(root, 'daemon', 'recoveries', started.json().job_id, 'recovery-audit.json'));
    expect(Buffer.compare(raw.rawPayload, onDisk)).toBe(0);
    expect(raw.headers['x-loopx-sha256']).toBe(createHash('sha256').update(onDisk).digest('hex'));
    expect(raw.headers.etag).toBe(`"${raw.headers['x-loopx-sha256']}"`);
  }, 60_000);

  it('a tampered archive ends in a refused job with its typed reason, and no audit', async () => {
    const tampered = Buffer.from(archive);
    tampered[tampered.length >> 1] = tampered[tampered.length >> 1]! ^ 0xff;
    const id = await upload(tampered, manifest);
    const before = (await inject('GET', '/api/audits')).json().audits.length;
    const { job } = await finished((await inject('POST', `/api/backups/uploads/${id}/verify`)).json().job_id);
    expect(job).toMatchObject({ state: 'refused', recovery_id: null });
    expect(job.error).toMatchObject({ code: 'verify_archive_digest_mismatch' });
    expect(job.error.next_action.length).toBeGreaterThan(0);
    expect((await inject('GET', '/api/audits')).json().audits.length).toBe(before);
  }, 60_000);

  it("lists this root's own backups and verifies one where it lies (no upload); an unknown one is a typed 404", async () => {
    expect((await loopxAsync(['backup-state', '--execute', '--backup-id', 'in-root', '--root', root])).status).toBe(0);
    const list = await inject('GET', '/api/backups');
    expect(list.statusCode).toBe(200);
    expect(list.json().backups).toEqual([
      {
        location: 'root',
        backup_id: 'in-root',
        archive_bytes: readFileSync(join(root, 'backups', 'in-root.tar.gz')).length,
      },
    ]);
    const started = await inject('POST', '/api/backups/in-root/verify');
    expect(started.statusCode).toBe(202);
    const { job } = await finished(started.json().job_id);
    expect(job).toMatchObject({ state: 'held', upload_id: null, backup_id: 'in-root', error: null });
    for (const bad of ['nope', '..%2F..%2Fetc', '.hidden']) {
      const r = await inject('POST', `/api/backups/${bad}/verify`);
      expect(r.statusCode, bad).toBe(404);
    }
  }, 60_000);

  it('refuses an upload over its limit with 413 and keeps nothing staged', async () => {
    const created = await inject('POST', '/api/backups/uploads');
    const id = created.json().upload_id as string;
    const big = Buffer.alloc(16 * 1024 * 1024 + 1, 0x20);
    const r = await inject('PUT', `/api/backups/uploads/${id}/manifest`, { headers: octet, payload: big });
    expect(r.statusCode).toBe(413);
    expect(r.json().error.code).toBe('daemon_upload_too_large');
    expect(existsSync(join(root, 'daemon', 'uploads', id))).toBe(false);
    expect(readdirSync(join(root, 'daemon', 'uploads')).filter((n) => n === id)).toEqual([]);
  }, 60_000);

  it('lists waiting uploads and discards one; an upload being verified can be neither discarded nor verified twice', async () => {
    const id = (await inject('POST', '/api/backups/uploads')).json().upload_id as string;
    expect(
      (await inject('PUT', `/api/backups/uploads/${id}/manifest`, { headers: octet, payload: manifest })).statusCode,
    ).toBe(200);
    const listed = await inject('GET', '/api/backups/uploads');
    expect(listed.statusCode).toBe(200);
    expect(listed.json().uploads).toContainEqual({
      upload_id: id,
      archive_bytes: null,
      manifest_bytes: manifest.length,
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const gone = await inject('DELETE', `/api/backups/uploads/${id}`);
    expect(gone.statusCode).toBe(204);
    expect(existsSync(join(root, 'daemon', 'uploads', id))).toBe(false);
    expect(
      (await inject('GET', '/api/backups/uploads')).json().uploads.map((u: { upload_id: string }) => u.upload_id),
    ).not.toContain(id);
    expect((await inject('DELETE', `/api/backups/uploads/${id}`)).json().error.code).toBe('daemon_upload_not_found');
    expect((await inject('DELETE', '/api/backups/uploads/..%2F..%2Fbackups')).statusCode).toBe(404);

    process.env.LOOPX_TEST_WORKER_HANG = '1';
    process.env.LOOPX_TEST_WORKER_TIMEOUT_MS = '1500';
    try {
      const busy = await upload(archive, manifest);
      const started = await inject('POST', `/api/backups/uploads/${busy}/verify`);
      expect(started.statusCode).toBe(202);
      const del = await inject('DELETE', `/api/backups/uploads/${busy}`);
      expect(del.statusCode).toBe(409);
      expect(del.json().error).toMatchObject({ code: 'daemon_upload_in_use', next_action: expect.any(String) });
      const twice = await inject('POST', `/api/backups/uploads/${busy}/verify`);
      expect(twice.statusCode).toBe(409);
      expect(twice.json().error.code).toBe('daemon_upload_in_use');
      const { job } = await finished(started.json().job_id);
      expect(job.state).toBe('refused');
      expect(existsSync(join(root, 'daemon', 'uploads', busy))).toBe(false);
    } finally {
      delete process.env.LOOPX_TEST_WORKER_HANG;
      delete process.env.LOOPX_TEST_WORKER_TIMEOUT_MS;
    }
  }, 60_000);

  it('an upload receiving a part can be neither discarded nor verified until the part has arrived', async () => {
    const id = (await inject('POST', '/api/backups/uploads')).json().upload_id as string;
    expect(
      (await inject('PUT', `/api/backups/uploads/${id}/manifest`, { headers: octet, payload: manifest })).statusCode,
    ).toBe(200);
    const body = new PassThrough();
    const put = d.app.inject({
      method: 'PUT',
      url: `/api/backups/uploads/${id}/archive`,
      headers: { ...AUTH, ...octet },
      payload: body,
    });
    body.write(archive.subarray(0, 1024));
    // Wait until the daemon is streaming the part into its file.
    for (let i = 0; i < 200 && !existsSync(join(root, 'daemon', 'uploads', id, 'backup.tar.gz')); i++)
      await new Promise((r) => setTimeout(r, 10));
    const del = await inject('DELETE', `/api/backups/uploads/${id}`);
    expect(del.statusCode).toBe(409);
    expect(del.json().error).toMatchObject({ code: 'daemon_upload_in_use', next_action: expect.any(String) });
    const early = await inject('POST', `/api/backups/uploads/${id}/verify`);
    expect(early.statusCode).toBe(409);
    expect(early.json().error.code).toBe('daemon_upload_in_use');
    body.end(archive.subarray(1024));
    const done = await put;
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json().bytes).toBe(archive.length);
    expect((await inject('DELETE', `/api/backups/uploads/${id}`)).statusCode).toBe(204);
  }, 60_000);

  it('a stopping daemon starts no new verification (503 daemon_stopping)', async () => {
    const other = tempRoot('loopx-daemon-closing-');
    expect((await loopxAsync(['init', '--root', other])).status).toBe(0);
    expect((await loopxAsync(['backup-state', '--execute', '--backup-id', 'late', '--root', other])).status).toBe(0);
    const service = new BackupService(other);
    await service.close();
    let refused: unknown;
    try {
      service.startBackupVerify('late', 'root');
    } catch (e) {
      refused = e;
    }
    expect(refused).toMatchObject({ code: 'daemon_stopping', statusCode: 503 });
    expect(readdirSync(join(other, 'daemon', 'recoveries'))).toEqual([]);
  });

  it(`at most ${MAX_PENDING_UPLOADS} uploads wait at once (409 daemon_uploads_full); a stale one makes room for a new one`, async () => {
    for (const u of (await inject('GET', '/api/backups/uploads')).json().uploads as { upload_id: string }[])
      await inject('DELETE', `/api/backups/uploads/${u.upload_id}`);
    const ids: string[] = [];
    for (let i = 0; i < MAX_PENDING_UPLOADS; i++)
      ids.push((await inject('POST', '/api/backups/uploads')).json().upload_id as string);
    const full = await inject('POST', '/api/backups/uploads');
    expect(full.statusCode).toBe(409);
    expect(full.json().error).toMatchObject({
      code: 'daemon_uploads_full',
      next_action: expect.stringContaining('DELETE /api/backups/uploads/'),
    });
    expect((await inject('GET', '/api/backups/uploads')).json().uploads).toHaveLength(MAX_PENDING_UPLOADS);
    // Two hours without a write: the oldest is discarded when a new upload needs its place.
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    utimesSync(join(root, 'daemon', 'uploads', ids[0]!), old, old);
    const fresh = await inject('POST', '/api/backups/uploads');
    expect(fresh.statusCode).toBe(201);
    const now = (await inject('GET', '/api/backups/uploads'))
      .json()
      .uploads.map((u: { upload_id: string }) => u.upload_id);
    expect(now).not.toContain(ids[0]);
    expect(now).toContain(fresh.json().upload_id);
    expect(now).toHaveLength(MAX_PENDING_UPLOADS);
    for (const id of now) expect((await inject('DELETE', `/api/backups/uploads/${id}`)).statusCode).toBe(204);
  });

  it('refuses unknown uploads, jobs and audits, a part sent twice, and verify before both parts arrived', async () => {
    expect(
      (await inject('PUT', '/api/backups/uploads/up_nope/archive', { headers: octet, payload: Buffer.from('x') }))
        .statusCode,
    ).toBe(404);
    expect(
      (await inject('PUT', `/api/backups/uploads/../../x/archive`, { headers: octet, payload: Buffer.from('x') }))
        .statusCode,
    ).toBe(404);
    expect((await inject('GET', '/api/backups/jobs/job_nope')).statusCode).toBe(404);
    expect((await inject('GET', `/api/audits/${'0'.repeat(64)}`)).statusCode).toBe(404);
    expect((await inject('GET', `/api/audits/${'0'.repeat(64)}/raw`)).statusCode).toBe(404);
    expect((await inject('GET', '/api/backups/jobs/job_nope/events')).statusCode).toBe(404);
    expect((await inject('GET', '/api/audits/../../etc')).statusCode).toBe(404);
    const id = (await inject('POST', '/api/backups/uploads')).json().upload_id as string;
    const early = await inject('POST', `/api/backups/uploads/${id}/verify`);
    expect(early.statusCode).toBe(422);
    expect(early.json().error.code).toBe('daemon_upload_incomplete');
    expect(
      (await inject('PUT', `/api/backups/uploads/${id}/archive`, { headers: octet, payload: Buffer.from('a') }))
        .statusCode,
    ).toBe(200);
    const twice = await inject('PUT', `/api/backups/uploads/${id}/archive`, {
      headers: octet,
      payload: Buffer.from('b'),
    });
    expect(twice.statusCode).toBe(422);
    expect(twice.json().error.code).toBe('daemon_upload_part_exists');
    expect(
      (await inject('PUT', `/api/backups/uploads/${id}/other`, { headers: octet, payload: Buffer.from('b') }))
        .statusCode,
    ).toBe(404);
    expect((await inject('PUT', `/api/backups/uploads/${id}/manifest`, { payload: { json: true } })).statusCode).toBe(
      400,
    );
  });
});
