/**
 * Webhook delivery through the effect journal against the real loopback sink (port 0). A lost
 * response leaves the effect unknown; reconciliation by the ORIGINAL operation id finds it
 * committed — and the sink still holds exactly one delivery. Nothing is ever retried blindly.
 * A Goal recovered into a new lifetime fences its old writers at the receiver: their deliveries
 * are refused there (`fence_stale`, settled rejected), and the new lifetime's re-send of a logical
 * operation is a counted duplicate, never a second delivery. A fence names its lifetime: another
 * lifetime at the same generation (a second recovery of one backup) is refused there too
 * (`fence_conflict`, settled rejected), and raising that fence answers `conflict`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../../src/dev/index.js';
import {
  advanceReceiverFence,
  deliverWebhook,
  memoryEffectJournal,
  openSqliteEffectJournal,
  sendWebhook,
  webhookGoalQuery,
  webhookIntent,
  webhookOperationQuery,
  webhookTarget,
  type DeliveryFence,
  type EffectJournal,
  type JsonValue,
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

/** Journals a webhook effect (fenced when `fence` is given), records its dispatch and sends it once. */
const sendOnce = async (
  j: EffectJournal,
  url: string,
  op: string,
  key: string,
  body: JsonValue,
  fence?: DeliveryFence,
  fetchImpl?: typeof fetch,
) => {
  await j.recordIntent({
    operation_id: op,
    idempotency_key: key,
    goal_id: 'g1',
    kind: 'webhook.deliver',
    target: webhookTarget(url),
    intent: webhookIntent(url, body, fence),
  });
  return sendWebhook(await j.beginDispatch(op), fetchImpl ? { fetch: fetchImpl } : {});
};

/** A fetch that records the headers of every request it passes on. */
const recordingFetch = () => {
  const seen: Array<Record<string, string>> = [];
  const f: typeof fetch = (input, init) => {
    seen.push(Object.fromEntries(new Headers(init?.headers).entries()));
    return fetch(input, init);
  };
  return { seen, fetch: f };
};

/** Two Goal lifetimes of one lineage: two recoveries of the same backup. */
const LIFE_A = 'ginst_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const LIFE_B = 'ginst_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';

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
    expect(r.effect).toMatchObject({
      outcome: 'committed',
      kind: 'webhook.deliver',
      target: `webhook:127.0.0.1:${sink.port}`,
      attempt: 1,
    });
    expect(r.effect.receipt).toMatchObject({
      http_status: 201,
      response: { replayed: false, delivery: { operation_id: 'op-1', idempotency_key: 'key-1' } },
    });
    expect(sink.deliveries()).toEqual([
      expect.objectContaining({ operation_id: 'op-1', idempotency_key: 'key-1', body: { todo: 't1', n: 1 } }),
    ]);
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
    expect(await deliverWebhook(j, delivery(sink))).toMatchObject({
      dispatched: false,
      effect: { outcome: 'unknown' },
    });

    const r = await j.reconcile('op-1', webhookOperationQuery());
    expect(r.resolution).toBe('committed');
    expect(r.effect).toMatchObject({ operation_id: 'op-1', outcome: 'committed', attempt: 1 });
    expect(r.effect.receipt).toMatchObject({
      reconciled: true,
      observation: {
        source: 'operation_query',
        found: true,
        delivery: { operation_id: 'op-1', idempotency_key: 'key-1' },
      },
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
    const r = await deliverWebhook(
      j,
      { goal_id: 'g1', url, operation_id: 'op-1', idempotency_key: 'key-1', body: {} },
      { timeoutMs: 100 },
    );
    expect(r.effect).toMatchObject({ outcome: 'unknown', receipt: { reason: 'timeout' } });
    expect(requests).toBe(1);
    j.close();
  });

  it('a definite refusal (409 for a reused key with another body) is rejected and never reconciled', async () => {
    const sink = await sinkAt();
    await fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: { 'idempotency-key': 'key-1', 'x-operation-id': 'op-1' },
      body: '{"other":true}',
    });
    const j = make();
    const r = await deliverWebhook(j, delivery(sink));
    expect(r.effect).toMatchObject({ outcome: 'rejected', receipt: { http_status: 409 } });
    expect(r.effect.receipt).toEqual({ http_status: 409 }); // not a fence refusal: no reason
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
    expect(sink.deliveries()).toEqual([
      expect.objectContaining({ operation_id: 'op-1', idempotency_key: 'key-1', body: { todo: 't1', n: 1 } }),
    ]);
    expect(await j.get('op-1')).toEqual(dispatched); // the caller settles it
    j.close();
  });

  it('a fenced intent is sent with X-Loopx-Goal-Lineage and X-Loopx-Fence; an unfenced one exactly as before', async () => {
    const sink = await sinkAt();
    const j = make();
    const rec = recordingFetch();
    expect(webhookIntent(sink.deliveriesUrl, { n: 1 }, { goal_lineage: 'goal-a', fence: 3 })).toEqual({
      url: sink.deliveriesUrl,
      body: { n: 1 },
      delivery_fence: { goal_lineage: 'goal-a', fence: 3 },
    });
    expect(
      await sendOnce(j, sink.deliveriesUrl, 'op-1', 'key-1', { n: 1 }, { goal_lineage: 'goal-a', fence: 3 }, rec.fetch),
    ).toMatchObject({ outcome: 'committed' });
    expect(await sendOnce(j, sink.deliveriesUrl, 'op-2', 'key-2', { n: 2 }, undefined, rec.fetch)).toMatchObject({
      outcome: 'committed',
    });
    expect(rec.seen).toEqual([
      {
        'content-type': 'application/json',
        'idempotency-key': 'key-1',
        'x-operation-id': 'op-1',
        'x-loopx-goal-lineage': 'goal-a',
        'x-loopx-fence': '3',
      },
      { 'content-type': 'application/json', 'idempotency-key': 'key-2', 'x-operation-id': 'op-2' },
    ]);
    expect(sink.deliveries().map((d) => [d.operation_id, d.goal_lineage, d.fence])).toEqual([
      ['op-1', 'goal-a', 3],
      ['op-2', null, null],
    ]);
    j.close();
  });

  it("an old writer refused by the receiver's fence is rejected with reason fence_stale, stores nothing and is never reconciled", async () => {
    const sink = await sinkAt();
    const j = make();
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2)).toEqual({
      status: 'advanced',
      newest_fence: 2,
    });
    const sent = await sendOnce(j, sink.deliveriesUrl, 'op-1', 'key-1', { n: 1 }, { goal_lineage: 'goal-a', fence: 1 });
    expect(sent).toEqual({
      outcome: 'rejected',
      receipt: { http_status: 409, reason: 'fence_stale', newest_fence: 2 },
    });
    await j.settle('op-1', sent.outcome, sent.receipt);
    expect((await j.reconcile('op-1', webhookOperationQuery())).resolution).toBe('already_settled');
    expect(sink.deliveries()).toEqual([]);
    expect(sink.attempts().counts).toMatchObject({ stored: 0, refused_stale_fence: 1 });
    j.close();
  });

  it('recovery into a new lifetime: the receiver is fenced, asked by lineage, and the re-send under the stable key is a counted duplicate', async () => {
    const sink = await sinkAt();
    const old = make();
    const body = { todo: 't1', n: 1 };
    expect(
      (await sendOnce(old, sink.deliveriesUrl, 'op-1', 'key-t1', body, { goal_lineage: 'goal-a', fence: 1 })).outcome,
    ).toBe('committed');

    // The new lifetime fences the old writer at the receiver, then asks what it already holds.
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2)).toEqual({
      status: 'advanced',
      newest_fence: 2,
    });
    const held = await webhookGoalQuery(sink.deliveriesUrl, 'goal-a');
    expect(held).toMatchObject({
      status: 'answered',
      deliveries: [{ operation_id: 'op-1', idempotency_key: 'key-t1', goal_lineage: 'goal-a', fence: 1, sequence: 1 }],
    });

    // The same logical operation, a new operation id: replayed, never delivered twice.
    const next = make();
    const again = await sendOnce(next, sink.deliveriesUrl, 'op-1-life2', 'key-t1', body, {
      goal_lineage: 'goal-a',
      fence: 2,
    });
    expect(again).toMatchObject({
      outcome: 'committed',
      receipt: { http_status: 200, response: { replayed: true, delivery: { operation_id: 'op-1' } } },
    });
    // The old writer, still running, is refused at the receiver.
    const late = await sendOnce(
      old,
      sink.deliveriesUrl,
      'op-9',
      'key-t9',
      { todo: 't9' },
      { goal_lineage: 'goal-a', fence: 1 },
    );
    expect(late).toEqual({
      outcome: 'rejected',
      receipt: { http_status: 409, reason: 'fence_stale', newest_fence: 2 },
    });
    expect(sink.deliveries().map((d) => d.operation_id)).toEqual(['op-1']);
    expect(sink.attempts('goal-a').counts).toEqual({
      stored: 1,
      duplicate: 1,
      refused_stale_fence: 1,
      refused_fence_conflict: 0,
      conflict: 0,
      dropped: 0,
    });
    old.close();
    next.close();
  });

  it('a fence naming its lifetime is sent with X-Loopx-Goal-Lifetime; an intent recorded without one (an older version) is sent as before', async () => {
    const sink = await sinkAt();
    const j = make();
    const rec = recordingFetch();
    const fence = { goal_lineage: 'goal-a', fence: 2, lifetime: LIFE_A };
    expect(webhookIntent(sink.deliveriesUrl, { n: 1 }, fence)).toEqual({
      url: sink.deliveriesUrl,
      body: { n: 1 },
      delivery_fence: fence,
    });
    expect(await sendOnce(j, sink.deliveriesUrl, 'op-1', 'key-1', { n: 1 }, fence, rec.fetch)).toMatchObject({
      outcome: 'committed',
    });
    // Recorded by a version before lifetimes: the intent's fence has no lifetime.
    await j.recordIntent({
      operation_id: 'op-2',
      idempotency_key: 'key-2',
      goal_id: 'g1',
      kind: 'webhook.deliver',
      target: webhookTarget(sink.deliveriesUrl),
      intent: { url: sink.deliveriesUrl, body: { n: 2 }, delivery_fence: { goal_lineage: 'goal-a', fence: 2 } },
    });
    expect(await sendWebhook(await j.beginDispatch('op-2'), { fetch: rec.fetch })).toMatchObject({
      outcome: 'committed',
    });
    expect(rec.seen.map((h) => [h['x-loopx-goal-lineage'], h['x-loopx-fence'], h['x-loopx-goal-lifetime']])).toEqual([
      ['goal-a', '2', LIFE_A],
      ['goal-a', '2', undefined],
    ]);
    expect(sink.deliveries().map((d) => [d.operation_id, d.fence, d.lifetime])).toEqual([
      ['op-1', 2, LIFE_A],
      ['op-2', 2, null],
    ]);
    j.close();
  });

  it('a second lifetime at the same generation is rejected with reason fence_conflict and nothing is stored', async () => {
    const sink = await sinkAt();
    const j = make();
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2, { lifetime: LIFE_A })).toEqual({
      status: 'advanced',
      newest_fence: 2,
    });
    const sent = await sendOnce(
      j,
      sink.deliveriesUrl,
      'op-1',
      'key-1',
      { n: 1 },
      { goal_lineage: 'goal-a', fence: 2, lifetime: LIFE_B },
    );
    expect(sent).toEqual({ outcome: 'rejected', receipt: { http_status: 409, reason: 'fence_conflict' } });
    await j.settle('op-1', sent.outcome, sent.receipt);
    expect((await j.get('op-1'))?.outcome).toBe('rejected');
    expect(sink.deliveries()).toEqual([]);
    expect(sink.attempts('goal-a').counts).toMatchObject({ stored: 0, refused_fence_conflict: 1 });
    // The lifetime holding the generation (its own root, its own journal) delivers.
    const holder = make();
    expect(
      (
        await sendOnce(
          holder,
          sink.deliveriesUrl,
          'op-2',
          'key-1',
          { n: 1 },
          { goal_lineage: 'goal-a', fence: 2, lifetime: LIFE_A },
        )
      ).outcome,
    ).toBe('committed');
    expect(sink.deliveries().map((d) => [d.operation_id, d.lifetime])).toEqual([['op-2', LIFE_A]]);
    j.close();
    holder.close();
  });

  it('a malformed fence is refused before anything is recorded or sent', async () => {
    const sink = await sinkAt();
    const j = make();
    for (const fence of [
      { goal_lineage: 'goal a', fence: 1 },
      { goal_lineage: '', fence: 1 },
      { goal_lineage: 'g'.repeat(129), fence: 1 },
      { goal_lineage: 'goal-a', fence: -1 },
      { goal_lineage: 'goal-a', fence: 1.5 },
      { goal_lineage: 'goal-a', fence: 2 ** 53 },
      { goal_lineage: 'goal-a', fence: 1, lifetime: 'ginst_XYZ' },
      { goal_lineage: 'goal-a', fence: 1, lifetime: '' },
      { goal_lineage: 'goal-a', fence: 1, lifetime: `ginst_${'a'.repeat(33)}` },
    ]) {
      expect(await asyncCodeOf(Promise.resolve().then(() => webhookIntent(sink.deliveriesUrl, {}, fence)))).toBe(
        'effect_input_invalid',
      );
    }
    // An intent recorded with a broken fence (not through webhookIntent) is not sent.
    await j.recordIntent({
      operation_id: 'op-1',
      idempotency_key: 'key-1',
      goal_id: 'g1',
      kind: 'webhook.deliver',
      target: webhookTarget(sink.deliveriesUrl),
      intent: { url: sink.deliveriesUrl, body: {}, delivery_fence: { goal_lineage: 'goal-a', fence: '1' } },
    });
    expect(await asyncCodeOf(sendWebhook(await j.beginDispatch('op-1')))).toBe('effect_input_invalid');
    expect(sink.attempts().attempts).toEqual([]);
    j.close();
  });

  it('the target names the host only: credentials, path and query stay in the private intent', async () => {
    expect(webhookTarget('https://user:s3cret@hooks.example:8443/T0/B1/XYZ?token=abc')).toBe(
      'webhook:hooks.example:8443',
    );
    const j = make();
    expect(
      await asyncCodeOf(
        deliverWebhook(j, {
          goal_id: 'g1',
          url: 'file:///etc/passwd',
          operation_id: 'op-1',
          idempotency_key: 'k',
          body: {},
        }),
      ),
    ).toBe('effect_input_invalid');
    expect(await j.list()).toEqual([]);
    j.close();
  });
});

describe('the receiver queries of a Goal lineage (webhookGoalQuery, advanceReceiverFence)', () => {
  const answering =
    (status: number, text: string): typeof fetch =>
    () =>
      Promise.resolve(new Response(text, { status, headers: { 'content-type': 'application/json' } }));
  const closedSinkUrl = async (): Promise<string> => {
    const sink = await sinkAt();
    const url = sink.deliveriesUrl;
    await sink.close();
    closers.pop();
    return url;
  };

  it("webhookGoalQuery lists the lineage's deliveries in arrival order, without bodies", async () => {
    const sink = await sinkAt();
    const j = memoryEffectJournal();
    await sendOnce(j, sink.deliveriesUrl, 'op-1', 'key-1', { n: 1 }, { goal_lineage: 'goal-a', fence: 1 });
    await sendOnce(j, sink.deliveriesUrl, 'op-2', 'key-2', { n: 2 }, { goal_lineage: 'goal-b', fence: 1 });
    await sendOnce(j, sink.deliveriesUrl, 'op-3', 'key-3', { n: 3 });
    await sendOnce(j, sink.deliveriesUrl, 'op-4', 'key-4', { n: 4 }, { goal_lineage: 'goal-a', fence: 2 });
    const stored = sink.deliveries();
    const expected = [stored[0], stored[3]].map((d) => ({
      operation_id: d!.operation_id,
      idempotency_key: d!.idempotency_key,
      goal_lineage: 'goal-a',
      fence: d!.fence,
      body_sha256: d!.body_sha256,
      sequence: d!.sequence,
      received_at: d!.received_at,
    }));
    expect(await webhookGoalQuery(sink.deliveriesUrl, 'goal-a')).toEqual({ status: 'answered', deliveries: expected });
    expect(await webhookGoalQuery(sink.deliveriesUrl, 'goal-c')).toEqual({ status: 'answered', deliveries: [] });
    j.close();
  });

  it('webhookGoalQuery is unknown, never a guess, without a well-formed answer', async () => {
    const url = 'http://127.0.0.1:9/deliveries';
    expect(await webhookGoalQuery(await closedSinkUrl(), 'goal-a')).toEqual({
      status: 'unknown',
      reason: 'query_unreachable',
    });
    expect(await webhookGoalQuery(url, 'goal-a', { fetch: answering(500, '{}') })).toEqual({
      status: 'unknown',
      reason: 'query_http_error',
    });
    expect(await webhookGoalQuery(url, 'goal-a', { fetch: answering(200, 'not json') })).toEqual({
      status: 'unknown',
      reason: 'query_malformed',
    });
    expect(await webhookGoalQuery(url, 'goal-a', { fetch: answering(200, '{"found":false}') })).toEqual({
      status: 'unknown',
      reason: 'query_malformed',
    });
    expect(
      await webhookGoalQuery(url, 'goal-a', { fetch: answering(200, '{"deliveries":[{"operation_id":"op-1"}]}') }),
    ).toEqual({
      status: 'unknown',
      reason: 'query_malformed',
    });
    const other = {
      operation_id: 'o',
      idempotency_key: 'k',
      goal_lineage: 'goal-b',
      fence: 1,
      body_sha256: 'a'.repeat(64),
      sequence: 1,
      received_at: 't',
    };
    expect(
      await webhookGoalQuery(url, 'goal-a', { fetch: answering(200, JSON.stringify({ deliveries: [other] })) }),
    ).toEqual({
      status: 'unknown',
      reason: 'identity_mismatch',
    });
    const hanging: Server = createServer(() => undefined);
    await new Promise<void>((res) => hanging.listen(0, '127.0.0.1', res));
    closers.push(() => new Promise<void>((res) => (hanging.closeAllConnections(), hanging.close(() => res()))));
    const slow = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/deliveries`;
    expect(await webhookGoalQuery(slow, 'goal-a', { timeoutMs: 100 })).toEqual({
      status: 'unknown',
      reason: 'query_timeout',
    });
  });

  it('advanceReceiverFence advances, is idempotent, and reports a newer fence as refused', async () => {
    const sink = await sinkAt();
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 3)).toEqual({
      status: 'advanced',
      newest_fence: 3,
    });
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 3)).toEqual({ status: 'already', newest_fence: 3 });
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2)).toEqual({ status: 'refused', newest_fence: 3 });
    expect(await (await fetch(`${sink.url}/fences?goal_lineage=goal-a`)).json()).toEqual({
      goal_lineage: 'goal-a',
      newest_fence: 3,
      lifetime: null,
    });
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-b', 0)).toEqual({
      status: 'advanced',
      newest_fence: 0,
    });
  });

  it('advanceReceiverFence with a lifetime: advanced, already for that lifetime, and conflict for another at the same generation', async () => {
    const sink = await sinkAt();
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2, { lifetime: LIFE_A })).toEqual({
      status: 'advanced',
      newest_fence: 2,
    });
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2, { lifetime: LIFE_A })).toEqual({
      status: 'already',
      newest_fence: 2,
    });
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2, { lifetime: LIFE_B })).toEqual({
      status: 'conflict',
      newest_fence: 2,
      lifetime: LIFE_A,
    });
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 1, { lifetime: LIFE_B })).toEqual({
      status: 'refused',
      newest_fence: 2,
    });
    // A bare counter (a cluster run's epoch) at the same fence keeps the counter rule.
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 2)).toEqual({ status: 'already', newest_fence: 2 });
    expect(await (await fetch(`${sink.url}/fences?goal_lineage=goal-a`)).json()).toEqual({
      goal_lineage: 'goal-a',
      newest_fence: 2,
      lifetime: LIFE_A,
    });
    // The next generation moves on, whoever held this one.
    expect(await advanceReceiverFence(sink.deliveriesUrl, 'goal-a', 3, { lifetime: LIFE_B })).toEqual({
      status: 'advanced',
      newest_fence: 3,
    });
  });

  it('advanceReceiverFence with a lifetime is unknown, never success or refused, without an answer that names the lifetimes', async () => {
    const url = 'http://127.0.0.1:9/deliveries';
    const asked: string[] = [];
    const capture: typeof fetch = (_input, init) => {
      asked.push(String(init?.body));
      return Promise.resolve(
        new Response(JSON.stringify({ status: 'advanced', newest_fence: 2, lifetime: LIFE_A }), { status: 200 }),
      );
    };
    expect(await advanceReceiverFence(url, 'goal-a', 2, { fetch: capture, lifetime: LIFE_A })).toEqual({
      status: 'advanced',
      newest_fence: 2,
    });
    expect(asked).toEqual([`{"fence":2,"goal_lineage":"goal-a","lifetime":"${LIFE_A}"}`]);
    const cases: Array<[string, number, string, string]> = [
      // A receiver that keeps no lifetimes answers without one: it confirms nothing about this lifetime.
      ['a 200 without the lifetime', 200, '{"status":"advanced","newest_fence":2}', 'lifetime_unconfirmed'],
      [
        'a 200 naming another lifetime',
        200,
        JSON.stringify({ status: 'already', newest_fence: 2, lifetime: LIFE_B }),
        'lifetime_unconfirmed',
      ],
      [
        'a conflict naming the asked lifetime',
        409,
        JSON.stringify({ error: 'fence_conflict', newest_fence: 2, lifetime: LIFE_A }),
        'query_malformed',
      ],
      [
        'a conflict at another fence',
        409,
        JSON.stringify({ error: 'fence_conflict', newest_fence: 3, lifetime: LIFE_B }),
        'query_malformed',
      ],
      ['a conflict without a holder', 409, '{"error":"fence_conflict","newest_fence":2}', 'query_malformed'],
    ];
    for (const [name, status, text, reason] of cases) {
      expect([
        name,
        await advanceReceiverFence(url, 'goal-a', 2, { fetch: answering(status, text), lifetime: LIFE_A }),
      ]).toEqual([name, { status: 'unknown', reason }]);
    }
    // Asked without a lifetime, a conflict is no answer either.
    expect(
      await advanceReceiverFence(url, 'goal-a', 2, {
        fetch: answering(409, JSON.stringify({ error: 'fence_conflict', newest_fence: 2, lifetime: LIFE_B })),
      }),
    ).toEqual({
      status: 'unknown',
      reason: 'query_malformed',
    });
    let requests = 0;
    const counting: typeof fetch = () => (requests++, Promise.resolve(new Response('{}')));
    expect(
      await asyncCodeOf(advanceReceiverFence(url, 'goal-a', 2, { fetch: counting, lifetime: 'not-a-lifetime' })),
    ).toBe('effect_input_invalid');
    expect(requests).toBe(0);
  });

  it('advanceReceiverFence posts beside the deliveries path and is unknown without a clear answer', async () => {
    const asked: string[] = [];
    const capture: typeof fetch = (input, init) => {
      asked.push(`${init?.method} ${String(input)} ${String(init?.body)}`);
      return Promise.resolve(new Response('{"status":"advanced","newest_fence":7}', { status: 200 }));
    };
    expect(
      await advanceReceiverFence('https://hooks.example/api/v1/deliveries?token=t', 'goal-a', 7, { fetch: capture }),
    ).toEqual({ status: 'advanced', newest_fence: 7 });
    expect(asked).toEqual(['POST https://hooks.example/api/v1/fences?token=t {"fence":7,"goal_lineage":"goal-a"}']);

    const url = 'http://127.0.0.1:9/deliveries';
    expect(await advanceReceiverFence(await closedSinkUrl(), 'goal-a', 1)).toEqual({
      status: 'unknown',
      reason: 'query_unreachable',
    });
    expect(await advanceReceiverFence(url, 'goal-a', 1, { fetch: answering(503, '') })).toEqual({
      status: 'unknown',
      reason: 'query_http_error',
    });
    // An answer that does not match the request (another fence, a "stale" that is not newer) is no answer.
    expect(
      await advanceReceiverFence(url, 'goal-a', 1, { fetch: answering(200, '{"status":"advanced","newest_fence":2}') }),
    ).toEqual({
      status: 'unknown',
      reason: 'query_malformed',
    });
    expect(
      await advanceReceiverFence(url, 'goal-a', 1, {
        fetch: answering(409, '{"error":"fence_stale","newest_fence":1}'),
      }),
    ).toEqual({
      status: 'unknown',
      reason: 'query_malformed',
    });
    expect(
      await advanceReceiverFence(url, 'goal-a', 1, { fetch: answering(409, '{"error":"idempotency_key_reused"}') }),
    ).toEqual({
      status: 'unknown',
      reason: 'query_malformed',
    });
  });

  it('a bad URL, lineage or fence is refused before any request, and the error never carries the URL', async () => {
    let requests = 0;
    const counting: typeof fetch = () => (requests++, Promise.resolve(new Response('{}')));
    const secret = 'https://user:s3cret@hooks.example/T0/B1/notdeliveries?token=abc';
    for (const p of [
      advanceReceiverFence(secret, 'goal-a', 1, { fetch: counting }),
      advanceReceiverFence('https://hooks.example/deliveries', 'goal a', 1, { fetch: counting }),
      advanceReceiverFence('https://hooks.example/deliveries', 'goal-a', -1, { fetch: counting }),
      webhookGoalQuery('file:///etc/passwd', 'goal-a', { fetch: counting }),
      webhookGoalQuery('https://hooks.example/deliveries', 'goal/a', { fetch: counting }),
    ]) {
      const e = await p.then(
        () => undefined,
        (err: Error & { code?: string }) => err,
      );
      expect(e?.code).toBe('effect_input_invalid');
      expect(JSON.stringify({ message: e?.message, ...e })).not.toMatch(/s3cret|token|T0\/B1|passwd/);
    }
    expect(requests).toBe(0);
  });
});
