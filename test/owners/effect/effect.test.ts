/**
 * Effect owner conformance: one suite runs the in-memory reference and the SQLite provider.
 * Intent is durable before dispatch, an effect is dispatched at most once, a settled effect is
 * never settled differently, and an uncertain effect reconciles only under its original
 * operation id — to committed, absent, or a visible hold.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  EFFECT_ERROR_CODES,
  isEffectError,
  memoryEffectJournal,
  openSqliteEffectJournal,
  outcomeUnknown,
  runEffectScope,
  type EffectJournal,
  type EffectRecord,
  type ReconcileObservation,
  type RecordIntentRequest,
} from '../../../src/owners/effect/index.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-effect-'));
  dirs.push(d);
  return d;
};

const codeOf = async (fn: () => Promise<unknown>): Promise<string | undefined> => {
  try {
    await fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};
const asyncCodeOf = (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );

const intent = (n = 1, over: Partial<RecordIntentRequest> = {}): RecordIntentRequest => ({
  operation_id: `op-${n}`,
  idempotency_key: `key-${n}`,
  goal_id: 'g1',
  kind: 'webhook.deliver',
  target: 'webhook:127.0.0.1:9',
  intent: { url: 'http://127.0.0.1:9/deliveries', body: { n } },
  ...over,
});

const providers: Array<[string, () => EffectJournal]> = [
  ['memory', () => memoryEffectJournal()],
  ['sqlite', () => openSqliteEffectJournal(join(tempDir(), 'effects.db'))],
];

/** A journal holding one dispatched effect whose outcome was lost. */
async function unknownEffect(make: () => EffectJournal): Promise<EffectJournal> {
  const j = make();
  await j.recordIntent(intent());
  await j.beginDispatch('op-1');
  await j.settle('op-1', 'unknown', { reason: 'timeout' });
  return j;
}
const answer = (o: ReconcileObservation) => {
  const asked: EffectRecord[] = [];
  return { asked, query: async (e: EffectRecord) => (asked.push(e), o) };
};

describe.each(providers)('effect owner (%s)', (_name, make) => {
  it('an intent is recorded pending, in the outbox, before anything is dispatched', async () => {
    const j = make();
    const { effect, replayed } = await j.recordIntent(intent());
    expect(replayed).toBe(false);
    expect(effect).toMatchObject({
      operation_id: 'op-1',
      idempotency_key: 'key-1',
      goal_id: 'g1',
      outcome: 'pending',
      receipt: null,
      attempt: 0,
      dispatched_at: null,
      settled_at: null,
    });
    expect(effect.intent).toBe('{"body":{"n":1},"url":"http://127.0.0.1:9/deliveries"}');
    expect(effect.intent_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(await j.outbox()).toEqual([
      expect.objectContaining({ operation_id: 'op-1', idempotency_key: 'key-1', target: 'webhook:127.0.0.1:9' }),
    ]);
    expect((await j.history('op-1')).map((h) => h.event)).toEqual(['intent']);
    j.close();
  });

  it('the same operation id with the same intent returns the existing row; a different intent is operation_identity_mismatch', async () => {
    const j = make();
    const first = (await j.recordIntent(intent())).effect;
    expect(await j.recordIntent(intent())).toEqual({ effect: first, replayed: true });
    expect(
      await codeOf(() =>
        j.recordIntent(intent(1, { intent: { url: 'http://127.0.0.1:9/deliveries', body: { n: 2 } } })),
      ),
    ).toBe('operation_identity_mismatch');
    expect(await codeOf(() => j.recordIntent(intent(1, { target: 'webhook:other:1' })))).toBe(
      'operation_identity_mismatch',
    );
    expect(await j.list()).toHaveLength(1);
    j.close();
  });

  it('an idempotency key already held by another operation is refused: no new identity for the same effect', async () => {
    const j = make();
    await j.recordIntent(intent());
    expect(await codeOf(() => j.recordIntent(intent(2, { idempotency_key: 'key-1' })))).toBe('idempotency_key_in_use');
    expect((await j.getByIdempotencyKey('key-1'))!.operation_id).toBe('op-1');
    j.close();
  });

  it('targets are public labels: credentials, queries and spaces are refused', async () => {
    const j = make();
    expect(await codeOf(() => j.recordIntent(intent(1, { target: 'webhook:user:pw@host' })))).toBe(
      'effect_target_unsafe',
    );
    expect(await codeOf(() => j.recordIntent(intent(1, { target: 'webhook:host/path?token=s3cret' })))).toBe(
      'effect_target_unsafe',
    );
    expect(await codeOf(() => j.recordIntent(intent(1, { target: 'a b' })))).toBe('effect_target_unsafe');
    expect(await codeOf(() => j.recordIntent(intent(1, { goal_id: '../x' })))).toBe('effect_input_invalid');
    expect(await codeOf(() => j.recordIntent(intent(1, { kind: 'Not A Kind' })))).toBe('effect_input_invalid');
    expect(await j.list()).toEqual([]);
    j.close();
  });

  it('a dispatch leaves the outbox and is recorded once; a second dispatch is refused', async () => {
    const j = make();
    await j.recordIntent(intent());
    const d = await j.beginDispatch('op-1');
    expect(d).toMatchObject({ outcome: 'pending', attempt: 1 });
    expect(d.dispatched_at).not.toBeNull();
    expect(await j.outbox()).toEqual([]);
    expect(await codeOf(() => j.beginDispatch('op-1'))).toBe('effect_dispatch_in_flight');
    expect((await j.holds()).map((e) => e.operation_id)).toEqual(['op-1']); // dispatched, never settled: uncertain
    expect(await codeOf(() => j.beginDispatch('op-9'))).toBe('effect_not_found');
    j.close();
  });

  it('committed and unknown need a dispatch; a never-sent effect may be superseded, which empties the outbox', async () => {
    const j = make();
    await j.recordIntent(intent());
    expect(await codeOf(() => j.settle('op-1', 'committed', {}))).toBe('effect_not_dispatched');
    expect(await codeOf(() => j.settle('op-1', 'unknown', {}))).toBe('effect_not_dispatched');
    expect((await j.settle('op-1', 'superseded', { by: 'op-2' })).effect.outcome).toBe('superseded');
    expect(await j.outbox()).toEqual([]);
    expect(await codeOf(() => j.beginDispatch('op-1'))).toBe('effect_already_settled');
    j.close();
  });

  it('settling again with the same outcome and receipt is a readback; settling differently is refused', async () => {
    const j = make();
    await j.recordIntent(intent());
    await j.beginDispatch('op-1');
    const first = await j.settle('op-1', 'committed', { http_status: 201 });
    expect(first.replayed).toBe(false);
    expect(first.effect.settled_at).not.toBeNull();
    expect(await j.settle('op-1', 'committed', { http_status: 201 })).toEqual({ effect: first.effect, replayed: true });
    expect(await codeOf(() => j.settle('op-1', 'committed', { http_status: 200 }))).toBe('effect_already_settled');
    expect(await codeOf(() => j.settle('op-1', 'absent', {}))).toBe('effect_already_settled');
    expect(await codeOf(() => j.settle('op-1', 'pending' as 'absent', {}))).toBe('effect_input_invalid');
    expect((await j.history('op-1')).map((h) => [h.seq, h.event, h.outcome])).toEqual([
      [1, 'intent', 'pending'],
      [2, 'dispatch', 'pending'],
      [3, 'settle', 'committed'],
    ]);
    j.close();
  });

  it('an unknown effect can only be resolved to committed or absent, and is listed as a hold until then', async () => {
    const j = await unknownEffect(make);
    expect((await j.holds()).map((e) => e.operation_id)).toEqual(['op-1']);
    expect(await codeOf(() => j.settle('op-1', 'rejected', {}))).toBe('effect_already_settled');
    expect(await codeOf(() => j.settle('op-1', 'unknown', { reason: 'other' }))).toBe('effect_already_settled');
    expect((await j.settle('op-1', 'unknown', { reason: 'timeout' })).replayed).toBe(true);
    expect(await codeOf(() => j.beginDispatch('op-1'))).toBe('effect_already_settled');
    expect((await j.settle('op-1', 'absent', { checked: true })).effect.outcome).toBe('absent');
    expect(await j.holds()).toEqual([]);
    j.close();
  });

  it('reconcile asks by the original operation id and turns unknown into committed', async () => {
    const j = await unknownEffect(make);
    const { asked, query } = answer({ status: 'committed', receipt: { seen: true } });
    const r = await j.reconcile('op-1', query);
    expect(asked.map((e) => [e.operation_id, e.idempotency_key])).toEqual([['op-1', 'key-1']]);
    expect(r.resolution).toBe('committed');
    expect(r.effect).toMatchObject({
      operation_id: 'op-1',
      outcome: 'committed',
      receipt: { reconciled: true, observation: { seen: true } },
      attempt: 1,
    });
    expect(await j.list()).toHaveLength(1); // no new identity was minted
    expect(await j.outbox()).toEqual([]);
    j.close();
  });

  it('reconcile turns unknown into absent when the external system has no record', async () => {
    const j = await unknownEffect(make);
    const r = await j.reconcile('op-1', answer({ status: 'absent' }).query);
    expect([r.resolution, r.effect.outcome]).toEqual(['absent', 'absent']);
    j.close();
  });

  it('an unanswerable reconcile leaves a visible hold with its reason; a failing query is a hold too', async () => {
    const j = await unknownEffect(make);
    const r = await j.reconcile('op-1', answer({ status: 'unknown', reason: 'provider_unavailable' }).query);
    expect(r.resolution).toBe('held');
    expect(r.effect).toMatchObject({ outcome: 'unknown', hold: 'provider_unavailable', reconcile_attempts: 1 });
    const r2 = await j.reconcile('op-1', async () => {
      throw new Error('boom');
    });
    expect(r2.effect).toMatchObject({ outcome: 'unknown', hold: 'query_failed', reconcile_attempts: 2 });
    const r3 = await j.reconcile('op-1', async () => ({ status: 'committed' }) as unknown as ReconcileObservation);
    expect(r3.effect).toMatchObject({ hold: 'observation_malformed', reconcile_attempts: 3 });
    expect((await j.holds()).map((e) => e.hold)).toEqual(['observation_malformed']);
    j.close();
  });

  it('a dispatch that never settled (the process died) reconciles like an unknown', async () => {
    const j = make();
    await j.recordIntent(intent());
    await j.beginDispatch('op-1');
    const held = await j.reconcile('op-1', answer({ status: 'unknown', reason: 'provider_unavailable' }).query);
    expect(held.effect).toMatchObject({ outcome: 'unknown', hold: 'provider_unavailable' });
    const r = await j.reconcile('op-1', answer({ status: 'committed', receipt: {} }).query);
    expect(r.effect.outcome).toBe('committed');
    j.close();
  });

  it('reconcile never queries a settled effect and refuses one that was never sent', async () => {
    const j = make();
    await j.recordIntent(intent());
    expect(await asyncCodeOf(j.reconcile('op-1', answer({ status: 'absent' }).query))).toBe('effect_not_dispatched');
    await j.beginDispatch('op-1');
    await j.settle('op-1', 'rejected', { http_status: 422 });
    const { asked, query } = answer({ status: 'committed', receipt: {} });
    expect((await j.reconcile('op-1', query)).resolution).toBe('already_settled');
    expect(asked).toEqual([]);
    expect(await asyncCodeOf(j.reconcile('op-9', query))).toBe('effect_not_found');
    j.close();
  });

  it('only an absent effect is reissued, under the same identity, and its earlier outcome stays in history', async () => {
    const j = await unknownEffect(make);
    expect(await codeOf(() => j.reissue('op-1'))).toBe('effect_not_reissuable');
    await j.settle('op-1', 'absent', { checked: true });
    const again = await j.reissue('op-1');
    expect(again).toMatchObject({
      operation_id: 'op-1',
      idempotency_key: 'key-1',
      outcome: 'pending',
      dispatched_at: null,
      attempt: 1,
    });
    expect((await j.outbox()).map((o) => o.operation_id)).toEqual(['op-1']);
    expect((await j.beginDispatch('op-1')).attempt).toBe(2);
    expect((await j.history('op-1')).map((h) => `${h.event}:${h.outcome}`)).toEqual([
      'intent:pending',
      'dispatch:pending',
      'settle:unknown',
      'settle:absent',
      'reissue:pending',
      'dispatch:pending',
    ]);
    expect((await j.history('op-1'))[3]!.receipt).toEqual({ checked: true });
    j.close();
  });

  it('a hold needs an unknown outcome; reasons are codes', async () => {
    const j = make();
    await j.recordIntent(intent());
    expect(await codeOf(() => j.holdUnknown('op-1', 'x'))).toBe('effect_not_held');
    await j.beginDispatch('op-1');
    await j.settle('op-1', 'unknown', {});
    expect(await codeOf(() => j.holdUnknown('op-1', 'Has Spaces'))).toBe('effect_input_invalid');
    j.close();
  });

  it('receipts are bounded', async () => {
    const j = make();
    await j.recordIntent(intent());
    await j.beginDispatch('op-1');
    expect(await codeOf(() => j.settle('op-1', 'committed', { blob: 'x'.repeat(70 * 1024) }))).toBe(
      'effect_payload_too_large',
    );
    expect((await j.get('op-1'))!.outcome).toBe('pending');
    j.close();
  });

  it('effects list in creation order, filtered by Goal and outcome; the outbox keeps enqueue order', async () => {
    const j = make();
    await j.recordIntent(intent(1));
    await j.recordIntent(intent(2, { goal_id: 'g2' }));
    await j.recordIntent(intent(3));
    await j.beginDispatch('op-1');
    expect((await j.list()).map((e) => e.operation_id)).toEqual(['op-1', 'op-2', 'op-3']);
    expect((await j.list({ goal_id: 'g1' })).map((e) => e.operation_id)).toEqual(['op-1', 'op-3']);
    expect((await j.list({ outcome: 'pending', goal_id: 'g2' })).map((e) => e.operation_id)).toEqual(['op-2']);
    expect((await j.outbox()).map((o) => o.operation_id)).toEqual(['op-2', 'op-3']);
    expect(await j.get('op-9')).toBeUndefined();
    j.close();
  });

  it('resolve settles an uncertain effect only from the exact state it was read in; a changed effect is effect_state_changed and keeps its outcome', async () => {
    const j = make();
    await j.recordIntent(intent());
    const read = await j.beginDispatch('op-1'); // dispatched, never settled: what a dead process leaves
    const expected = { outcome: read.outcome, attempt: read.attempt };
    // Reconciliation settles it first; the operator's resolution from the stale read changes nothing.
    await j.reconcile('op-1', answer({ status: 'committed', receipt: { found: true } }).query);
    expect(await codeOf(() => j.resolve('op-1', expected, 'absent', { resolved_by: 'operator' }))).toBe(
      'effect_state_changed',
    );
    expect(await j.get('op-1')).toMatchObject({ outcome: 'committed' });

    await j.recordIntent(intent(2));
    const pending = await j.beginDispatch('op-2');
    const first = await j.resolve('op-2', { outcome: pending.outcome, attempt: pending.attempt }, 'absent', {
      resolved_by: 'operator',
    });
    expect(first).toMatchObject({
      replayed: false,
      effect: { outcome: 'absent', receipt: { resolved_by: 'operator' } },
    });
    expect(
      (await j.resolve('op-2', { outcome: 'pending', attempt: 1 }, 'absent', { resolved_by: 'operator' })).replayed,
    ).toBe(true);
    expect((await j.history('op-2')).map((h) => [h.event, h.outcome])).toEqual([
      ['intent', 'pending'],
      ['dispatch', 'pending'],
      ['settle', 'absent'],
    ]);
    expect(await j.holds()).toEqual([]);
    j.close();
  });

  it('resolve refuses an effect that was never dispatched or is already settled, and takes only committed, absent or unknown', async () => {
    const j = make();
    await j.recordIntent(intent());
    expect(await codeOf(() => j.resolve('op-1', { outcome: 'pending', attempt: 0 }, 'absent', {}))).toBe(
      'effect_not_dispatched',
    );
    expect((await j.outbox()).map((o) => o.operation_id)).toEqual(['op-1']);
    await j.beginDispatch('op-1');
    expect(await codeOf(() => j.resolve('op-1', { outcome: 'pending', attempt: 1 }, 'rejected' as 'absent', {}))).toBe(
      'effect_input_invalid',
    );
    expect(await codeOf(() => j.resolve('op-1', { outcome: 'pending', attempt: -1 }, 'absent', {}))).toBe(
      'effect_input_invalid',
    );
    // An operator who cannot find out records the dispatch as unknown: it stays a hold.
    expect(
      (await j.resolve('op-1', { outcome: 'pending', attempt: 1 }, 'unknown', { abandoned: true })).effect.outcome,
    ).toBe('unknown');
    expect((await j.holds()).map((e) => e.operation_id)).toEqual(['op-1']);
    await j.settle('op-1', 'committed', { checked: true });
    expect(await codeOf(() => j.resolve('op-1', { outcome: 'committed', attempt: 1 }, 'absent', {}))).toBe(
      'effect_already_settled',
    );
    j.close();
  });

  it('an effect of a run outside any Goal is scoped to its run (run:<run id>), which is never a Goal id', async () => {
    const j = make();
    expect((await j.recordIntent(intent(1, { goal_id: runEffectScope('run_ab12') }))).effect.goal_id).toBe(
      'run:run_ab12',
    );
    expect(await codeOf(() => j.recordIntent(intent(2, { goal_id: 'run:bad id' })))).toBe('effect_input_invalid');
    expect(await codeOf(() => j.recordIntent(intent(3, { goal_id: 'g:1' })))).toBe('effect_input_invalid');
    expect(await j.list({ goal_id: 'g1' })).toEqual([]);
    j.close();
  });
});

describe('an unknown outcome is a typed error', () => {
  it('outcomeUnknown is effect_outcome_unknown (kind internal: never mistaken for a refusal before acting), with the operation id and a reason code', async () => {
    const e = outcomeUnknown('op-1', 'timeout');
    expect(isEffectError(e, 'effect_outcome_unknown')).toBe(true);
    expect(e).toMatchObject({ kind: 'internal', details: { operation_id: 'op-1', reason: 'timeout' } });
    expect(EFFECT_ERROR_CODES.filter((c) => c === 'effect_outcome_unknown')).toHaveLength(1);
  });
});

describe('effect owner (sqlite only)', () => {
  it('effects.db is owner-only', async () => {
    const path = join(tempDir(), 'effects.db');
    openSqliteEffectJournal(path).close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('an intent and a dispatch survive a restart: the reopened journal holds the in-flight effect and never offers it again', async () => {
    const path = join(tempDir(), 'effects.db');
    const a = openSqliteEffectJournal(path);
    await a.recordIntent(intent(1));
    await a.recordIntent(intent(2));
    await a.beginDispatch('op-1');
    a.close(); // as if the process died mid-dispatch of op-1
    const b = openSqliteEffectJournal(path);
    expect((await b.outbox()).map((o) => o.operation_id)).toEqual(['op-2']);
    expect((await b.holds()).map((e) => e.operation_id)).toEqual(['op-1']);
    expect(await codeOf(() => b.beginDispatch('op-1'))).toBe('effect_dispatch_in_flight');
    expect((await b.recordIntent(intent(1))).replayed).toBe(true);
    b.close();
  });

  it('two journals on one file dispatch an effect at most once between them', async () => {
    const path = join(tempDir(), 'effects.db');
    const a = openSqliteEffectJournal(path);
    const b = openSqliteEffectJournal(path);
    await a.recordIntent(intent());
    expect((await b.beginDispatch('op-1')).attempt).toBe(1);
    expect(await codeOf(() => a.beginDispatch('op-1'))).toBe('effect_dispatch_in_flight');
    a.close();
    b.close();
  });
});
