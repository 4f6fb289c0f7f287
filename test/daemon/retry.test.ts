/**
 * State-changing requests are safe to retry: with an `Idempotency-Key`, a retry — sent after the
 * first answered, or while it still runs — gets the original outcome (status and body) and the
 * change happens once; the same key on a different request is refused and runs nothing. Under a
 * bounded read load (loops of GETs and event streams over a real socket) every write answers and
 * happens exactly once. Keys are bounded in count and age.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { IDEMPOTENCY_LIMITS } from '../../src/daemon/idempotency.js';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/index.js';
import { cliFromSources, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

cliFromSources();

const TOKEN = 'retry-test-token-0123456789';
const authorityDir = join(STATE_HOME, 'loopx', 'run-authority');

/** Counts the login addresses issued: each one is a state change the test can see. */
class CountingLoginTokens extends LoginTokens {
  issued = 0;
  override issue(): string {
    this.issued++;
    return super.issue();
  }
}

let root: string;
let runId: string;
/** A run of its own for the read-load test (its next turn completes, so it can be counted). */
let loadRunId: string;
let d: DaemonApp;
let login: CountingLoginTokens;
let port = 0;
let clock = Date.now();

beforeAll(async () => {
  root = tempRoot('loopx-daemon-retry-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship it', '--root', root])).status).toBe(0);
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
  runId = started.json().run_id;
  const other = await loopxAsync([
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
  expect(other.status, other.stderr).toBe(0);
  loadRunId = other.json().run_id;
  login = new CountingLoginTokens();
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: login,
    port: () => port,
    authorityDir,
    logger: false,
    now: () => clock,
  });
  await d.app.listen({ host: '127.0.0.1', port: 0 });
  port = (d.app.server.address() as { port: number }).port;
}, 60_000);

afterAll(async () => {
  await d?.backups.close();
  await d?.app.close();
});

/** A generous bound per request on a loaded 2-core box: a write that gets no answer in it fails the test. */
const ANSWER_BOUND_MS = 60_000;
const api = (path: string, init: RequestInit & { key?: string } = {}) => {
  const { key, ...rest } = init;
  return fetch(`http://127.0.0.1:${port}/api/${path}`, {
    ...rest,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(key !== undefined ? { 'idempotency-key': key } : {}),
      ...(rest.headers ?? {}),
    },
    signal: AbortSignal.timeout(ANSWER_BOUND_MS),
  });
};
const answer = async (r: Promise<Response>) => {
  const res = await r;
  return {
    status: res.status,
    body: Buffer.from(await res.arrayBuffer()).toString('latin1'),
    replayed: res.headers.get('idempotent-replayed'),
    sha: res.headers.get('x-loopx-sha256'),
  };
};
const json = { 'content-type': 'application/json' };
const completedTurns = async (id = runId) =>
  ((await (await api(`runs/${id}`)).json()) as { completed_turns: number }).completed_turns;

describe('Idempotency-Key on state-changing routes', () => {
  it('a retry with the same key gets the original outcome and the change happens once — sent after the answer or while the first still runs', async () => {
    const before = login.issued;
    const [a, b] = await Promise.all([
      answer(api('session/login-urls', { method: 'POST', key: 'login-1' })),
      answer(api('session/login-urls', { method: 'POST', key: 'login-1' })),
    ]);
    const c = await answer(api('session/login-urls', { method: 'POST', key: 'login-1' }));
    expect(a.status).toBe(201);
    expect([b.body, c.body]).toEqual([a.body, a.body]);
    expect([a.replayed, b.replayed].sort()).toEqual([null, 'true']);
    expect(c.replayed).toBe('true');
    expect(login.issued - before).toBe(1);
    // Without a key every request is its own.
    await api('session/login-urls', { method: 'POST' });
    expect(login.issued - before).toBe(2);
  });

  it('a resume retried with its key runs its turn once; the same key on another request is 422 daemon_idempotency_key_reused and runs nothing', async () => {
    const turns = await completedTurns();
    const body = JSON.stringify({ turns: 1 });
    const [a, b] = await Promise.all([
      answer(api(`runs/${runId}/resume`, { method: 'POST', key: 'resume-1', headers: json, body })),
      answer(api(`runs/${runId}/resume`, { method: 'POST', key: 'resume-1', headers: json, body })),
    ]);
    expect(a.status, a.body).toBe(200);
    expect(b).toMatchObject({ status: a.status, body: a.body });
    expect(await completedTurns()).toBe(turns + 1);
    const again = await answer(api(`runs/${runId}/resume`, { method: 'POST', key: 'resume-1', headers: json, body }));
    expect(again).toMatchObject({ status: 200, body: a.body, replayed: 'true' });
    const other = await answer(
      api(`runs/${runId}/resume`, {
        method: 'POST',
        key: 'resume-1',
        headers: json,
        body: JSON.stringify({ turns: 2 }),
      }),
    );
    expect(other.status).toBe(422);
    expect(JSON.parse(other.body).error).toMatchObject({
      code: 'daemon_idempotency_key_reused',
      next_action: expect.any(String),
    });
    const elsewhere = await answer(api(`runs/${runId}/suspend`, { method: 'POST', key: 'resume-1' }));
    expect(JSON.parse(elsewhere.body).error.code).toBe('daemon_idempotency_key_reused');
    expect(await completedTurns()).toBe(turns + 1);
    expect((await answer(api('session/login-urls', { method: 'POST', key: 'bad key with spaces' }))).status).toBe(400);
  }, 120_000);

  it('an export, an upload and its part retried with their keys answer the same bytes and create nothing twice', async () => {
    const [e1, e2] = await Promise.all([
      answer(api(`runs/${runId}/export`, { method: 'POST', key: 'export-1' })),
      answer(api(`runs/${runId}/export`, { method: 'POST', key: 'export-1' })),
    ]);
    expect(e1.status, e1.body).toBe(200);
    expect(e2).toMatchObject({ status: 200, body: e1.body, sha: e1.sha });
    const u1 = await answer(api('backups/uploads', { method: 'POST', key: 'upload-1' }));
    const u2 = await answer(api('backups/uploads', { method: 'POST', key: 'upload-1' }));
    expect(u1.status).toBe(201);
    expect(u2.body).toBe(u1.body);
    const uploads = ((await (await api('backups/uploads')).json()) as { uploads: unknown[] }).uploads;
    expect(uploads).toHaveLength(1);
    const id = (JSON.parse(u1.body) as { upload_id: string }).upload_id;
    const part = Buffer.from('{"not":"a manifest, just bytes"}');
    const put = (key: string, bytes: Buffer) =>
      answer(
        api(`backups/uploads/${id}/manifest`, {
          method: 'PUT',
          key,
          headers: { 'content-type': 'application/octet-stream' },
          body: bytes,
        }),
      );
    const p1 = await put('part-1', part);
    expect(p1.status, p1.body).toBe(200);
    expect(await put('part-1', part)).toMatchObject({ status: 200, body: p1.body, replayed: 'true' });
    expect((await put('part-1', Buffer.from('other bytes'))).status).toBe(422);
    // Without the key the second PUT is what it always was: the part exists.
    expect((await put('part-2', part)).status).toBe(422);
    const d1 = await answer(api(`backups/uploads/${id}`, { method: 'DELETE', key: 'discard-1' }));
    const d2 = await answer(api(`backups/uploads/${id}`, { method: 'DELETE', key: 'discard-1' }));
    expect([d1.status, d2.status]).toEqual([204, 204]);
  }, 120_000);

  it('under a read load of GET loops and event streams every write answers, and each happens exactly once', async () => {
    let reading = true;
    let reads = 0;
    const readLoop = async (path: string) => {
      while (reading) {
        const r = await api(path);
        await r.arrayBuffer();
        reads++;
      }
    };
    const load = [
      ...Array.from({ length: 3 }, () => readLoop('runs')),
      readLoop(`runs/${loadRunId}`),
      readLoop('goals'),
      readLoop('goals/launch'),
      ...Array.from({ length: 3 }, () => readLoop(`runs/${loadRunId}/events`)),
    ];
    try {
      const issued = login.issued;
      const turns = await completedTurns(loadRunId);
      const writes: Promise<{ status: number; body: string }>[] = [];
      for (let i = 0; i < 8; i++) {
        // Each write sent twice with its key, as a client that timed out and retried would.
        for (let n = 0; n < 2; n++)
          writes.push(answer(api('session/login-urls', { method: 'POST', key: `load-login-${i}` })));
      }
      const body = JSON.stringify({ turns: 1 });
      for (let n = 0; n < 2; n++)
        writes.push(
          answer(api(`runs/${loadRunId}/resume`, { method: 'POST', key: 'load-resume', headers: json, body })),
        );
      for (let n = 0; n < 2; n++)
        writes.push(answer(api(`runs/${loadRunId}/export`, { method: 'POST', key: 'load-export' })));
      const answers = await Promise.all(writes);
      for (const a of answers) expect(a.status, a.body).toBeLessThan(300);
      for (let i = 0; i < answers.length; i += 2) expect(answers[i + 1]!.body).toBe(answers[i]!.body);
      expect(login.issued - issued).toBe(8);
      expect(await completedTurns(loadRunId)).toBe(turns + 1);
    } finally {
      reading = false;
      await Promise.all(load);
    }
    expect(reads).toBeGreaterThan(0);
  }, 180_000);

  it("a read takes no write lock: it answers while another connection holds the root's engine.db for writing, and a write after it is not held up", async () => {
    // Opening a store used to rewrite its schema version: a write transaction (and an fsync) per
    // read, which waited — the event loop with it — for any writer, up to the busy timeout.
    const writer = openSqlite(join(root, 'engine.db'));
    try {
      writer.prepare('BEGIN IMMEDIATE').run();
      const r = await api('runs');
      expect(r.status, await r.clone().text()).toBe(200);
      expect(((await r.json()) as { runs: unknown[] }).runs.length).toBeGreaterThan(0);
      expect((await api(`runs/${runId}`)).status).toBe(200);
      writer.prepare('COMMIT').run();
    } finally {
      writer.close();
    }
    expect((await api(`runs/${runId}/export`, { method: 'POST' })).status).toBe(200);
  }, 60_000);

  it(`keys are bounded: forgotten after ${IDEMPOTENCY_LIMITS.maxAgeMs / 60_000} minutes and beyond the newest ${IDEMPOTENCY_LIMITS.maxKeys}`, async () => {
    const send = async (key: string) =>
      (
        await d.app.inject({
          method: 'POST',
          url: '/api/session/login-urls',
          headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}`, 'idempotency-key': key },
        })
      ).body;
    const first = await send('aging');
    expect(await send('aging')).toBe(first);
    clock += IDEMPOTENCY_LIMITS.maxAgeMs;
    const later = await send('aging');
    expect(later).not.toBe(first);
    const oldest = await send('count-0');
    for (let i = 1; i <= IDEMPOTENCY_LIMITS.maxKeys; i++) await send(`count-${i}`);
    expect(await send(`count-${IDEMPOTENCY_LIMITS.maxKeys}`)).toBe(await send(`count-${IDEMPOTENCY_LIMITS.maxKeys}`));
    expect(await send('count-0')).not.toBe(oldest);
  }, 120_000);
});
