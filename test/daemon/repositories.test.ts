/**
 * Backup repositories over the daemon's API, in-process (requests injected without a port), against
 * an encrypted directory repository and an S3 one (s3rver on loopback behind the fault proxy that
 * honours conditional writes): the root backed up into each as a job of its own process, the
 * backups listed (size, encrypted or not, verified or not, this daemon's audit), one verified into
 * an audit of this daemon, and a recovery planned from it that pins the backup in the repository.
 * Every route needs the token; an encrypted backup is verified only with its key by reference —
 * none is refused with the repository's key-required code, a wrong one as no recipient, the key's
 * bytes refused without being echoed; no key or credential value is in any answer or in the log,
 * and no path but the URL the operator typed. Every listing validates against
 * docs/schemas/daemon-repository-backups.schema.json and every job against
 * docs/schemas/daemon-repository-job.schema.json.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import type { RepositoryJob } from '../../src/daemon/repositories.js';
import { REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';
import { closeDaemon } from '../support/daemon.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';

const TOKEN = 'test-token-repositories-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');
const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);
const expectSchema = (
  name: 'daemon-repository-backups' | 'daemon-repository-job' | 'daemon-audit-list',
  doc: unknown,
) => {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${name}.json`)!;
  expect(validate(doc) ? [] : validate.errors, JSON.stringify(doc)).toEqual([]);
};

// The references the daemon resolves in its own environment (its processes inherit it).
const PASSPHRASE = 'a passphrase only this test knows';
process.env['LOOPX_TEST_REPO_PASSPHRASE'] = PASSPHRASE;
const S3_SECRET = 'S3RVER:S3RVER';
process.env['LOOPX_TEST_REPO_S3'] = S3_SECRET;

let root: string;
let base: string;
let vault: string;
let keyFile: string;
let otherKeyFile: string;
let recipient: string;
let s3: S3ServerWithProxy;
let s3Url: string;
let d: DaemonApp;
let logged = '';
/** Every answer body, to look for secrets and paths in at the end. */
const answers: string[] = [];

const send = async (method: 'GET' | 'POST', url: string, payload?: unknown, auth = true) => {
  const r = await d.app.inject({
    method,
    url,
    headers: {
      ...(auth ? AUTH : { host: AUTH.host }),
      ...(payload !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });
  answers.push(r.body);
  return r;
};
const listing = (url: string) => send('GET', `/api/repositories/backups?repository=${encodeURIComponent(url)}`);

/** Polls a repository job until it has ended; every state validates against its schema. */
async function ended(jobId: string): Promise<RepositoryJob> {
  for (;;) {
    const job = (await send('GET', `/api/repositories/jobs/${jobId}`)).json() as RepositoryJob;
    expectSchema('daemon-repository-job', job);
    if (job.state !== 'running') return job;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function started(r: { statusCode: number; body: string; json(): unknown }): Promise<RepositoryJob> {
  expect(r.statusCode, r.body).toBe(202);
  const job = r.json() as RepositoryJob;
  expectSchema('daemon-repository-job', job);
  expect(job.state).toBe('running');
  return ended(job.job_id);
}

beforeAll(async () => {
  root = tempRoot('loopx-daemon-repositories-');
  base = dirname(root);
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
  expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', 'Draft it', '--root', root])).status).toBe(0);
  vault = join(base, 'vault');
  keyFile = join(base, 'alice.key');
  otherKeyFile = join(base, 'mallory.key');
  expect((await loopxAsync(['repo', 'init', '--repo', vault, '--encrypt'])).status).toBe(0);
  recipient = (await loopxAsync(['repo', 'key', 'new', '--out', keyFile, '--json'])).json().recipient as string;
  expect((await loopxAsync(['repo', 'key', 'new', '--out', otherKeyFile])).status).toBe(0);
  s3 = await startS3WithProxy();
  s3Url = `s3://${s3.bucket}/daemon?endpoint=${s3.endpoint}&path_style=true&credentials=env:LOOPX_TEST_REPO_S3`;
  expect((await loopxAsync(['repo', 'init', '--repo', s3Url])).status).toBe(0);
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      logged += chunk.toString('utf8');
      cb();
    },
  });
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir,
    logger: { level: 'info', stream },
  });
}, 120_000);

afterAll(async () => {
  await closeDaemon(d);
  await s3?.stop();
});

describe('backup repositories over the API', () => {
  it('every repository route needs the token: without it each is refused and nothing runs', async () => {
    const body = { repository: vault, recipients: [recipient], goal_id: 'launch' };
    for (const [method, url, payload] of [
      ['GET', `/api/repositories/backups?repository=${encodeURIComponent(vault)}`, undefined],
      ['POST', '/api/repositories/backups', body],
      ['POST', '/api/repositories/backups/b1/verify', body],
      ['POST', '/api/repositories/backups/b1/recoveries', body],
      ['GET', `/api/repositories/jobs/rjob_${'0'.repeat(32)}`, undefined],
    ] as const) {
      const r = await send(method, url, payload, false);
      expect(r.statusCode, `${method} ${url}`).toBe(401);
      expect(r.json()).toMatchObject({ error: { code: 'daemon_unauthorized' } });
    }
    const backups = join(vault, 'backups');
    expect(existsSync(backups) ? readdirSync(backups) : [], 'nothing was backed up').toEqual([]);
    // With it, a job this daemon never ran is 404, and the answer says where its results are.
    const unknown = await send('GET', `/api/repositories/jobs/rjob_${'0'.repeat(32)}`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({
      error: {
        code: 'daemon_repository_job_not_found',
        next_action: expect.stringContaining('GET /api/repositories/backups'),
      },
    });
  });

  it('an encrypted directory repository refuses a backup asked without recipients, then takes one sealed for them', async () => {
    const plain = await started(await send('POST', '/api/repositories/backups', { repository: vault }));
    expect(plain).toMatchObject({ kind: 'backup', state: 'refused', error: { code: 'repo_encryption_required' } });
    expect(plain.error?.next_action).toContain('POST /api/repositories/backups');
    const first = await send('POST', '/api/repositories/backups', {
      repository: vault,
      profile: 'quiescent',
      recipients: [recipient, 'env:LOOPX_TEST_REPO_PASSPHRASE'],
    });
    expect(first.statusCode, first.body).toBe(202);
    const second = await send('POST', '/api/repositories/backups', { repository: vault, recipients: [recipient] });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ error: { code: 'daemon_backup_running' } });
    const done = await ended(first.json().job_id);
    expect(done, JSON.stringify(done)).toMatchObject({
      kind: 'backup',
      state: 'done',
      error: null,
      backup: { encrypted: true, achieved_profile: 'quiescent', goals: 1, placement: { inside_root: false } },
    });
    expect(done.backup_id).toBe(done.backup?.backup_id);
    expect(done.repository_id).toMatch(/^repo_[0-9a-f]{24}$/);
  }, 120_000);

  it('lists the backups by id, age, size and encryption, with no path', async () => {
    const r = await listing(vault);
    expect(r.statusCode, r.body).toBe(200);
    const l = r.json();
    expectSchema('daemon-repository-backups', l);
    expect(l.repository).toMatchObject({ kind: 'dir', encryption: 'required' });
    expect(l.backups).toHaveLength(1);
    expect(l.backups[0]).toMatchObject({ encrypted: true, verified_at: null, audit_id: null });
    expect(l.backups[0].archive_bytes).toBeGreaterThan(0);
    for (const place of [vault, root, base]) expect(r.body).not.toContain(place);
    expect(r.body).not.toContain('dir:');
  });

  it('verifies an encrypted backup only with its key by reference: none, a wrong one and the bytes are refused', async () => {
    const id = ((await listing(vault)).json().backups[0] as { backup_id: string }).backup_id;
    const verify = (key?: string) =>
      send('POST', `/api/repositories/backups/${id}/verify`, { repository: vault, ...(key ? { key } : {}) });
    const audits = () => (readdirSync(join(root, 'daemon', 'recoveries')) as string[]).sort();
    const before = audits();
    const keyless = await started(await verify());
    expect(keyless).toMatchObject({ kind: 'verify', backup_id: id, state: 'refused', audit: null });
    expect(keyless.error?.code).toBe('repo_key_required');
    expect(keyless.error?.next_action).toContain(`POST /api/repositories/backups/${id}/verify`);
    const wrong = await started(await verify(otherKeyFile));
    expect(wrong.error?.code).toBe('seal_key_not_recipient');
    expect(audits(), 'a refused verification leaves no workspace').toEqual(before);
    const bytes = readFileSync(keyFile, 'utf8').trim();
    const pasted = await verify(bytes);
    expect(pasted.statusCode).toBe(400);
    expect(pasted.json()).toMatchObject({ error: { code: 'daemon_field_invalid' } });
    for (const key of [keyFile, 'env:LOOPX_TEST_REPO_PASSPHRASE']) {
      const ok = await started(await verify(key));
      expect(ok, key).toMatchObject({ state: 'done', error: null, audit: { recovery_id: expect.any(String) } });
      expect(['audited', 'held']).toContain(ok.audit?.phase);
    }
    const list = (await send('GET', '/api/audits')).json();
    expectSchema('daemon-audit-list', list);
    const l = (await listing(vault)).json();
    expect(l.backups[0].verified_at).not.toBeNull();
    const audit = list.audits.find((a: { recovery_id: string }) => a.recovery_id === l.backups[0].audit_id);
    expect(audit?.source).toMatchObject({
      kind: 'repository',
      backup_id: id,
      repository_id: l.repository.id,
      encrypted: true,
    });
  }, 120_000);

  it('plans a recovery from the verified backup and pins it in the repository; an unverified one is refused', async () => {
    const id = ((await listing(vault)).json().backups[0] as { backup_id: string }).backup_id;
    const never = await send('POST', '/api/repositories/backups/never-made/recoveries', {
      repository: vault,
      goal_id: 'launch',
    });
    expect(never.statusCode).toBe(409);
    expect(never.json()).toMatchObject({ error: { code: 'daemon_repository_backup_not_verified' } });
    const r = await send('POST', `/api/repositories/backups/${id}/recoveries`, {
      repository: vault,
      goal_id: 'launch',
      destination_name: 'launch-from-vault',
    });
    expect(r.statusCode, r.body).toBe(201);
    expect(r.json()).toMatchObject({ destination_name: 'launch-from-vault', recovery_id: expect.any(String) });
    const pins = join(vault, 'pins', id);
    expect(existsSync(pins) ? readdirSync(pins).filter((f) => f.endsWith('.json')) : []).toHaveLength(1);
    expect(r.body).not.toContain(base);
  }, 60_000);

  it('an S3 repository: backs up unencrypted, lists it as not encrypted, verifies it without a key', async () => {
    const done = await started(await send('POST', '/api/repositories/backups', { repository: s3Url }));
    expect(done).toMatchObject({ state: 'done', backup: { encrypted: false, placement: { same_filesystem: false } } });
    const l = (await listing(s3Url)).json();
    expectSchema('daemon-repository-backups', l);
    expect(l.repository).toMatchObject({ kind: 's3', encryption: 'optional' });
    expect(l.backups.map((b: { backup_id: string; encrypted: boolean }) => [b.backup_id, b.encrypted])).toEqual([
      [done.backup_id, false],
    ]);
    const verified = await started(
      await send('POST', `/api/repositories/backups/${done.backup_id}/verify`, { repository: s3Url }),
    );
    expect(verified).toMatchObject({ state: 'done', audit: { recovery_id: expect.any(String) } });
    expect((await listing(s3Url)).json().backups[0].audit_id).toBe(verified.audit?.recovery_id);
  }, 120_000);

  it('refuses what is not a repository, a key or a recipient by reference — as a field, before anything runs', async () => {
    const missing = await listing(join(base, 'nothing-here'));
    expect(missing.statusCode).toBe(404);
    const e = missing.json().error;
    expect(e.code).toBe('repo_not_initialized');
    expect(e.message, 'named as typed, not from the daemon’s working directory').toContain(join(base, 'nothing-here'));
    expect(e.message).not.toContain('dir:');
    const unset = await listing(s3Url.replace('LOOPX_TEST_REPO_S3', 'LOOPX_TEST_REPO_UNSET'));
    expect(unset.json()).toMatchObject({ error: { code: 'repo_credentials_missing' } });
    for (const body of [
      { repository: 'relative/dir' },
      { repository: 'memory:x' },
      { repository: vault, profile: 'crash-consistent' },
      { repository: vault, recipients: [] },
      { repository: vault, recipients: [PASSPHRASE] },
    ]) {
      const r = await send('POST', '/api/repositories/backups', body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json()).toMatchObject({ error: { code: 'daemon_field_invalid' } });
    }
  });

  it('no key or credential value is in any answer or in the log', () => {
    const everything = answers.join('\n') + logged;
    expect(answers.length).toBeGreaterThan(20);
    for (const secret of [
      PASSPHRASE,
      S3_SECRET,
      readFileSync(keyFile, 'utf8').trim(),
      readFileSync(otherKeyFile, 'utf8').trim(),
    ])
      expect(everything).not.toContain(secret);
    expect(logged).not.toContain(vault);
  });
});
