/**
 * The conformance suite of the effect storage port (src/owners/effect/port.ts): snapshot reads,
 * conditional commits with each conflict reason, every row of a write landing together, idempotent
 * repeats, state-only updates that never touch identity or history, rows that survive a restart
 * and come back as copies, a closed port, a damaged row, and the ambiguous-commit readback — each
 * asserted by what is stored and what comes back. Every provider runs it:
 * `describeEffectPort('<provider>', factory)` in test/owners/effect/port.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  effectJournal,
  type EffectPort,
  type EffectRecord,
  type EffectTransition,
  type EffectWrite,
} from '../../../src/owners/effect/index.js';
import type { CommitResult } from '../../../src/owners/port.js';
import { expectRegisteredProvider, rejectionOf, sha, type PortHarness } from './support.js';

/** A provider's store, plus a way to damage one effect row the way a bad disk would. */
export interface EffectPortHarness extends PortHarness<EffectPort> {
  /** Makes the stored row of `operationId` one that does not decode (its created_at is no instant). */
  damage(operationId: string): void | Promise<void>;
}

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

const effect = (n: number, over: Partial<EffectRecord> = {}): EffectRecord => ({
  operation_id: `op-${n}`,
  idempotency_key: `key-${n}`,
  goal_id: 'g1',
  kind: 'webhook.deliver',
  target: 'webhook:127.0.0.1:9',
  intent: `{"body":{"n":${n}},"url":"http://127.0.0.1:9/deliveries"}`,
  intent_digest: sha(n),
  outcome: 'pending',
  receipt: null,
  attempt: 0,
  dispatched_at: null,
  hold: null,
  reconcile_attempts: 0,
  created_at: at(n),
  settled_at: null,
  ...over,
});
const step = (
  e: EffectRecord,
  seq: number,
  event: EffectTransition['event'],
  s: number,
  over: Partial<EffectTransition> = {},
): EffectTransition => ({
  operation_id: e.operation_id,
  seq,
  event,
  outcome: e.outcome,
  receipt: null,
  reason: null,
  at: at(s),
  ...over,
});
const create = (e: EffectRecord): EffectWrite => ({
  op: 'create_effect',
  effect: e,
  transition: step(e, 1, 'intent', 0),
  enqueued_at: e.created_at,
});
const queuedOf = (e: EffectRecord, enqueued_at = e.created_at) => ({
  operation_id: e.operation_id,
  idempotency_key: e.idempotency_key,
  goal_id: e.goal_id,
  kind: e.kind,
  target: e.target,
  enqueued_at,
});
const dispatched = (e: EffectRecord, s: number): EffectRecord => ({
  ...e,
  attempt: e.attempt + 1,
  dispatched_at: at(s),
});
const settled = (
  e: EffectRecord,
  outcome: EffectRecord['outcome'],
  receipt: EffectRecord['receipt'],
  s: number,
): EffectRecord => ({ ...e, outcome, receipt, settled_at: at(s) });

const APPLIED = { status: 'applied' };
const conflict = (reason: string) => ({ status: 'conflict', reason });
const INTENT = {
  operation_id: 'op-a',
  idempotency_key: 'key-a',
  goal_id: 'g1',
  kind: 'webhook.deliver',
  target: 'webhook:127.0.0.1:9',
  intent: { n: 1 },
};
const CLOCK = { now: () => new Date(T0) };

/** Every method of `p`, forwarded (a test seam to override one of them). */
const forward = (p: EffectPort): EffectPort => ({
  provider: p.provider,
  read: (q) => p.read(q),
  listEffects: (f) => p.listEffects(f),
  listOutbox: () => p.listOutbox(),
  listHolds: () => p.listHolds(),
  listHistory: (id) => p.listHistory(id),
  commit: (w) => p.commit(w),
  close: () => p.close(),
});

export function describeEffectPort(name: string, make: () => EffectPortHarness): void {
  describe(`effect port conformance: ${name}`, () => {
    /** A port holding op-1 dispatched (revision 2, out of the outbox). */
    async function withDispatched() {
      const h = make();
      const p = h.open();
      const e = effect(1);
      expect(await p.commit(create(e))).toEqual(APPLIED);
      const d = dispatched(e, 2);
      expect(
        await p.commit({ op: 'update_effect', effect: d, transition: step(d, 2, 'dispatch', 2), outbox: 'remove' }),
      ).toEqual(APPLIED);
      return { h, p, e, d };
    }

    it('names a registered provider', () => {
      expectRegisteredProvider(make().open().provider);
    });

    it('an empty store reads nothing: absent rows and empty lists, never an error', async () => {
      const p = make().open();
      expect(await p.read({ operation_id: 'op-x', idempotency_key: 'key-x' })).toEqual({});
      expect(await p.read({})).toEqual({});
      expect(await p.listEffects()).toEqual([]);
      expect(await p.listOutbox()).toEqual([]);
      expect(await p.listHolds()).toEqual([]);
      expect(await p.listHistory('op-x')).toEqual([]);
    });

    it('a created effect lands with its history row and its outbox entry, read back field for field in one read', async () => {
      const p = make().open();
      const e = effect(1, { goal_id: 'run:run_1' });
      expect(await p.commit(create(e))).toEqual(APPLIED);
      expect(await p.read({ operation_id: 'op-1', idempotency_key: 'key-1' })).toEqual({
        effect: e,
        last_transition: step(e, 1, 'intent', 0),
        queued: queuedOf(e),
        key_holder: e,
      });
      expect(await p.read({ idempotency_key: 'key-1' })).toEqual({ key_holder: e });
      expect(await p.listOutbox()).toEqual([queuedOf(e)]);
      expect(await p.listHistory('op-1')).toEqual([step(e, 1, 'intent', 0)]);
    });

    it('creating an effect whose operation id or idempotency key is taken is exists, and writes nothing', async () => {
      const p = make().open();
      const e = effect(1);
      await p.commit(create(e));
      expect(await p.commit(create({ ...e, kind: 'tool.call' }))).toEqual(conflict('exists'));
      expect(await p.commit(create(effect(2, { idempotency_key: 'key-1' })))).toEqual(conflict('exists'));
      expect(await p.listEffects()).toEqual([e]);
      expect(await p.listOutbox()).toEqual([queuedOf(e)]);
      expect(await p.read({ operation_id: 'op-2' })).toEqual({});
      expect(await p.listHistory('op-1')).toHaveLength(1);
    });

    it('an update applies only at the next revision: a stale or skipped seq is changed, an unknown effect missing, and nothing is written', async () => {
      const { p, e, d } = await withDispatched();
      const before = await p.read({ operation_id: 'op-1' });
      expect(before).toEqual({ effect: d, last_transition: step(d, 2, 'dispatch', 2) });
      const s = settled(d, 'committed', { http_status: 201 }, 3);
      // The same dispatch again: its precondition no longer holds, so it cannot apply twice.
      expect(
        await p.commit({
          op: 'update_effect',
          effect: dispatched(d, 3),
          transition: step(d, 2, 'dispatch', 3),
          outbox: 'remove',
        }),
      ).toEqual(conflict('changed'));
      expect(
        await p.commit({ op: 'update_effect', effect: s, transition: step(s, 4, 'settle', 3), outbox: 'keep' }),
      ).toEqual(conflict('changed'));
      expect(
        await p.commit({
          op: 'update_effect',
          effect: effect(9),
          transition: step(effect(9), 2, 'dispatch', 3),
          outbox: 'remove',
        }),
      ).toEqual(conflict('missing'));
      expect(await p.read({ operation_id: 'op-1' })).toEqual(before);
      expect(await p.listHistory('op-1')).toEqual([step(e, 1, 'intent', 0), step(d, 2, 'dispatch', 2)]);
      expect(await p.read({ operation_id: 'op-9' })).toEqual({});
    });

    it('an update writes the state fields only: identity fields stay as created, history rows are only ever appended', async () => {
      const { p, e, d } = await withDispatched();
      const s = settled(d, 'unknown', { reason: 'timeout' }, 3);
      const t = step(s, 3, 'settle', 3, { receipt: { reason: 'timeout' } });
      const forged = {
        ...s,
        idempotency_key: 'key-z',
        goal_id: 'g2',
        kind: 'tool.call',
        target: 'tool:x',
        intent: '{}',
        intent_digest: sha(99),
        created_at: at(50),
      };
      expect(await p.commit({ op: 'update_effect', effect: forged, transition: t, outbox: 'keep' })).toEqual(APPLIED);
      expect(await p.read({ operation_id: 'op-1', idempotency_key: 'key-z' })).toEqual({
        effect: s,
        last_transition: t,
      });
      expect(await p.listHistory('op-1')).toEqual([step(e, 1, 'intent', 0), step(d, 2, 'dispatch', 2), t]);
    });

    it('the outbox change lands with the update: remove takes the effect out, keep leaves it, add puts it back at the end', async () => {
      const p = make().open();
      const [a, b, c] = [effect(1), effect(2), effect(3)];
      for (const e of [a, b, c]) await p.commit(create(e));
      const held = { ...a, reconcile_attempts: 1 };
      expect(
        await p.commit({ op: 'update_effect', effect: held, transition: step(held, 2, 'hold', 4), outbox: 'keep' }),
      ).toEqual(APPLIED);
      expect((await p.listOutbox()).map((o) => o.operation_id)).toEqual(['op-1', 'op-2', 'op-3']);
      const absent = settled(held, 'absent', null, 5);
      expect(
        await p.commit({
          op: 'update_effect',
          effect: absent,
          transition: step(absent, 3, 'settle', 5),
          outbox: 'remove',
        }),
      ).toEqual(APPLIED);
      expect((await p.listOutbox()).map((o) => o.operation_id)).toEqual(['op-2', 'op-3']);
      expect((await p.read({ operation_id: 'op-1' })).queued).toBeUndefined();
      const again = { ...absent, outcome: 'pending' as const, settled_at: null };
      expect(
        await p.commit({
          op: 'update_effect',
          effect: again,
          transition: step(again, 4, 'reissue', 6),
          outbox: { add: at(6) },
        }),
      ).toEqual(APPLIED);
      expect(await p.listOutbox()).toEqual([queuedOf(b), queuedOf(c), queuedOf(a, at(6))]);
      expect((await p.read({ operation_id: 'op-1' })).queued).toEqual(queuedOf(a, at(6)));
    });

    it('effects list in creation order, filtered by Goal and outcome; holds are the unknown and the dispatched-unsettled ones', async () => {
      const p = make().open();
      const rows = [effect(3), effect(1, { goal_id: 'g2' }), effect(2), effect(4)];
      for (const e of rows) await p.commit(create(e));
      const d3 = dispatched(rows[0]!, 5);
      await p.commit({ op: 'update_effect', effect: d3, transition: step(d3, 2, 'dispatch', 5), outbox: 'remove' });
      const d2 = dispatched(rows[2]!, 6);
      await p.commit({ op: 'update_effect', effect: d2, transition: step(d2, 2, 'dispatch', 6), outbox: 'remove' });
      const u2 = settled(d2, 'unknown', {}, 7);
      await p.commit({
        op: 'update_effect',
        effect: u2,
        transition: step(u2, 3, 'settle', 7, { receipt: {} }),
        outbox: 'remove',
      });
      const r4 = settled(rows[3]!, 'superseded', null, 8);
      await p.commit({ op: 'update_effect', effect: r4, transition: step(r4, 2, 'settle', 8), outbox: 'remove' });
      expect((await p.listEffects()).map((e) => e.operation_id)).toEqual(['op-3', 'op-1', 'op-2', 'op-4']);
      expect((await p.listEffects({ goal_id: 'g1' })).map((e) => e.operation_id)).toEqual(['op-3', 'op-2', 'op-4']);
      expect(await p.listEffects({ goal_id: 'g1', outcome: 'unknown' })).toEqual([u2]);
      expect(await p.listEffects({ goal_id: 'g3' })).toEqual([]);
      expect(await p.listHolds()).toEqual([d3, u2]);
      expect((await p.listOutbox()).map((o) => o.operation_id)).toEqual(['op-1']);
      expect((await p.listHistory('op-2')).map((t) => t.seq)).toEqual([1, 2, 3]);
    });

    it('every row survives a restart, and a repeated write still cannot apply', async () => {
      const { h, p, d } = await withDispatched();
      await p.commit(create(effect(2)));
      const before = {
        one: await p.read({ operation_id: 'op-1' }),
        two: await p.read({ operation_id: 'op-2', idempotency_key: 'key-1' }),
        history: await p.listHistory('op-1'),
      };
      p.close();
      const q = h.open();
      expect({
        one: await q.read({ operation_id: 'op-1' }),
        two: await q.read({ operation_id: 'op-2', idempotency_key: 'key-1' }),
        history: await q.listHistory('op-1'),
      }).toEqual(before);
      expect(
        await q.commit({
          op: 'update_effect',
          effect: dispatched(d, 3),
          transition: step(d, 2, 'dispatch', 3),
          outbox: 'remove',
        }),
      ).toEqual(conflict('changed'));
      expect(await q.commit(create(effect(2)))).toEqual(conflict('exists'));
    });

    it('rows come back as copies: changing one changes nothing stored', async () => {
      const { p, d } = await withDispatched();
      const s = settled(d, 'committed', { http_status: 201, body: { ok: true } }, 3);
      await p.commit({
        op: 'update_effect',
        effect: s,
        transition: step(s, 3, 'settle', 3, { receipt: { http_status: 201 } }),
        outbox: 'remove',
      });
      const rows = await p.read({ operation_id: 'op-1', idempotency_key: 'key-1' });
      (rows.effect!.receipt as { body: { ok: boolean } }).body.ok = false;
      (rows.key_holder as { outcome: string }).outcome = 'absent';
      ((await p.listHistory('op-1'))[2]!.receipt as { http_status: number }).http_status = 500;
      ((await p.listEffects())[0] as { attempt: number }).attempt = 7;
      expect(await p.read({ operation_id: 'op-1', idempotency_key: 'key-1' })).toEqual({
        effect: s,
        last_transition: step(s, 3, 'settle', 3, { receipt: { http_status: 201 } }),
        key_holder: s,
      });
    });

    it('a closed port fails commits with provider_closed and rejects every read', async () => {
      const p = make().open();
      p.close();
      expect(await p.commit(create(effect(1)))).toEqual({ status: 'failed', code: 'provider_closed' });
      for (const read of [
        () => p.read({ operation_id: 'op-1' }),
        () => p.listEffects(),
        () => p.listOutbox(),
        () => p.listHolds(),
        () => p.listHistory('op-1'),
      ]) {
        expect((await rejectionOf(read)).code).toBe('provider_closed');
      }
    });

    it('a stored row that does not decode is effect_store_corrupt, never a guess, and the owner refuses to decide on it', async () => {
      const h = make();
      const p = h.open();
      await p.commit(create(effect(1)));
      await p.commit(create(effect(2)));
      await h.damage('op-1');
      expect((await rejectionOf(() => p.read({ operation_id: 'op-1' }))).code).toBe('effect_store_corrupt');
      expect((await rejectionOf(() => p.read({ idempotency_key: 'key-1' }))).code).toBe('effect_store_corrupt');
      expect(await rejectionOf(() => p.listEffects())).toMatchObject({
        code: 'effect_store_corrupt',
        kind: 'internal',
      });
      expect((await p.read({ operation_id: 'op-2' })).effect).toEqual(effect(2));
      const j = effectJournal(p, CLOCK);
      expect((await rejectionOf(() => j.beginDispatch('op-1'))).code).toBe('effect_store_corrupt');
    });

    it('an ambiguous commit resolves by readback: a landed write answers once; one that did not land is store_outcome_unproved and a retry applies once', async () => {
      const inner = make().open();
      const landed = effectJournal(
        { ...forward(inner), commit: async (w) => (await inner.commit(w), { status: 'ambiguous' }) },
        CLOCK,
      );
      const { effect: recorded, replayed } = await landed.recordIntent(INTENT);
      expect(replayed).toBe(false);
      const sent = await landed.beginDispatch('op-a');
      expect(sent).toMatchObject({ attempt: 1, dispatched_at: at(0) });
      expect(await inner.listEffects()).toEqual([sent]);
      expect((await inner.listHistory('op-a')).map((t) => t.event)).toEqual(['intent', 'dispatch']);
      expect(recorded.operation_id).toBe('op-a');

      let lost = true;
      const unproved = effectJournal(
        {
          ...forward(inner),
          commit: async (w): Promise<CommitResult> => (lost ? { status: 'ambiguous' } : inner.commit(w)),
        },
        CLOCK,
      );
      expect((await rejectionOf(() => unproved.settle('op-a', 'committed', { http_status: 201 }))).code).toBe(
        'store_outcome_unproved',
      );
      expect((await inner.read({ operation_id: 'op-a' })).effect).toEqual(sent);
      lost = false;
      const first = await unproved.settle('op-a', 'committed', { http_status: 201 });
      expect(first).toMatchObject({ replayed: false, effect: { outcome: 'committed', receipt: { http_status: 201 } } });
      expect(await unproved.settle('op-a', 'committed', { http_status: 201 })).toEqual({
        effect: first.effect,
        replayed: true,
      });
      expect((await inner.listHistory('op-a')).map((t) => t.event)).toEqual(['intent', 'dispatch', 'settle']);
    });

    it('a writer that lost the race re-reads and re-decides: a racing dispatch is effect_dispatch_in_flight, a racing identical settlement its readback, a racing resolve effect_state_changed', async () => {
      const inner = make().open();
      const other = effectJournal(inner, CLOCK);
      await other.recordIntent(INTENT);
      let race: (() => Promise<unknown>) | undefined = () => other.beginDispatch('op-a');
      const racing = effectJournal(
        {
          ...forward(inner),
          commit: async (w: EffectWrite) => {
            const r = race;
            race = undefined;
            if (r) await r(); // lands first
            return inner.commit(w);
          },
        },
        CLOCK,
      );
      expect((await rejectionOf(() => racing.beginDispatch('op-a'))).code).toBe('effect_dispatch_in_flight');
      race = () => other.settle('op-a', 'unknown', { reason: 'timeout' });
      expect(await racing.settle('op-a', 'unknown', { reason: 'timeout' })).toMatchObject({
        replayed: true,
        effect: { outcome: 'unknown' },
      });
      race = () => other.settle('op-a', 'committed', { found: true });
      expect(
        (
          await rejectionOf(() =>
            racing.resolve('op-a', { outcome: 'unknown', attempt: 1 }, 'absent', { resolved_by: 'operator' }),
          )
        ).code,
      ).toBe('effect_state_changed');
      expect((await inner.read({ operation_id: 'op-a' })).effect).toMatchObject({
        outcome: 'committed',
        receipt: { found: true },
      });
      expect((await inner.listHistory('op-a')).map((t) => `${t.event}:${t.outcome}`)).toEqual([
        'intent:pending',
        'dispatch:pending',
        'settle:unknown',
        'settle:committed',
      ]);
    });
  });
}
