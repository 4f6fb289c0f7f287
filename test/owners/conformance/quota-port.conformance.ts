/**
 * The conformance suite of the quota storage port (src/owners/quota/port.ts): an effect id is
 * inserted once, a void applies only to the written entry it names, not-found is absence, sums
 * follow [since, until), entries survive a restart, and an ambiguous commit resolves by readback —
 * each asserted by what is stored and what comes back. Every provider runs it:
 * `describeQuotaPort('<provider>', factory)` in test/owners/quota/port.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { CommitResult } from '../../../src/owners/port.js';
import { quotaLedger, type QuotaPort, type SpendEntry } from '../../../src/owners/quota/index.js';
import { expectRegisteredProvider, rejectionOf, sha, type PortFactory } from './support.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (min: number): string => new Date(T0 + min * 60_000).toISOString();

const entry = (n: number, over: Partial<SpendEntry> = {}): SpendEntry => ({
  effect_id: `st-${n}#quota_spend`,
  goal_id: 'g1',
  goal_instance_id: 'gi_1',
  amount: n,
  unit: 'turn',
  request_digest: sha(n),
  status: 'written',
  created_at: at(n),
  voided_at: null,
  void_reason: null,
  ...over,
});
const voided = (e: SpendEntry, min: number): SpendEntry => ({
  ...e,
  status: 'voided',
  voided_at: at(min),
  void_reason: 'turn_failed',
});

const APPLIED = { status: 'applied' };
const conflict = (reason: string) => ({ status: 'conflict', reason });
const ALL = { goal_id: 'g1', goal_instance_id: null, since: at(0), until: null };
const CLOCK = { now: () => new Date(T0) };

/** Every method of `p`, forwarded (a test seam to override one of them). */
const forward = (p: QuotaPort): QuotaPort => ({
  provider: p.provider,
  get: (id) => p.get(id),
  list: (f) => p.list(f),
  sumWritten: (q) => p.sumWritten(q),
  commit: (w) => p.commit(w),
  close: () => p.close(),
});

export function describeQuotaPort(name: string, make: PortFactory<QuotaPort>): void {
  describe(`quota port conformance: ${name}`, () => {
    it('names a registered provider', () => {
      expectRegisteredProvider(make().open().provider);
    });

    it('an empty ledger reads nothing: undefined, an empty list, a zero sum — never an error', async () => {
      const p = make().open();
      expect(await p.get('st-1#quota_spend')).toBeUndefined();
      expect(await p.list({})).toEqual([]);
      expect(await p.sumWritten(ALL)).toEqual({ totals: {}, entries: 0 });
    });

    it('an inserted entry reads back field for field; the effect id again is exists and the entry stays', async () => {
      const p = make().open();
      const e = entry(1);
      expect(await p.commit({ op: 'insert_spend', entry: e })).toEqual(APPLIED);
      expect(await p.get(e.effect_id)).toEqual(e);
      expect(await p.commit({ op: 'insert_spend', entry: e })).toEqual(conflict('exists'));
      expect(await p.commit({ op: 'insert_spend', entry: { ...e, amount: 9, request_digest: sha(9) } })).toEqual(
        conflict('exists'),
      );
      expect(await p.list({})).toEqual([e]);
    });

    it('a void applies to the written entry it names once: a repeat or another digest is changed, an unknown id missing', async () => {
      const p = make().open();
      const e = entry(1);
      await p.commit({ op: 'insert_spend', entry: e });
      expect(await p.commit({ op: 'void_spend', entry: voided({ ...e, request_digest: sha(9) }, 5) })).toEqual(
        conflict('changed'),
      );
      expect(await p.get(e.effect_id)).toEqual(e);
      const v = voided(e, 5);
      expect(await p.commit({ op: 'void_spend', entry: v })).toEqual(APPLIED);
      expect(await p.get(e.effect_id)).toEqual(v);
      expect(await p.commit({ op: 'void_spend', entry: voided(e, 6) })).toEqual(conflict('changed'));
      expect(await p.get(e.effect_id)).toEqual(v);
      expect(await p.commit({ op: 'void_spend', entry: voided(entry(2), 6) })).toEqual(conflict('missing'));
      expect(await p.list({})).toEqual([v]);
    });

    it('sums are per unit over written entries of the Goal (and lifetime) with created_at in [since, until)', async () => {
      const p = make().open();
      const rows = [
        entry(1),
        entry(2, { unit: 'token', amount: 500 }),
        entry(3, { goal_instance_id: 'gi_2' }),
        entry(4, { goal_id: 'g2' }),
        entry(5),
      ];
      for (const e of rows) await p.commit({ op: 'insert_spend', entry: e });
      await p.commit({ op: 'void_spend', entry: voided(rows[4]!, 9) });
      expect(await p.sumWritten(ALL)).toEqual({ totals: { turn: 4, token: 500 }, entries: 3 });
      expect(await p.sumWritten({ ...ALL, goal_instance_id: 'gi_1' })).toEqual({
        totals: { turn: 1, token: 500 },
        entries: 2,
      });
      expect(await p.sumWritten({ ...ALL, since: at(2), until: at(3) })).toEqual({
        totals: { token: 500 },
        entries: 1,
      });
      expect(await p.sumWritten({ ...ALL, since: at(1), until: at(1) })).toEqual({ totals: {}, entries: 0 });
      expect(await p.sumWritten({ ...ALL, goal_id: 'g2' })).toEqual({ totals: { turn: 4 }, entries: 1 });
    });

    it('entries list in creation order, filtered by Goal and status', async () => {
      const p = make().open();
      const rows = [entry(3), entry(1, { goal_id: 'g2' }), entry(2)];
      for (const e of rows) await p.commit({ op: 'insert_spend', entry: e });
      await p.commit({ op: 'void_spend', entry: voided(rows[0]!, 9) });
      expect((await p.list({})).map((e) => e.effect_id)).toEqual([
        'st-3#quota_spend',
        'st-1#quota_spend',
        'st-2#quota_spend',
      ]);
      expect((await p.list({ goal_id: 'g1', status: 'written' })).map((e) => e.effect_id)).toEqual([
        'st-2#quota_spend',
      ]);
      expect((await p.list({ status: 'voided' })).map((e) => e.effect_id)).toEqual(['st-3#quota_spend']);
    });

    it('every entry survives a restart, and the effect id still debits once', async () => {
      const h = make();
      const p = h.open();
      const e = entry(1);
      await p.commit({ op: 'insert_spend', entry: e });
      await p.commit({ op: 'void_spend', entry: voided(e, 4) });
      await p.commit({ op: 'insert_spend', entry: entry(2) });
      const before = await p.list({});
      p.close();
      const q = h.open();
      expect(await q.list({})).toEqual(before);
      expect(await q.commit({ op: 'insert_spend', entry: e })).toEqual(conflict('exists'));
    });

    it('entries come back as copies: changing one changes nothing stored', async () => {
      const p = make().open();
      await p.commit({ op: 'insert_spend', entry: entry(1) });
      const got = (await p.get('st-1#quota_spend')) as { amount: number };
      got.amount = 99;
      expect((await p.get('st-1#quota_spend'))!.amount).toBe(1);
    });

    it('a closed port fails commits with provider_closed and rejects reads', async () => {
      const p = make().open();
      p.close();
      expect(await p.commit({ op: 'insert_spend', entry: entry(1) })).toEqual({
        status: 'failed',
        code: 'provider_closed',
      });
      expect((await rejectionOf(() => p.get('st-1#quota_spend'))).code).toBe('provider_closed');
      expect((await rejectionOf(() => p.sumWritten(ALL))).code).toBe('provider_closed');
    });

    it('an ambiguous commit resolves by readback: a landed debit answers written once; one that did not land is store_outcome_unproved and a retry debits once', async () => {
      const inner = make().open();
      const request = {
        effect_id: 'st-a#quota_spend',
        goal_id: 'g1',
        goal_instance_id: 'gi_1',
        amount: 2,
        unit: 'turn',
      };
      const landed = quotaLedger(
        { ...forward(inner), commit: async (w) => (await inner.commit(w), { status: 'ambiguous' }) },
        CLOCK,
      );
      const first = await landed.spend(request);
      expect(first.status).toBe('written');
      expect(await inner.list({})).toEqual([first.entry]);

      let lost = true;
      const unproved = quotaLedger(
        {
          ...forward(inner),
          commit: async (w): Promise<CommitResult> => (lost ? { status: 'ambiguous' } : inner.commit(w)),
        },
        CLOCK,
      );
      const other = { ...request, effect_id: 'st-b#quota_spend' };
      expect((await rejectionOf(() => unproved.spend(other))).code).toBe('store_outcome_unproved');
      expect(await inner.get(other.effect_id)).toBeUndefined();
      lost = false;
      expect((await unproved.spend(other)).status).toBe('written');
      expect((await unproved.spend(other)).status).toBe('replayed');
      expect(await inner.sumWritten(ALL)).toEqual({ totals: { turn: 4 }, entries: 2 });
    });

    it('a debit that lost the race re-decides: the same request becomes a replay, a different one quota_spend_conflict', async () => {
      const inner = make().open();
      const other = quotaLedger(inner);
      const request = {
        effect_id: 'st-r#quota_spend',
        goal_id: 'g1',
        goal_instance_id: 'gi_1',
        amount: 1,
        unit: 'turn',
      };
      let race: (() => Promise<unknown>) | undefined;
      const racing = quotaLedger({
        ...forward(inner),
        commit: async (w) => {
          const r = race;
          race = undefined;
          if (r) await r(); // lands first
          return inner.commit(w);
        },
      });
      race = () => other.spend(request);
      expect((await racing.spend(request)).status).toBe('replayed');
      race = () => other.spend({ ...request, effect_id: 'st-s#quota_spend' });
      expect(
        (await rejectionOf(() => racing.spend({ ...request, effect_id: 'st-s#quota_spend', amount: 7 }))).code,
      ).toBe('quota_spend_conflict');
      expect((await inner.list({})).map((e) => [e.effect_id, e.amount])).toEqual([
        ['st-r#quota_spend', 1],
        ['st-s#quota_spend', 1],
      ]);
    });
  });
}
