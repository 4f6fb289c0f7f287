/**
 * Webhook delivery through the effect journal against the real loopback sink (port 0). A lost
 * response leaves the effect unknown; reconciliation by the ORIGINAL operation id finds it
 * committed — and the sink still holds exactly one delivery. Nothing is ever retried blindly.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../../src/dev/index.js';
import {
  deliverWebhook,
  memoryEffectJournal,
  openSqliteEffectJournal,
  sendWebhook,
  webhookIntent,
  webhookOperationQuery,
  webhookTarget,
  type EffectJournal,
} from '../../../src/owners/effect/index.js';

const dirs: string[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-webhook-'));
  dirs.push(d);
  return d;
};
const sinkAt = async (port = 0, journalPath?: string): Promise<WebhookSink> => {
  const sink = await startWebhookSink({ port, host: '127.0.0.1', ...(journalPath ? { journalPath } : {}) });
  closers.push(() => sink.close());
  return sink;
};
const asyncCodeOf = (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );

const providers: Array<[string, () => EffectJournal]> = [
  ['memory', () => memoryEffectJournal()],
  ['sqlite', () => openSqliteEffectJournal(join(tempDir(), 'effects.db'))],
];

const delivery = (sink: WebhookSink, n = 1) => ({
  goal_id: 'g1',
  url: sink.deliveriesUrl,
  operation_id: `op-${n}`,
  idempotency_key: `key-${n}`,
  body: { todo: 't1', n },
});

describe.each(providers)('webhook delivery (%s journal)', (_name, make) => {
  it('delivers once with the Idempotency-Key and X-Operation-Id headers and records committed', async () => {
    const sink = await sinkAt();
    const j = make();
    const r = await deliverWebhook(j, delivery(sink));
    expect(r.dispatched).toBe(true);
    expect(r.effect).toMatchObject({ outcome: 'committed', kind: 'webhook.deliver', target: `webhook:127.0.0.1:${sink.port}`, attempt: 1 });
    expect(r.effect.receipt).toMatchObject({ http_status: 201, response: { replayed: false, delivery: { operation_id: 'op-1', idempotency_key: 'key-1' } } });
    expect(sink.deliveries()).toEqual([expect.objectContaining({ operation_id: 'op-1', idempotency_key: 'key-1', body: { todo: 't1', n: 1 } })]);
    j.close();
  });

  it('a repeated delivery of a settled effect sends nothing', async () => {
    const sink = await sinkAt();
    const j = make();
    const first = await deliverWebhook(j, delivery(sink));
    const again = await deliverWebhook(j, delivery(sink));
    expect(again).toEqual({ effect: first.effect, dispatched: false });
    expect(sink.deliveries()).toHaveLength(1);
    j.close();
  });

  it('a lost response gives unknown; reconcile by the original operation id finds it committed without a second delivery', async () => {
    const sink = await sinkAt();
    const j = make();
    sink.failNext('drop_response_after_store');
    const lost = await deliverWebhook(j, delivery(sink));
    expect(lost.effect).toMatchObject({ outcome: 'unknown', receipt: { reason: 'network_error' } });
    expect(sink.deliveries()).toHaveLength(1); // the external system did commit

    // Delivering again never re-dispatches an unknown effect.
    expect(await deliverWebhook(j, delivery(sink))).toMatchObject({ dispatched: false, effect: { outcome: 'unknown' } });

    const r = await j.reconcile('op-1', webhookOperationQuery());
    expect(r.resolution).toBe('committed');
    expect(r.effect).toMatchObject({ operation_id: 'op-1', outcome: 'committed', attempt: 1 });
    expect(r.effect.receipt).toMatchObject({
      reconciled: true,
      observation: { source: 'operation_query', found: true, delivery: { operation_id: 'op-1', idempotency_key: 'key-1' } },
    });
    const stored = (await (await fetch(sink.deliveriesUrl)).json()) as { deliveries: unknown[] };
    expect(stored.deliveries).toHaveLength(1);
    expect(await j.list()).toHaveLength(1);
    expect(await j.holds()).toEqual([]);
    j.close();
  });

  it('a 500 after the sink stored it is unknown, not rejected, and reconciles to committed', async () => {
    const sink = await sinkAt();
    const j = make();
    sink.failNext('respond_500_after_store');
    const r = await deliverWebhook(j, delivery(sink));
    expect(r.effect).toMatchObject({ outcome: 'unknown', receipt: { http_status: 500 } });
    expect((await j.reconcile('op-1', webhookOperationQuery())).effect.outcome).toBe('committed');
    expect(sink.deliveries()).toHaveLength(1);
    j.close();
  });

  it('a request lost before the sink stored it reconciles to absent; only then is it reissued, under the same identity', async () => {
    const sink = await sinkAt();
    const j = make();
    sink.failNext('drop_before_store');
    expect((await deliverWebhook(j, delivery(sink))).effect.outcome).toBe('unknown');
    const r = await j.reconcile('op-1', webhookOperationQuery());
    expect([r.resolution, r.effect.outcome]).toEqual(['absent', 'absent']);
    expect(await deliverWebhook(j, delivery(sink))).toMatchObject({ dispatched: false, effect: { outcome: 'absent' } });
    await j.reissue('op-1');
    const again = await deliverWebhook(j, delivery(sink));
    expect(again.effect).toMatchObject({ outcome: 'committed', attempt: 2 });
    expect(sink.deliveries().map((d) => [d.operation_id, d.idempotency_key])).toEqual([['op-1', 'key-1']]);
    j.close();
  });

  it('an unreachable system is unknown; reconcile while it is down is a visible hold, and resolves once it answers', async () => {
    const journalPath = join(tempDir(), 'sink.jsonl');
    const sink = await sinkAt(0, journalPath);
    const port = sink.port;
    await sink.close();
    closers.pop();
    const j = make();
    const r = await deliverWebhook(j, { ...delivery(sink), url: `http://127.0.0.1:${port}/deliveries` });
    expect(r.effect).toMatchObject({ outcome: 'unknown', receipt: { reason: 'network_error' } });
    const held = await j.reconcile('op-1', webhookOperationQuery());
    expect(held).toMatchObject({ resolution: 'held', effect: { outcome: 'unknown', hold: 'query_unreachable' } });
    expect((await j.holds()).map((e) => e.operation_id)).toEqual(['op-1']);
    await sinkAt(port, journalPath);
    const resolved = await j.reconcile('op-1', webhookOperationQuery());
    expect([resolved.resolution, resolved.effect.hold]).toEqual(['absent', null]);
    j.close();
  });

  it('a timeout is unknown and never retried', async () => {
    const hanging: Server = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((res) => hanging.listen(0, '127.0.0.1', res));
    closers.push(
      () =>
        new Promise<void>((res) => {
          hanging.closeAllConnections();
          hanging.close(() => res());
        }),
    );
    let requests = 0;
    hanging.on('request', () => requests++);
    const j = make();
    const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/deliveries`;
    const r = await deliverWebhook(j, { goal_id: 'g1', url, operation_id: 'op-1', idempotency_key: 'key-1', body: {} }, { timeoutMs: 100 });
    expect(r.effect).toMatchObject({ outcome: 'unknown', receipt: { reason: 'timeout' } });
    expect(requests).toBe(1);
    j.close();
  });

  it('a definite refusal (409 for a reused key with another body) is rejected and never reconciled', async () => {
    const sink = await sinkAt();
    await fetch(sink.deliveriesUrl, { method: 'POST', headers: { 'idempotency-key': 'key-1', 'x-operation-id': 'op-1' }, body: '{"other":true}' });
    const j = make();
    const r = await deliverWebhook(j, delivery(sink));
    expect(r.effect).toMatchObject({ outcome: 'rejected', receipt: { http_status: 409 } });
    expect((await j.reconcile('op-1', webhookOperationQuery())).resolution).toBe('already_settled');
    j.close();
  });

  it('a dispatch that never settled is not sent again by a repeated delivery', async () => {
    const sink = await sinkAt();
    const j = make();
    const req = delivery(sink);
    await j.recordIntent({
      operation_id: req.operation_id,
      idempotency_key: req.idempotency_key,
      goal_id: 'g1',
      kind: 'webhook.deliver',
      target: webhookTarget(req.url),
      intent: { url: req.url, body: req.body },
    });
    await j.beginDispatch('op-1'); // as if the process died right after dispatching
    expect(await asyncCodeOf(deliverWebhook(j, req))).toBe('effect_dispatch_in_flight');
    expect(sink.deliveries()).toEqual([]);
    expect((await j.reconcile('op-1', webhookOperationQuery())).effect.outcome).toBe('absent');
    j.close();
  });

  it('sendWebhook posts the recorded intent of a journalled effect once, under its operation id, and records nothing itself', async () => {
    const sink = await sinkAt();
    const j = make();
    const req = delivery(sink);
    await j.recordIntent({
      operation_id: req.operation_id,
      idempotency_key: req.idempotency_key,
      goal_id: 'g1',
      kind: 'webhook.deliver',
      target: webhookTarget(req.url),
      intent: webhookIntent(req.url, req.body),
    });
    const dispatched = await j.beginDispatch('op-1');
    const sent = await sendWebhook(dispatched);
    expect(sent).toMatchObject({ outcome: 'committed', receipt: { http_status: 201 } });
    expect(sink.deliveries()).toEqual([expect.objectContaining({ operation_id: 'op-1', idempotency_key: 'key-1', body: { todo: 't1', n: 1 } })]);
    expect(await j.get('op-1')).toEqual(dispatched); // the caller settles it
    j.close();
  });

  it('the target names the host only: credentials, path and query stay in the private intent', async () => {
    expect(webhookTarget('https://user:s3cret@hooks.example:8443/T0/B1/XYZ?token=abc')).toBe('webhook:hooks.example:8443');
    const j = make();
    expect(await asyncCodeOf(deliverWebhook(j, { goal_id: 'g1', url: 'file:///etc/passwd', operation_id: 'op-1', idempotency_key: 'k', body: {} }))).toBe('effect_input_invalid');
    expect(await j.list()).toEqual([]);
    j.close();
  });
});
