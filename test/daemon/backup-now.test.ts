/**
 * "Back up now" over the daemon's API: `POST /api/backups` runs `loopx backup-state --execute` as a
 * process of its own into the user's backups folder (outside the root) by default, one at a time;
 * its run names the pair, the profile achieved and where it lies — with the same-file-system
 * warning and the command that puts the next one elsewhere — and no path. The pair is then listed
 * (`location: user`) and verified in place: `verifying` while it runs, and an audit whose source is
 * `user_backup`. A bad profile or location is refused before anything starts. Every run validates
 * against docs/schemas/daemon-backup-run.schema.json.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');
const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);
const expectSchema = (name: string, doc: unknown) => {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${name}.json`)!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
};

let root: string;
let userBackups: string;
let d: DaemonApp;

const inject = (method: 'GET' | 'POST', url: string, payload?: unknown) =>
  d.app.inject({
    method,
    url,
    headers: { ...AUTH, ...(payload !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(payload !== undefined ? { payload: JSON.stringify(payload) } : {}),
  });

/** Polls the run until it is no longer capturing (the backup process ends on its own). */
async function finished(id: string): Promise<Record<string, unknown>> {
  for (;;) {
    const run = (await inject('GET', `/api/backups/runs/${id}`)).json() as Record<string, unknown>;
    if (run['state'] !== 'capturing') return run;
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  root = tempRoot('loopx-backup-now-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship it', '--root', root])).status).toBe(0);
  userBackups = join(mkdtempSync(join(tmpdir(), 'loopx-user-data-')), 'loopx', 'backups');
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: new LoginTokens(),
    port: () => 80,
    authorityDir,
    userBackupsDir: userBackups,
    logger: false,
  });
});

afterAll(async () => {
  await d?.app.close();
  await d?.backups.close();
});

describe('Back up now', () => {
  it('publishes into the user backups folder by default, one at a time, and says it shares the root’s file system', async () => {
    const started = await inject('POST', '/api/backups', { profile: 'quiescent' });
    expect(started.statusCode, started.body).toBe(202);
    const run = started.json() as Record<string, unknown>;
    expectSchema('daemon-backup-run', run);
    expect(run).toMatchObject({ location: 'user', requested_profile: 'quiescent', state: 'capturing' });
    const second = await inject('POST', '/api/backups', {});
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ error: { code: 'daemon_backup_running' } });

    const done = await finished(run['job_id'] as string);
    expectSchema('daemon-backup-run', done);
    expect(done, JSON.stringify(done)).toMatchObject({
      state: 'created',
      error: null,
      result: {
        achieved_profile: 'quiescent',
        goals: 1,
        placement: { inside_root: false, same_filesystem: true },
        warning: 'This backup is on the same file system as the root it protects: a lost disk loses both.',
        elsewhere: 'put it elsewhere (another disk or host): loopx backup-state --execute --output-dir DIR',
      },
    });
    const id = (done['result'] as { backup_id: string }).backup_id;
    expect(existsSync(join(userBackups, `${id}.tar.gz`))).toBe(true);
    expect(existsSync(join(root, 'backups'))).toBe(false); // nothing beside the root it protects
    const text = JSON.stringify(done);
    for (const place of [root, userBackups, tmpdir() + '/']) expect(text).not.toContain(place);
    const listed = (await inject('GET', '/api/backups/runs')).json() as { runs: { job_id: string }[] };
    expect(listed.runs.map((r) => r.job_id)).toContain(run['job_id']);
  }, 120_000);

  it('lists the pair in the user folder and verifies it in place: verifying while it runs, then an audit of a user_backup', async () => {
    const backups = (await inject('GET', '/api/backups')).json() as {
      backups: { backup_id: string; location: string }[];
    };
    const mine = backups.backups.find((b) => b.location === 'user');
    expect(mine).toBeDefined();
    const wrong = await inject('POST', `/api/backups/${mine!.backup_id}/verify`, { location: 'root' });
    expect(wrong.json()).toMatchObject({ error: { code: 'daemon_backup_not_found' } });
    const started = await inject('POST', `/api/backups/${mine!.backup_id}/verify`, { location: 'user' });
    expect(started.statusCode, started.body).toBe(202);
    const jobId = (started.json() as { job_id: string }).job_id;
    const during = (await inject('GET', `/api/backups/jobs/${jobId}`)).json() as Record<string, unknown>;
    expect(during).toMatchObject({ state: 'verifying', location: 'user', backup_id: mine!.backup_id });
    expectSchema('daemon-job', during);
    expect((await inject('GET', `/api/backups/jobs/${jobId}/events`)).body).toContain('event: result');
    const job = (await inject('GET', `/api/backups/jobs/${jobId}`)).json() as { state: string; recovery_id: string };
    expect(['audited', 'held']).toContain(job.state);
    const audits = (await inject('GET', '/api/audits')).json() as {
      audits: { recovery_id: string; source: { kind: string } }[];
    };
    expect(audits.audits.find((a) => a.recovery_id === job.recovery_id)?.source.kind).toBe('user_backup');
  }, 120_000);

  it('puts it beside the root only when asked, saying it lies inside the root; refuses an unknown profile or location', async () => {
    const run = (await inject('POST', '/api/backups', { location: 'root' })).json() as { job_id: string };
    const done = await finished(run.job_id);
    expect(done).toMatchObject({
      state: 'created',
      result: {
        placement: { inside_root: true },
        warning: 'This backup lies inside the root it protects: losing the root loses the backup too.',
      },
    });
    for (const body of [{ profile: 'crash-consistent' }, { profile: 'fast' }, { location: '/tmp' }]) {
      const refused = await inject('POST', '/api/backups', body);
      expect(refused.statusCode, JSON.stringify(body)).toBe(400);
      expect(refused.json()).toMatchObject({ error: { code: 'daemon_field_invalid' } });
    }
  }, 120_000);
});
