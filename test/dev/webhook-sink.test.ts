/**
 * The loopback webhook sink: stores a delivery once per idempotency key, answers queries by
 * operation id, binds loopback only, bounds bodies, and simulates a lost response on request.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';

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
const query = async (sink: WebhookSink, op: string) => (await fetch(`${sink.deliveriesUrl}?operation_id=${encodeURIComponent(op)}`)).json();
const list = async (sink: WebhookSink) => ((await (await fetch(sink.deliveriesUrl)).json()) as { deliveries: unknown[] }).deliveries;
const codeOf = async (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );

describe('webhook sink', () => {
  it('binds 127.0.0.1 only; any other host is refused before listening', async () => {
    const sink = await start();
    expect(sink.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await codeOf(startWebhookSink({ port: 0, host: '0.0.0.0' as '127.0.0.1' }))).toBe('webhook_sink_host_not_loopback');
  });

  it('stores a delivery once; a repeat with the same key returns the original with 200 and replayed: true', async () => {
    const sink = await start();
    const first = await post(sink, 'key-1', 'op-1', { n: 1 });
    expect(first.status).toBe(201);
    const a = (await first.json()) as { replayed: boolean; delivery: { sequence: number } };
    expect(a).toMatchObject({ replayed: false, delivery: { sequence: 1, idempotency_key: 'key-1', operation_id: 'op-1', body: { n: 1 } } });
    const again = await post(sink, 'key-1', 'op-1', { n: 1 });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ replayed: true, delivery: a.delivery });
    expect(await list(sink)).toHaveLength(1);
  });

  it('a key reused with another body or operation id, or an operation id under another key, is 409 and stores nothing', async () => {
    const sink = await start();
    await post(sink, 'key-1', 'op-1', { n: 1 });
    expect((await post(sink, 'key-1', 'op-1', { n: 2 })).status).toBe(409);
    expect((await post(sink, 'key-1', 'op-2', { n: 1 })).status).toBe(409);
    const r = await post(sink, 'key-2', 'op-1', { n: 1 });
    expect(r.status).toBe(409);
    expect(await r.json()).toEqual({ error: 'operation_id_reused' });
    expect(sink.deliveries()).toHaveLength(1);
  });

  it('missing headers and malformed JSON are 400', async () => {
    const sink = await start();
    const noKey = await fetch(sink.deliveriesUrl, { method: 'POST', headers: { 'x-operation-id': 'op-1' }, body: '{}' });
    expect([noKey.status, await noKey.json()]).toEqual([400, { error: 'missing_idempotency_key' }]);
    const noOp = await fetch(sink.deliveriesUrl, { method: 'POST', headers: { 'idempotency-key': 'k' }, body: '{}' });
    expect([noOp.status, await noOp.json()]).toEqual([400, { error: 'missing_x_operation_id' }]);
    const bad = await fetch(sink.deliveriesUrl, { method: 'POST', headers: { 'idempotency-key': 'k', 'x-operation-id': 'op' }, body: '{nope' });
    expect([bad.status, await bad.json()]).toEqual([400, { error: 'invalid_json' }]);
    expect(sink.deliveries()).toEqual([]);
  });

  it('answers a query by operation id and lists all deliveries', async () => {
    const sink = await start();
    await post(sink, 'key-1', 'op-1', { a: true });
    await post(sink, 'key-2', 'op-2', [1, 2]);
    expect(await query(sink, 'op-2')).toMatchObject({ found: true, delivery: { idempotency_key: 'key-2', operation_id: 'op-2', body: [1, 2], sequence: 2 } });
    expect(await query(sink, 'op-3')).toEqual({ found: false, delivery: null });
    expect(((await list(sink)) as Array<{ operation_id: string }>).map((d) => d.operation_id)).toEqual(['op-1', 'op-2']);
  });

  it('a body over 1 MiB is 413 and stores nothing; exactly 1 MiB is accepted', async () => {
    const sink = await start();
    const over = JSON.stringify({ s: 'x'.repeat(1024 * 1024) });
    const r = await fetch(sink.deliveriesUrl, { method: 'POST', headers: { 'idempotency-key': 'big', 'x-operation-id': 'op-big' }, body: over });
    expect([r.status, await r.json()]).toEqual([413, { error: 'body_too_large' }]);
    const exact = JSON.stringify({ s: 'x'.repeat(1024 * 1024 - 8) });
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    expect((await fetch(sink.deliveriesUrl, { method: 'POST', headers: { 'idempotency-key': 'ok', 'x-operation-id': 'op-ok' }, body: exact })).status).toBe(201);
    expect(sink.deliveries().map((d) => d.operation_id)).toEqual(['op-ok']);
  });

  it('drop_response_after_store commits the delivery and loses the response; the query still finds it', async () => {
    const sink = await start();
    const armed = await fetch(`${sink.url}/control`, { method: 'POST', body: JSON.stringify({ mode: 'drop_response_after_store' }) });
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
    expect((await fetch(`${sink.url}/control`, { method: 'POST', body: JSON.stringify({ mode: 'explode' }) })).status).toBe(400);
    const quiet = await start({ control: false });
    expect((await fetch(`${quiet.url}/control`, { method: 'POST', body: JSON.stringify({ mode: 'none' }) })).status).toBe(404);
  });

  it('a request for another Host is refused with 421 (no DNS rebinding)', async () => {
    const sink = await start();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: sink.port, path: '/deliveries', headers: { host: 'evil.example:80' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
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
