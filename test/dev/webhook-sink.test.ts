/**
 * The loopback webhook sink: stores a delivery once per idempotency key, answers queries by
 * operation id and Goal lineage, fences old writers of a lineage at the receiver, records every
 * attempt, binds loopback only, bounds bodies, and simulates a lost response on request.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import { startWebhookSink, type SinkAttempts, type WebhookSink } from '../../src/dev/index.js';

const dirs: string[] = [];
const sinks: WebhookSink[] = [];
afterEach(async () => {
  await Promise.all(sinks.splice(0).map((s) => s.close()));
});
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-sink-'));
  dirs.push(d);
  return d;
};
const start = async (options: Partial<Parameters<typeof startWebhookSink>[0]> = {}): Promise<WebhookSink> => {
  const sink = await startWebhookSink({ port: 0, host: '127.0.0.1', ...options });
  sinks.push(sink);
  return sink;
};

const post = (sink: WebhookSink, key: string, op: string, body: unknown) =>
  fetch(sink.deliveriesUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-operation-id': op },
    body: JSON.stringify(body),
  });
/** A POST /deliveries from a writer of `lineage` holding `fence`. */
const postFenced = (
  sink: WebhookSink,
  key: string,
  op: string,
  body: unknown,
  lineage: string,
  fence: number | string,
) =>
  fetch(sink.deliveriesUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'idempotency-key': key,
      'x-operation-id': op,
      'x-loopx-goal-lineage': lineage,
      'x-loopx-fence': String(fence),
    },
    body: JSON.stringify(body),
  });
const postFence = (sink: WebhookSink, value: unknown) =>
  fetch(`${sink.url}/fences`, { method: 'POST', body: JSON.stringify(value) });
const newestFence = async (sink: WebhookSink, lineage: string) =>
  (await fetch(`${sink.url}/fences?goal_lineage=${lineage}`)).json();
const attemptsOf = async (sink: WebhookSink, lineage?: string) =>
  (await (
    await fetch(`${sink.url}/attempts${lineage === undefined ? '' : `?goal_lineage=${lineage}`}`)
  ).json()) as SinkAttempts;
const query = async (sink: WebhookSink, op: string) =>
  (await fetch(`${sink.deliveriesUrl}?operation_id=${encodeURIComponent(op)}`)).json();
const list = async (sink: WebhookSink) =>
  ((await (await fetch(sink.deliveriesUrl)).json()) as { deliveries: unknown[] }).deliveries;
const codeOf = async (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );

describe('webhook sink', () => {
  it('binds 127.0.0.1 only; any other host is refused before listening', async () => {
    const sink = await start();
    expect(sink.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await codeOf(startWebhookSink({ port: 0, host: '0.0.0.0' as '127.0.0.1' }))).toBe(
      'webhook_sink_host_not_loopback',
    );
  });

  it('stores a delivery once; a repeat with the same key returns the original with 200 and replayed: true', async () => {
    const sink = await start();
    const first = await post(sink, 'key-1', 'op-1', { n: 1 });
    expect(first.status).toBe(201);
    const a = (await first.json()) as { replayed: boolean; delivery: { sequence: number } };
    expect(a).toMatchObject({
      replayed: false,
      delivery: { sequence: 1, idempotency_key: 'key-1', operation_id: 'op-1', body: { n: 1 } },
    });
    const again = await post(sink, 'key-1', 'op-1', { n: 1 });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ replayed: true, delivery: a.delivery });
    expect(await list(sink)).toHaveLength(1);
  });

  it('a key reused with another body, or an operation id under another key, is 409 and stores nothing', async () => {
    const sink = await start();
    await post(sink, 'key-1', 'op-1', { n: 1 });
    const body = await post(sink, 'key-1', 'op-1', { n: 2 });
    expect([body.status, await body.json()]).toEqual([409, { error: 'idempotency_key_reused' }]);
    const r = await post(sink, 'key-2', 'op-1', { n: 1 });
    expect([r.status, await r.json()]).toEqual([409, { error: 'operation_id_reused' }]);
    expect(sink.deliveries()).toHaveLength(1);
    expect(sink.attempts().counts).toMatchObject({ stored: 1, conflict: 2 });
  });

  it('a held key re-sent with the same body under another operation id is replayed, never stored twice, and counted as a duplicate', async () => {
    const sink = await start();
    const first = (await (await post(sink, 'key-1', 'op-1', { n: 1 })).json()) as { delivery: unknown };
    const again = await post(sink, 'key-1', 'op-1-new-lifetime', { n: 1 });
    expect([again.status, await again.json()]).toEqual([200, { replayed: true, delivery: first.delivery }]);
    expect(sink.deliveries().map((d) => d.operation_id)).toEqual(['op-1']);
    // The new operation id is not an alias: the query by it finds nothing.
    expect(await query(sink, 'op-1-new-lifetime')).toEqual({ found: false, delivery: null });
    expect(sink.attempts().attempts.map((a) => [a.operation_id, a.result])).toEqual([
      ['op-1', 'stored'],
      ['op-1-new-lifetime', 'duplicate'],
    ]);
  });

  it('a held key re-sent under an operation id stored under another key is 409 operation_id_reused', async () => {
    const sink = await start();
    await post(sink, 'key-1', 'op-1', { n: 1 });
    await post(sink, 'key-2', 'op-2', { n: 2 });
    const r = await post(sink, 'key-1', 'op-2', { n: 1 });
    expect([r.status, await r.json()]).toEqual([409, { error: 'operation_id_reused' }]);
    expect(sink.attempts().counts).toMatchObject({ stored: 2, duplicate: 0, conflict: 1 });
  });

  it('missing headers and malformed JSON are 400', async () => {
    const sink = await start();
    const noKey = await fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: { 'x-operation-id': 'op-1' },
      body: '{}',
    });
    expect([noKey.status, await noKey.json()]).toEqual([400, { error: 'missing_idempotency_key' }]);
    const noOp = await fetch(sink.deliveriesUrl, { method: 'POST', headers: { 'idempotency-key': 'k' }, body: '{}' });
    expect([noOp.status, await noOp.json()]).toEqual([400, { error: 'missing_x_operation_id' }]);
    const bad = await fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: { 'idempotency-key': 'k', 'x-operation-id': 'op' },
      body: '{nope',
    });
    expect([bad.status, await bad.json()]).toEqual([400, { error: 'invalid_json' }]);
    expect(sink.deliveries()).toEqual([]);
  });

  it('answers a query by operation id and lists all deliveries', async () => {
    const sink = await start();
    await post(sink, 'key-1', 'op-1', { a: true });
    await post(sink, 'key-2', 'op-2', [1, 2]);
    expect(await query(sink, 'op-2')).toMatchObject({
      found: true,
      delivery: { idempotency_key: 'key-2', operation_id: 'op-2', body: [1, 2], sequence: 2 },
    });
    expect(await query(sink, 'op-3')).toEqual({ found: false, delivery: null });
    expect(((await list(sink)) as Array<{ operation_id: string }>).map((d) => d.operation_id)).toEqual([
      'op-1',
      'op-2',
    ]);
  });

  it('a body over 1 MiB is 413 and stores nothing; exactly 1 MiB is accepted', async () => {
    const sink = await start();
    const over = JSON.stringify({ s: 'x'.repeat(1024 * 1024) });
    const r = await fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: { 'idempotency-key': 'big', 'x-operation-id': 'op-big' },
      body: over,
    });
    expect([r.status, await r.json()]).toEqual([413, { error: 'body_too_large' }]);
    const exact = JSON.stringify({ s: 'x'.repeat(1024 * 1024 - 8) });
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    expect(
      (
        await fetch(sink.deliveriesUrl, {
          method: 'POST',
          headers: { 'idempotency-key': 'ok', 'x-operation-id': 'op-ok' },
          body: exact,
        })
      ).status,
    ).toBe(201);
    expect(sink.deliveries().map((d) => d.operation_id)).toEqual(['op-ok']);
  });

  it('drop_response_after_store commits the delivery and loses the response; the query still finds it', async () => {
    const sink = await start();
    const armed = await fetch(`${sink.url}/control`, {
      method: 'POST',
      body: JSON.stringify({ mode: 'drop_response_after_store' }),
    });
    expect(await armed.json()).toEqual({ mode: 'drop_response_after_store' });
    await expect(post(sink, 'key-1', 'op-1', { n: 1 })).rejects.toThrow();
    expect(await query(sink, 'op-1')).toMatchObject({ found: true, delivery: { idempotency_key: 'key-1' } });
    // The failure was for the next delivery only.
    expect((await post(sink, 'key-2', 'op-2', {})).status).toBe(201);
  });

  it('drop_before_store loses the request: nothing is stored', async () => {
    const sink = await start();
    sink.failNext('drop_before_store');
    await expect(post(sink, 'key-1', 'op-1', { n: 1 })).rejects.toThrow();
    expect(await query(sink, 'op-1')).toEqual({ found: false, delivery: null });
  });

  it('an unknown control mode is 400; the control endpoint can be switched off', async () => {
    const sink = await start();
    expect(
      (await fetch(`${sink.url}/control`, { method: 'POST', body: JSON.stringify({ mode: 'explode' }) })).status,
    ).toBe(400);
    const quiet = await start({ control: false });
    expect(
      (await fetch(`${quiet.url}/control`, { method: 'POST', body: JSON.stringify({ mode: 'none' }) })).status,
    ).toBe(404);
  });

  it('a request for another Host is refused with 421 (no DNS rebinding)', async () => {
    const sink = await start();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: sink.port, path: '/deliveries', headers: { host: 'evil.example:80' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(421);
  });

  it('with a journal, deliveries survive a restart (owner-only file) and a repeat is still replayed', async () => {
    const journalPath = join(tempDir(), 'sink.jsonl');
    const first = await start({ journalPath });
    await post(first, 'key-1', 'op-1', { n: 1 });
    await first.close();
    sinks.splice(sinks.indexOf(first), 1);
    expect(statSync(journalPath).mode & 0o777).toBe(0o600);
    const second = await start({ journalPath });
    const r = await post(second, 'key-1', 'op-1', { n: 1 });
    expect([r.status, ((await r.json()) as { replayed: boolean }).replayed]).toEqual([200, true]);
    expect(second.deliveries()).toHaveLength(1);
  });

  it('a malformed journal is refused at start', async () => {
    const journalPath = join(tempDir(), 'sink.jsonl');
    writeFileSync(journalPath, '{"sequence":1}\n');
    expect(await codeOf(startWebhookSink({ port: 0, journalPath }))).toBe('webhook_sink_journal_invalid');
  });
});

describe('webhook sink: Goal lineage fences and the attempts ledger', () => {
  it("a delivery whose fence is below the lineage's newest is 409 fence_stale and stores nothing", async () => {
    const sink = await start();
    expect((await postFenced(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 2)).status).toBe(201);
    const stale = await postFenced(sink, 'key-2', 'op-2', { n: 2 }, 'goal-a', 1);
    expect([stale.status, await stale.json()]).toEqual([409, { error: 'fence_stale', newest_fence: 2 }]);
    expect(sink.deliveries().map((d) => [d.operation_id, d.goal_lineage, d.fence])).toEqual([['op-1', 'goal-a', 2]]);
    expect(await query(sink, 'op-2')).toEqual({ found: false, delivery: null });
    // Another lineage has fences of its own; a delivery without fence headers is not fenced.
    expect((await postFenced(sink, 'key-3', 'op-3', {}, 'goal-b', 0)).status).toBe(201);
    expect((await post(sink, 'key-4', 'op-4', {})).status).toBe(201);
    expect(sink.deliveries().find((d) => d.operation_id === 'op-4')).toMatchObject({ goal_lineage: null, fence: null });
  });

  it('an old writer is refused even when it re-sends a delivery the sink holds', async () => {
    const sink = await start();
    await postFenced(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 1);
    await postFenced(sink, 'key-2', 'op-2', { n: 2 }, 'goal-a', 2);
    const r = await postFenced(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 1);
    expect([r.status, await r.json()]).toEqual([409, { error: 'fence_stale', newest_fence: 2 }]);
    expect(sink.attempts().counts).toMatchObject({ stored: 2, duplicate: 0, refused_stale_fence: 1 });
  });

  it('POST /fences raises the newest fence: older deliveries are refused, equal ones accepted; a lower fence is 409', async () => {
    const sink = await start();
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: null, lifetime: null });
    await postFenced(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 1);
    const advanced = await postFence(sink, { goal_lineage: 'goal-a', fence: 3 });
    expect([advanced.status, await advanced.json()]).toEqual([
      200,
      { status: 'advanced', newest_fence: 3, lifetime: null },
    ]);
    const already = await postFence(sink, { goal_lineage: 'goal-a', fence: 3 });
    expect([already.status, await already.json()]).toEqual([
      200,
      { status: 'already', newest_fence: 3, lifetime: null },
    ]);
    const lower = await postFence(sink, { goal_lineage: 'goal-a', fence: 2 });
    expect([lower.status, await lower.json()]).toEqual([409, { error: 'fence_stale', newest_fence: 3 }]);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 3, lifetime: null });

    const old = await postFenced(sink, 'key-2', 'op-2', { n: 2 }, 'goal-a', 2);
    expect([old.status, await old.json()]).toEqual([409, { error: 'fence_stale', newest_fence: 3 }]);
    expect((await postFenced(sink, 'key-2', 'op-2', { n: 2 }, 'goal-a', 3)).status).toBe(201);
    // A delivery with a higher fence raises it too.
    expect((await postFenced(sink, 'key-3', 'op-3', {}, 'goal-a', 5)).status).toBe(201);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 5, lifetime: null });
  });

  it('a malformed POST /fences or GET /fences is 400 and changes nothing', async () => {
    const sink = await start();
    for (const bad of [
      { goal_lineage: 'goal a', fence: 1 },
      { goal_lineage: 'goal-a', fence: -1 },
      { goal_lineage: 'goal-a', fence: 1.5 },
      { goal_lineage: 'goal-a' },
      null,
    ]) {
      const r = await postFence(sink, bad);
      expect([r.status, await r.json()]).toEqual([400, { error: 'fence_request_invalid' }]);
    }
    expect((await fetch(`${sink.url}/fences`)).status).toBe(400);
    expect((await fetch(`${sink.url}/fences`, { method: 'PUT' })).status).toBe(405);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: null, lifetime: null });
  });

  it('fence headers come both or neither, the fence a canonical non-negative safe integer; a refused header is 400 and no attempt', async () => {
    const sink = await start();
    const only = (headers: Record<string, string>) =>
      fetch(sink.deliveriesUrl, {
        method: 'POST',
        headers: { 'idempotency-key': 'k', 'x-operation-id': 'op', ...headers },
        body: '{}',
      });
    for (const headers of [{ 'x-loopx-goal-lineage': 'goal-a' }, { 'x-loopx-fence': '1' }] as Array<
      Record<string, string>
    >) {
      const r = await only(headers);
      expect([r.status, await r.json()]).toEqual([400, { error: 'fence_headers_incomplete' }]);
    }
    for (const fence of ['-1', '01', '1.5', '1e3', '9007199254740992', '']) {
      const r = await only({ 'x-loopx-goal-lineage': 'goal-a', 'x-loopx-fence': fence });
      expect([fence, r.status, await r.json()]).toEqual([fence, 400, { error: 'fence_invalid' }]);
    }
    const badLineage = await only({ 'x-loopx-goal-lineage': 'goal/a', 'x-loopx-fence': '1' });
    expect([badLineage.status, await badLineage.json()]).toEqual([400, { error: 'goal_lineage_invalid' }]);
    expect((await only({ 'x-loopx-goal-lineage': 'goal-a', 'x-loopx-fence': '9007199254740991' })).status).toBe(201);
    expect(sink.attempts().attempts).toHaveLength(1);
  });

  it('the attempts ledger records every attempt with its result and counts each, per lineage too', async () => {
    const sink = await start();
    await postFenced(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 1); // stored
    await postFenced(sink, 'key-1', 'op-1b', { n: 1 }, 'goal-a', 2); // duplicate (raises the fence to 2)
    await postFenced(sink, 'key-2', 'op-2', { n: 2 }, 'goal-a', 1); // refused_stale_fence
    await postFenced(sink, 'key-1', 'op-1', { n: 9 }, 'goal-a', 2); // conflict
    sink.failNext('drop_before_store');
    await expect(postFenced(sink, 'key-3', 'op-3', { n: 3 }, 'goal-a', 2)).rejects.toThrow(); // dropped
    await post(sink, 'key-4', 'op-4', {}); // stored, no lineage

    const all = await attemptsOf(sink);
    expect(all.counts).toEqual({
      stored: 2,
      duplicate: 1,
      refused_stale_fence: 1,
      refused_fence_conflict: 0,
      conflict: 1,
      dropped: 1,
    });
    expect(all.attempts.map((a) => [a.sequence, a.operation_id, a.goal_lineage, a.fence, a.result])).toEqual([
      [1, 'op-1', 'goal-a', 1, 'stored'],
      [2, 'op-1b', 'goal-a', 2, 'duplicate'],
      [3, 'op-2', 'goal-a', 1, 'refused_stale_fence'],
      [4, 'op-1', 'goal-a', 2, 'conflict'],
      [5, 'op-3', 'goal-a', 2, 'dropped'],
      [6, 'op-4', null, null, 'stored'],
    ]);
    expect(all.attempts.every((a) => typeof a.at === 'string' && typeof a.idempotency_key === 'string')).toBe(true);
    expect(sink.attempts()).toEqual(all);
    const a = await attemptsOf(sink, 'goal-a');
    expect(a.counts).toEqual({
      stored: 1,
      duplicate: 1,
      refused_stale_fence: 1,
      refused_fence_conflict: 0,
      conflict: 1,
      dropped: 1,
    });
    expect(sink.attempts('goal-a')).toEqual(a);
    expect((await attemptsOf(sink, 'goal-b')).attempts).toEqual([]);
    expect(sink.deliveries().map((d) => d.operation_id)).toEqual(['op-1', 'op-4']);
  });

  it("GET /deliveries?goal_lineage lists that lineage's deliveries in arrival order; the other queries are unchanged", async () => {
    const sink = await start();
    await postFenced(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 1);
    await postFenced(sink, 'key-2', 'op-2', { n: 2 }, 'goal-b', 1);
    await post(sink, 'key-3', 'op-3', { n: 3 });
    await postFenced(sink, 'key-4', 'op-4', { n: 4 }, 'goal-a', 2);
    const byLineage = async (lineage: string) =>
      (
        (await (await fetch(`${sink.deliveriesUrl}?goal_lineage=${lineage}`)).json()) as {
          deliveries: Array<{ operation_id: string; fence: number }>;
        }
      ).deliveries;
    expect((await byLineage('goal-a')).map((d) => [d.operation_id, d.fence])).toEqual([
      ['op-1', 1],
      ['op-4', 2],
    ]);
    expect(await byLineage('goal-c')).toEqual([]);
    expect(((await list(sink)) as Array<{ operation_id: string }>).map((d) => d.operation_id)).toEqual([
      'op-1',
      'op-2',
      'op-3',
      'op-4',
    ]);
    expect(await query(sink, 'op-2')).toMatchObject({ found: true, delivery: { goal_lineage: 'goal-b', fence: 1 } });
    expect((await fetch(`${sink.deliveriesUrl}?goal_lineage=a%2Fb`)).status).toBe(400);
    expect((await fetch(`${sink.deliveriesUrl}?goal_lineage=goal-a&operation_id=op-1`)).status).toBe(400);
  });

  it('with a journal, fences and attempts survive a restart: an old writer stays refused and the ledger continues', async () => {
    const journalPath = join(tempDir(), 'sink.jsonl');
    const first = await start({ journalPath });
    await postFenced(first, 'key-1', 'op-1', { n: 1 }, 'goal-a', 1);
    await postFence(first, { goal_lineage: 'goal-a', fence: 4 });
    await postFenced(first, 'key-2', 'op-2', { n: 2 }, 'goal-a', 1);
    const before = first.attempts();
    await first.close();
    sinks.splice(sinks.indexOf(first), 1);

    const second = await start({ journalPath });
    expect(await newestFence(second, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 4, lifetime: null });
    expect(second.attempts()).toEqual(before);
    expect(second.deliveries()).toEqual([
      expect.objectContaining({ operation_id: 'op-1', goal_lineage: 'goal-a', fence: 1 }),
    ]);
    expect((await postFenced(second, 'key-3', 'op-3', {}, 'goal-a', 3)).status).toBe(409);
    const replay = await postFenced(second, 'key-1', 'op-1-next', { n: 1 }, 'goal-a', 4);
    expect(replay.status).toBe(200);
    expect(second.attempts().attempts.map((a) => [a.sequence, a.result])).toEqual([
      [1, 'stored'],
      [2, 'refused_stale_fence'],
      [3, 'refused_stale_fence'],
      [4, 'duplicate'],
    ]);
  });

  it('a journal written before fences (plain delivery lines) still loads; new lines append after it', async () => {
    const journalPath = join(tempDir(), 'sink.jsonl');
    const old = (sequence: number, key: string, op: string, body: unknown) => ({
      sequence,
      idempotency_key: key,
      operation_id: op,
      body,
      body_sha256: createHash('sha256').update(canonicalJson(body)).digest('hex'),
      received_at: '2025-01-01T00:00:00.000Z',
    });
    writeFileSync(
      journalPath,
      `${JSON.stringify(old(1, 'key-1', 'op-1', { n: 1 }))}\n${JSON.stringify(old(2, 'key-2', 'op-2', [1]))}\n`,
      { mode: 0o600 },
    );
    const first = await start({ journalPath });
    expect(first.deliveries().map((d) => [d.sequence, d.operation_id, d.goal_lineage, d.fence])).toEqual([
      [1, 'op-1', null, null],
      [2, 'op-2', null, null],
    ]);
    expect(first.attempts()).toEqual({
      attempts: [],
      counts: { stored: 0, duplicate: 0, refused_stale_fence: 0, refused_fence_conflict: 0, conflict: 0, dropped: 0 },
    });
    expect((await post(first, 'key-1', 'op-1', { n: 1 })).status).toBe(200);
    expect((await postFenced(first, 'key-3', 'op-3', {}, 'goal-a', 1)).status).toBe(201);
    await first.close();
    sinks.splice(sinks.indexOf(first), 1);
    const types = readFileSync(journalPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { type?: string }).type ?? 'untyped');
    expect(types).toEqual(['untyped', 'untyped', 'attempt', 'fence', 'delivery', 'attempt']);

    const second = await start({ journalPath });
    expect(second.deliveries().map((d) => d.operation_id)).toEqual(['op-1', 'op-2', 'op-3']);
    expect(second.attempts().counts).toMatchObject({ stored: 1, duplicate: 1 });
    expect(await newestFence(second, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 1, lifetime: null });
  });

  it('a journal line that breaks a rule is refused at start', async () => {
    const fence = (lineage: string, n: number) => JSON.stringify({ type: 'fence', goal_lineage: lineage, fence: n });
    const attempt = (result: string) =>
      JSON.stringify({
        type: 'attempt',
        sequence: 1,
        at: 'x',
        idempotency_key: 'k',
        operation_id: 'o',
        goal_lineage: null,
        fence: null,
        result,
      });
    const fencedDelivery = JSON.stringify({
      type: 'delivery',
      sequence: 1,
      idempotency_key: 'k',
      operation_id: 'o',
      goal_lineage: 'goal-a',
      fence: 2,
      body: {},
      body_sha256: createHash('sha256').update('{}').digest('hex'),
      received_at: 'x',
    });
    const cases = {
      'a fence that does not rise': [fence('goal-a', 2), fence('goal-a', 2)],
      'an unknown line type': [JSON.stringify({ type: 'nope' })],
      'an attempt with an unknown result': [attempt('maybe')],
      "a delivery above its lineage's newest fence": [fence('goal-a', 1), fencedDelivery],
      'a torn line': [fence('goal-a', 1), '{"type":"fen'],
    };
    for (const [name, lines] of Object.entries(cases)) {
      const journalPath = join(tempDir(), 'sink.jsonl');
      writeFileSync(journalPath, `${lines.join('\n')}\n`);
      expect([name, await codeOf(startWebhookSink({ port: 0, journalPath }))]).toEqual([
        name,
        'webhook_sink_journal_invalid',
      ]);
    }
    // The well-formed versions load.
    const journalPath = join(tempDir(), 'sink.jsonl');
    writeFileSync(journalPath, `${[fence('goal-a', 2), fencedDelivery, attempt('stored')].join('\n')}\n`);
    appendFileSync(journalPath, `${fence('goal-a', 3)}\n`);
    const sink = await start({ journalPath });
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 3, lifetime: null });
  });
});

describe('webhook sink: a fence is (lineage, generation, lifetime)', () => {
  const A = 'ginst_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
  const B = 'ginst_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
  /** A POST /deliveries from lifetime `lifetime` of `lineage` at generation `fence`. */
  const postAs = (
    sink: WebhookSink,
    key: string,
    op: string,
    body: unknown,
    lineage: string,
    fence: number,
    lifetime: string,
  ) =>
    fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': key,
        'x-operation-id': op,
        'x-loopx-goal-lineage': lineage,
        'x-loopx-fence': String(fence),
        'x-loopx-goal-lifetime': lifetime,
      },
      body: JSON.stringify(body),
    });

  it('a second lifetime raising the same generation is 409 fence_conflict and nothing is raised; the holder keeps it', async () => {
    const sink = await start();
    const first = await postFence(sink, { goal_lineage: 'goal-a', fence: 2, lifetime: A });
    expect([first.status, await first.json()]).toEqual([200, { status: 'advanced', newest_fence: 2, lifetime: A }]);
    const second = await postFence(sink, { goal_lineage: 'goal-a', fence: 2, lifetime: B });
    expect([second.status, await second.json()]).toEqual([
      409,
      { error: 'fence_conflict', newest_fence: 2, lifetime: A },
    ]);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 2, lifetime: A });
    // The holder asking again is idempotent.
    const again = await postFence(sink, { goal_lineage: 'goal-a', fence: 2, lifetime: A });
    expect([again.status, await again.json()]).toEqual([200, { status: 'already', newest_fence: 2, lifetime: A }]);
  });

  it('a second lifetime at the same generation is refused fence_conflict and nothing is stored, not even a re-send of a held key', async () => {
    const sink = await start();
    await postFence(sink, { goal_lineage: 'goal-a', fence: 2, lifetime: A });
    expect((await postAs(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 2, A)).status).toBe(201);
    const other = await postAs(sink, 'key-2', 'op-2', { n: 2 }, 'goal-a', 2, B);
    expect([other.status, await other.json()]).toEqual([
      409,
      { error: 'fence_conflict', newest_fence: 2, lifetime: A },
    ]);
    const resend = await postAs(sink, 'key-1', 'op-1-b', { n: 1 }, 'goal-a', 2, B);
    expect([resend.status, await resend.json()]).toEqual([
      409,
      { error: 'fence_conflict', newest_fence: 2, lifetime: A },
    ]);
    expect(sink.deliveries().map((d) => [d.operation_id, d.goal_lineage, d.fence, d.lifetime])).toEqual([
      ['op-1', 'goal-a', 2, A],
    ]);
    expect(await query(sink, 'op-2')).toEqual({ found: false, delivery: null });
    const ledger = await attemptsOf(sink, 'goal-a');
    expect(ledger.attempts.map((a) => [a.operation_id, a.lifetime, a.result])).toEqual([
      ['op-1', A, 'stored'],
      ['op-2', B, 'refused_fence_conflict'],
      ['op-1-b', B, 'refused_fence_conflict'],
    ]);
    expect(ledger.counts).toMatchObject({ stored: 1, duplicate: 0, refused_fence_conflict: 2 });
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 2, lifetime: A });
  });

  it('the first lifetime to deliver at a generation holds it: the delivery raises the fence for its lifetime', async () => {
    const sink = await start();
    expect((await postAs(sink, 'key-1', 'op-1', { n: 1 }, 'goal-a', 1, A)).status).toBe(201);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 1, lifetime: A });
    expect((await postAs(sink, 'key-2', 'op-2', { n: 2 }, 'goal-a', 1, B)).status).toBe(409);
    expect(sink.deliveries().map((d) => d.operation_id)).toEqual(['op-1']);
  });

  it('a higher generation of another lifetime advances and takes the fence; the older lifetime is then stale', async () => {
    const sink = await start();
    await postFence(sink, { goal_lineage: 'goal-a', fence: 1, lifetime: A });
    const up = await postFence(sink, { goal_lineage: 'goal-a', fence: 2, lifetime: B });
    expect([up.status, await up.json()]).toEqual([200, { status: 'advanced', newest_fence: 2, lifetime: B }]);
    const old = await postAs(sink, 'key-1', 'op-1', {}, 'goal-a', 1, A);
    expect([old.status, await old.json()]).toEqual([409, { error: 'fence_stale', newest_fence: 2 }]);
    const lower = await postFence(sink, { goal_lineage: 'goal-a', fence: 1, lifetime: A });
    expect([lower.status, await lower.json()]).toEqual([409, { error: 'fence_stale', newest_fence: 2 }]);
    expect((await postAs(sink, 'key-2', 'op-2', {}, 'goal-a', 2, B)).status).toBe(201);
  });

  it('a fence without a lifetime keeps the counter rule; a lifetime claims a fence no lifetime holds', async () => {
    const sink = await start();
    // A bare counter (a cluster run's epoch, an older writer) at a fence a lifetime holds: accepted, the holder unchanged.
    await postFence(sink, { goal_lineage: 'goal-a', fence: 2, lifetime: A });
    const bare = await postFence(sink, { goal_lineage: 'goal-a', fence: 2 });
    expect([bare.status, await bare.json()]).toEqual([200, { status: 'already', newest_fence: 2, lifetime: A }]);
    expect((await postFenced(sink, 'key-1', 'op-1', {}, 'goal-a', 2)).status).toBe(201);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 2, lifetime: A });
    // A bare counter above it rises, and no lifetime holds the new fence...
    expect((await postFenced(sink, 'key-2', 'op-2', {}, 'goal-a', 3)).status).toBe(201);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 3, lifetime: null });
    // ...until a lifetime names it: that one holds it, and another is refused.
    const claim = await postFence(sink, { goal_lineage: 'goal-a', fence: 3, lifetime: B });
    expect([claim.status, await claim.json()]).toEqual([200, { status: 'advanced', newest_fence: 3, lifetime: B }]);
    expect((await postAs(sink, 'key-3', 'op-3', {}, 'goal-a', 3, A)).status).toBe(409);
    // A lineage of bare counters alone (a cluster's runs) never meets a conflict.
    expect((await postFence(sink, { goal_lineage: 'run_1', fence: 1 })).status).toBe(200);
    expect((await postFenced(sink, 'key-4', 'op-4', {}, 'run_1', 1)).status).toBe(201);
    expect((await postFenced(sink, 'key-5', 'op-5', {}, 'run_1', 2)).status).toBe(201);
    expect((await postFenced(sink, 'key-6', 'op-6', {}, 'run_1', 1)).status).toBe(409);
  });

  it('a lifetime header comes only with the fence headers and must be well-formed; a bad POST /fences lifetime is 400', async () => {
    const sink = await start();
    const only = (headers: Record<string, string>) =>
      fetch(sink.deliveriesUrl, {
        method: 'POST',
        headers: { 'idempotency-key': 'k', 'x-operation-id': 'op', ...headers },
        body: '{}',
      });
    const alone = await only({ 'x-loopx-goal-lifetime': A });
    expect([alone.status, await alone.json()]).toEqual([400, { error: 'fence_headers_incomplete' }]);
    const bad = await only({
      'x-loopx-goal-lineage': 'goal-a',
      'x-loopx-fence': '1',
      'x-loopx-goal-lifetime': 'ginst/a',
    });
    expect([bad.status, await bad.json()]).toEqual([400, { error: 'goal_lifetime_invalid' }]);
    for (const lifetime of ['', 'a b', 7]) {
      const r = await postFence(sink, { goal_lineage: 'goal-a', fence: 1, lifetime });
      expect([r.status, await r.json()]).toEqual([400, { error: 'fence_request_invalid' }]);
    }
    expect(sink.attempts().attempts).toEqual([]);
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: null, lifetime: null });
  });

  it('with a journal, the lifetime holding a fence survives a restart: the other lifetime stays refused', async () => {
    const journalPath = join(tempDir(), 'sink.jsonl');
    const first = await start({ journalPath });
    await postFence(first, { goal_lineage: 'goal-a', fence: 2, lifetime: A });
    await postAs(first, 'key-1', 'op-1', { n: 1 }, 'goal-a', 2, A);
    await postAs(first, 'key-2', 'op-2', { n: 2 }, 'goal-a', 2, B);
    const before = first.attempts();
    await first.close();
    sinks.splice(sinks.indexOf(first), 1);

    const second = await start({ journalPath });
    expect(await newestFence(second, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 2, lifetime: A });
    expect(second.attempts()).toEqual(before);
    expect(second.deliveries().map((d) => [d.operation_id, d.lifetime])).toEqual([['op-1', A]]);
    const other = await postAs(second, 'key-3', 'op-3', {}, 'goal-a', 2, B);
    expect([other.status, await other.json()]).toEqual([
      409,
      { error: 'fence_conflict', newest_fence: 2, lifetime: A },
    ]);
    expect(second.deliveries()).toHaveLength(1);
  });

  it('a journal written before lifetimes loads: its fences are held by no lifetime, and the first lifetime to name one claims it', async () => {
    const journalPath = join(tempDir(), 'sink.jsonl');
    const body = { n: 1 };
    const lines = [
      { type: 'fence', goal_lineage: 'goal-a', fence: 2 },
      {
        type: 'delivery',
        sequence: 1,
        idempotency_key: 'key-1',
        operation_id: 'op-1',
        goal_lineage: 'goal-a',
        fence: 2,
        body,
        body_sha256: createHash('sha256').update(canonicalJson(body)).digest('hex'),
        received_at: '2025-01-01T00:00:00.000Z',
      },
      {
        type: 'attempt',
        sequence: 1,
        at: '2025-01-01T00:00:00.000Z',
        idempotency_key: 'key-1',
        operation_id: 'op-1',
        goal_lineage: 'goal-a',
        fence: 2,
        result: 'stored',
      },
    ];
    writeFileSync(journalPath, lines.map((l) => `${JSON.stringify(l)}\n`).join(''), { mode: 0o600 });
    const first = await start({ journalPath });
    expect(await newestFence(first, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 2, lifetime: null });
    expect(first.deliveries().map((d) => [d.operation_id, d.fence, d.lifetime])).toEqual([['op-1', 2, null]]);
    expect(first.attempts().attempts.map((a) => [a.operation_id, a.lifetime, a.result])).toEqual([
      ['op-1', null, 'stored'],
    ]);
    expect((await postAs(first, 'key-2', 'op-2', {}, 'goal-a', 2, A)).status).toBe(201);
    expect((await postAs(first, 'key-3', 'op-3', {}, 'goal-a', 2, B)).status).toBe(409);
    await first.close();
    sinks.splice(sinks.indexOf(first), 1);
    const second = await start({ journalPath });
    expect(await newestFence(second, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 2, lifetime: A });
    expect(second.deliveries().map((d) => d.operation_id)).toEqual(['op-1', 'op-2']);
  });

  it('a journal line that gives a held generation to another lifetime is refused at start', async () => {
    const fence = (n: number, lifetime: string | null) =>
      JSON.stringify({ type: 'fence', goal_lineage: 'goal-a', fence: n, lifetime });
    const delivery = (lifetime: string) =>
      JSON.stringify({
        type: 'delivery',
        sequence: 1,
        idempotency_key: 'k',
        operation_id: 'o',
        goal_lineage: 'goal-a',
        fence: 2,
        lifetime,
        body: {},
        body_sha256: createHash('sha256').update('{}').digest('hex'),
        received_at: 'x',
      });
    const cases = {
      'another lifetime at a held fence': [fence(2, A), fence(2, B)],
      'a bare fence that does not rise': [fence(2, A), fence(2, null)],
      'a delivery of another lifetime at the held fence': [fence(2, A), delivery(B)],
      'a malformed lifetime': [fence(2, 'a b')],
    };
    for (const [name, lines] of Object.entries(cases)) {
      const journalPath = join(tempDir(), 'sink.jsonl');
      writeFileSync(journalPath, `${lines.join('\n')}\n`);
      expect([name, await codeOf(startWebhookSink({ port: 0, journalPath }))]).toEqual([
        name,
        'webhook_sink_journal_invalid',
      ]);
    }
    const journalPath = join(tempDir(), 'sink.jsonl');
    writeFileSync(journalPath, `${[fence(2, null), fence(2, A), delivery(A)].join('\n')}\n`);
    const sink = await start({ journalPath });
    expect(await newestFence(sink, 'goal-a')).toEqual({ goal_lineage: 'goal-a', newest_fence: 2, lifetime: A });
  });
});
