/**
 * Recovery drills from the daemon, in-process (requests injected without a port): a real short
 * drill started through `POST /api/drills` runs in the background on synthetic state of its own,
 * one at a time; its stages stream as events; its receipt is kept owner-only under the daemon's
 * private state, read back through the routes, accepted by recover-drill.schema.json and names no
 * path; the kept receipts are bounded; and a daemon that stops ends a running drill, leaving
 * nothing of it behind.
 */
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { MAX_KEPT_DRILLS } from '../../src/daemon/drills.js';
import { REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

// This file's daemons make their drills' directories in a temporary directory of its own: another
// file's daemon drills (the browser's) may run at the same time, and are not this file's to count.
const OWN_TMP = mkdtempSync(join(tmpdir(), 'loopx-drills-tmp-'));
chmodSync(OWN_TMP, 0o1777);
process.env.TMPDIR = OWN_TMP;

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);
/** `doc` is a document of docs/schemas/daemon-drill-job.schema.json, daemon-drill-list.schema.json or recover-drill.schema.json. */
function expectSchema(name: 'daemon-drill-job' | 'daemon-drill-list' | 'recover-drill', doc: unknown): void {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${name}.json`)!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
}

/** Names no private place: not the root's, the home directory, the temporary directory, nor any absolute path of theirs. */
function expectPathFree(text: string): void {
  for (const place of [root, dirname(root), `${homedir()}/`, `${tmpdir()}/`]) expect(text).not.toContain(place);
  expect(text).not.toMatch(/"\/(tmp|home|root|var|run)\//);
}

/** Processes whose working directory is `dir` or below (Linux /proc). */
function processesIn(dir: string): string[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readlinkSync(`/proc/${p}/cwd`).startsWith(dir);
      } catch {
        return false; // gone meanwhile, or not ours
      }
    });
}

const drillDirs = () => new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('loopx-daemon-drill-')));

let root: string;
let d: DaemonApp;
let before: Set<string>;
let jobId: string;
let stream: string;
let seeds: string[];

const get = (url: string) => d.app.inject({ method: 'GET', url, headers: AUTH });
const post = (url: string, key?: string) =>
  d.app.inject({ method: 'POST', url, headers: { ...AUTH, ...(key ? { 'idempotency-key': key } : {}) } });
const app = () =>
  buildApp({ root, token: TOKEN, loginTokens: new LoginTokens(), port: () => 80, authorityDir, logger: false });
const drillsDir = () => join(root, 'daemon', 'drills');

/** The SSE events of a finished stream, in order. */
function events(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split('\n\n')
    .filter((block) => block.includes('event: '))
    .map((block) => ({
      event: /^event: (.*)$/m.exec(block)![1]!,
      data: JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as Record<string, unknown>,
    }));
}

beforeAll(async () => {
  root = tempRoot('loopx-drillapi-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  d = await app();
  // As many receipts as are kept, all older than the drill to come: keeping its receipt removes the oldest.
  seeds = Array.from({ length: MAX_KEPT_DRILLS }, (_, i) => `drill_${i.toString(16).padStart(16, '0')}.json`);
  seeds.forEach((name, i) => {
    writeFileSync(join(drillsDir(), name), '{}\n', { mode: 0o600 });
    utimesSync(join(drillsDir(), name), new Date(Date.UTC(2000, 0, 1 + i)), new Date(Date.UTC(2000, 0, 1 + i)));
  });
  before = drillDirs();
});

afterAll(async () => {
  await d?.app.close();
  if (root) rmSync(dirname(root), { recursive: true, force: true });
});

describe('a recovery drill from the daemon', () => {
  it('starts in the background (202, a running job), and a second drill while it runs is refused with daemon_drill_running', async () => {
    const started = await post('/api/drills', 'drill-1');
    expect(started.statusCode, started.body).toBe(202);
    const job = started.json();
    expectSchema('daemon-drill-job', job);
    expect(job).toMatchObject({ mode: 'short', state: 'running', drill_id: null, error: null });
    jobId = job.job_id;
    // The same request again under its key is the same start, not a second drill.
    const replay = await post('/api/drills', 'drill-1');
    expect([replay.statusCode, replay.json().job_id]).toEqual([202, jobId]);
    const second = await post('/api/drills', 'drill-2');
    expect(second.statusCode, second.body).toBe(409);
    expect(second.json().error).toMatchObject({
      code: 'daemon_drill_running',
      next_action: `wait for it to end: GET /api/drills/jobs/${jobId}`,
    });
    const listed = (await get('/api/drills')).json();
    expectSchema('daemon-drill-list', listed);
    expect(listed.running?.job_id).toBe(jobId);
  });

  it('streams its stages as they start, then its result: done, with the kept receipt’s id', async () => {
    stream = (await get(`/api/drills/jobs/${jobId}/events`)).body;
    const all = events(stream);
    const stages = all.filter((e) => e.event === 'progress').map((e) => e.data['stage']);
    expect(stages).toContain('recovery: verify the backup into a workspace');
    expect(stages).toContain('recovery: continue the unfinished Todo in the new root');
    expect(all.filter((e) => e.event === 'progress').map((e) => e.data['step'])).toEqual(stages.map((_, i) => i + 1));
    const result = all.at(-1)!;
    expect(result.event).toBe('result');
    expectSchema('daemon-drill-job', result.data);
    expect(result.data, JSON.stringify(result.data)).toMatchObject({
      job_id: jobId,
      state: 'done',
      error: null,
      drill_id: expect.stringMatching(/^drill_[0-9a-f]{16}$/),
    });
    expect((await get(`/api/drills/jobs/${jobId}`)).json()).toEqual(result.data);
  }, 900_000);

  it('keeps the receipt owner-only under the daemon’s private state; it reads back as recover-drill.schema.json and names no path', async () => {
    const job = (await get(`/api/drills/jobs/${jobId}`)).json();
    const file = join(drillsDir(), `${job.drill_id}.json`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const r = await get(`/api/drills/${job.drill_id}`);
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(r.body).toBe(readFileSync(file, 'utf8'));
    const receipt = r.json();
    expectSchema('recover-drill', receipt);
    expect(receipt).toMatchObject({
      drill_id: job.drill_id,
      mode: 'short',
      result: job.result,
      missed: job.missed,
      execution_authority_granted: false,
    });
    expect(receipt.phases.map((p: { phase: string }) => p.phase)).toEqual(['verify', 'plan', 'apply', 'first_turn']);
    expectPathFree(r.body);
    expectPathFree(stream);
    expectPathFree((await get('/api/drills')).body);
  });

  it('lists the kept receipts newest first; the oldest beyond the bound were removed when it was kept', async () => {
    const job = (await get(`/api/drills/jobs/${jobId}`)).json();
    const listed = (await get('/api/drills')).json();
    expectSchema('daemon-drill-list', listed);
    expect(listed.running).toBeNull();
    // The seeds are no receipts (they are not listed), but they count towards the bound.
    expect(listed.drills).toEqual([
      expect.objectContaining({
        drill_id: job.drill_id,
        result: job.result,
        rto: expect.objectContaining({ target_seconds: 60 }),
      }),
    ]);
    const kept = readdirSync(drillsDir()).filter((n) => n.endsWith('.json'));
    expect(kept).toHaveLength(MAX_KEPT_DRILLS);
    expect(kept).toContain(`${job.drill_id}.json`);
    expect(kept).not.toContain(seeds[0]);
    expect(kept).toContain(seeds[1]);
  });

  it('leaves nothing of the drill’s synthetic state behind', () => {
    expect([...drillDirs()].filter((n) => !before.has(n))).toEqual([]);
  });

  it('refuses an unknown receipt and an unknown job', async () => {
    const missing = await get('/api/drills/drill_ffffffffffffffff');
    expect([missing.statusCode, missing.json().error.code]).toEqual([404, 'daemon_drill_not_found']);
    const bad = await get('/api/drills/..%2Fadoptions');
    expect([bad.statusCode, bad.json().error.code]).toEqual([404, 'daemon_drill_not_found']);
    const job = await get('/api/drills/jobs/djob_nope');
    expect([job.statusCode, job.json().error.code]).toEqual([404, 'daemon_drill_job_not_found']);
  });

  it('a daemon that stops ends a running drill: its process group is killed, its synthetic state removed, and no receipt is kept', async () => {
    const other = await app();
    const started = await other.app.inject({ method: 'POST', url: '/api/drills', headers: AUTH });
    expect(started.statusCode, started.body).toBe(202);
    const id = started.json().job_id as string;
    const job = async () =>
      (await other.app.inject({ method: 'GET', url: `/api/drills/jobs/${id}`, headers: AUTH })).json();
    // Stop it once it has started working (its first stage), not before.
    await expect.poll(async () => (await job()).stages.length, { timeout: 120_000, interval: 200 }).toBeGreaterThan(0);
    const dirs = [...drillDirs()].filter((n) => !before.has(n));
    expect(dirs).toHaveLength(1);
    const work = join(tmpdir(), dirs[0]!);
    // The drill's processes work in its directory (their cwd): there are some before, none after.
    expect(processesIn(work).length).toBeGreaterThan(0);
    await other.app.close();
    expect(processesIn(work)).toEqual([]);
    expect(existsSync(work)).toBe(false);
    expect(readdirSync(drillsDir()).filter((n) => n.endsWith('.json'))).toHaveLength(MAX_KEPT_DRILLS);
  }, 180_000);
});
