/**
 * The conformance suite of the scheduler storage port (src/owners/scheduler/port.ts): a timer id
 * is inserted once, an update applies only to the exact row it was decided on, not-found is
 * absence, due timers come earliest first, rows survive a restart, and an ambiguous commit
 * resolves by readback — each asserted by what is stored and what comes back. Every provider
 * runs it: `describeSchedulerPort('<provider>', factory)` in test/owners/scheduler/port.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { CommitResult } from '../../../src/owners/port.js';
import { schedulerStore, type SchedulerPort, type StoredTimer } from '../../../src/owners/scheduler/index.js';
import { expectRegisteredProvider, rejectionOf, sha, type PortFactory } from './support.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (min: number): string => new Date(T0 + min * 60_000).toISOString();

const timer = (id: string, over: Partial<StoredTimer> = {}): StoredTimer => ({
  timer_id: id,
  goal_id: 'g1',
  cadence: 'FREQ=MINUTELY;INTERVAL=5',
  next_due_at: at(5),
  enabled: true,
  reset_token: `rst_${id}`,
  last_fired_due_at: null,
  create_digest: sha(1),
  created_at: at(0),
  updated_at: at(0),
  ...over,
});

const APPLIED = { status: 'applied' };
const conflict = (reason: string) => ({ status: 'conflict', reason });
const CLOCK = { now: () => new Date(T0 + 6 * 60_000) };

/** Every method of `p`, forwarded (a test seam to override one of them). */
const forward = (p: SchedulerPort): SchedulerPort => ({
  provider: p.provider,
  get: (id) => p.get(id),
  list: (g) => p.list(g),
  due: (a) => p.due(a),
  commit: (w) => p.commit(w),
  close: () => p.close(),
});

export function describeSchedulerPort(name: string, make: PortFactory<SchedulerPort>): void {
  describe(`scheduler port conformance: ${name}`, () => {
    it('names a registered provider', () => {
      expectRegisteredProvider(make().open().provider);
    });

    it('an empty store reads nothing: undefined and empty lists, never an error', async () => {
      const p = make().open();
      expect(await p.get('tmr-1')).toBeUndefined();
      expect(await p.list()).toEqual([]);
      expect(await p.due(at(100))).toEqual([]);
    });

    it('an inserted timer reads back field for field; the id again is exists and the row stays', async () => {
      const p = make().open();
      const t = timer('tmr-1');
      expect(await p.commit({ op: 'insert_timer', timer: t })).toEqual(APPLIED);
      expect(await p.get('tmr-1')).toEqual(t);
      expect(await p.commit({ op: 'insert_timer', timer: { ...t, cadence: 'FREQ=HOURLY;INTERVAL=1' } })).toEqual(
        conflict('exists'),
      );
      expect(await p.list()).toEqual([t]);
    });

    it('an update applies only to the exact row it was decided on: any field changed since is changed, an unknown id missing', async () => {
      const p = make().open();
      const t = timer('tmr-1');
      await p.commit({ op: 'insert_timer', timer: t });
      const fired = { ...t, next_due_at: at(10), last_fired_due_at: at(5), updated_at: at(6) };
      expect(await p.commit({ op: 'update_timer', expected: t, timer: fired })).toEqual(APPLIED);
      expect(await p.get('tmr-1')).toEqual(fired);
      // The same update again: the row is no longer the one it was decided on.
      expect(await p.commit({ op: 'update_timer', expected: t, timer: { ...fired, next_due_at: at(15) } })).toEqual(
        conflict('changed'),
      );
      for (const stale of [
        { reset_token: 'rst_old' },
        { enabled: false },
        { next_due_at: at(5) },
        { last_fired_due_at: null },
        { cadence: 'FREQ=HOURLY;INTERVAL=1' },
      ]) {
        expect(
          await p.commit({ op: 'update_timer', expected: { ...fired, ...stale }, timer: { ...fired, enabled: false } }),
        ).toEqual(conflict('changed'));
      }
      expect(await p.get('tmr-1')).toEqual(fired);
      expect(
        await p.commit({ op: 'update_timer', expected: timer('tmr-9'), timer: timer('tmr-9', { enabled: false }) }),
      ).toEqual(conflict('missing'));
      expect(await p.get('tmr-9')).toBeUndefined();
    });

    it('due timers are the enabled ones at or before the instant, earliest first, ties in creation order', async () => {
      const p = make().open();
      const rows = [
        timer('tmr-c', { next_due_at: at(10) }),
        timer('tmr-a', { next_due_at: at(5) }),
        timer('tmr-off', { next_due_at: at(1), enabled: false }),
        timer('tmr-b', { next_due_at: at(5) }),
        timer('tmr-late', { next_due_at: at(11) }),
      ];
      for (const t of rows) await p.commit({ op: 'insert_timer', timer: t });
      expect((await p.due(at(10))).map((t) => t.timer_id)).toEqual(['tmr-a', 'tmr-b', 'tmr-c']);
      expect((await p.due(at(4))).map((t) => t.timer_id)).toEqual([]);
      expect((await p.due(at(5))).map((t) => t.timer_id)).toEqual(['tmr-a', 'tmr-b']);
    });

    it('timers list in creation order, optionally of one Goal', async () => {
      const p = make().open();
      for (const t of [timer('tmr-b'), timer('tmr-a', { goal_id: 'g2' }), timer('tmr-c')])
        await p.commit({ op: 'insert_timer', timer: t });
      const b = (await p.get('tmr-b'))!;
      await p.commit({ op: 'update_timer', expected: b, timer: { ...b, enabled: false, updated_at: at(1) } });
      expect((await p.list()).map((t) => t.timer_id)).toEqual(['tmr-b', 'tmr-a', 'tmr-c']);
      expect((await p.list('g1')).map((t) => t.timer_id)).toEqual(['tmr-b', 'tmr-c']);
      expect(await p.list('g3')).toEqual([]);
    });

    it('every row survives a restart', async () => {
      const h = make();
      const p = h.open();
      const t = timer('tmr-1');
      await p.commit({ op: 'insert_timer', timer: t });
      const reset = { ...t, reset_token: 'rst_new', updated_at: at(2) };
      await p.commit({ op: 'update_timer', expected: t, timer: reset });
      p.close();
      const q = h.open();
      expect(await q.list()).toEqual([reset]);
      expect(await q.commit({ op: 'update_timer', expected: t, timer: { ...t, enabled: false } })).toEqual(
        conflict('changed'),
      );
    });

    it('rows come back as copies: changing one changes nothing stored', async () => {
      const p = make().open();
      await p.commit({ op: 'insert_timer', timer: timer('tmr-1') });
      const got = (await p.get('tmr-1')) as { enabled: boolean };
      got.enabled = false;
      expect((await p.get('tmr-1'))!.enabled).toBe(true);
    });

    it('a closed port fails commits with provider_closed and rejects reads', async () => {
      const p = make().open();
      p.close();
      expect(await p.commit({ op: 'insert_timer', timer: timer('tmr-1') })).toEqual({
        status: 'failed',
        code: 'provider_closed',
      });
      expect((await rejectionOf(() => p.get('tmr-1'))).code).toBe('provider_closed');
      expect((await rejectionOf(() => p.due(at(1)))).code).toBe('provider_closed');
    });

    it('an ambiguous commit resolves by readback: a landed fire answers acknowledged once; one that did not land is store_outcome_unproved and a retry advances once', async () => {
      const inner = make().open();
      const created = (
        await schedulerStore(inner, CLOCK).createTimer({
          timer_id: 'tmr-amb',
          goal_id: 'g1',
          cadence: 'FREQ=MINUTELY;INTERVAL=5',
          next_due_at: at(5),
        })
      ).timer;
      const landed = schedulerStore(
        { ...forward(inner), commit: async (w) => (await inner.commit(w), { status: 'ambiguous' }) },
        CLOCK,
      );
      const fired = await landed.ackFire('tmr-amb', { reset_token: created.reset_token, due_at: at(5) });
      expect(fired).toMatchObject({ replayed: false, timer: { next_due_at: at(10), last_fired_due_at: at(5) } });

      let lost = true;
      const unproved = schedulerStore(
        {
          ...forward(inner),
          commit: async (w): Promise<CommitResult> => (lost ? { status: 'ambiguous' } : inner.commit(w)),
        },
        CLOCK,
      );
      expect((await rejectionOf(() => unproved.setEnabled('tmr-amb', false, created.reset_token))).code).toBe(
        'store_outcome_unproved',
      );
      expect((await inner.get('tmr-amb'))!.enabled).toBe(true);
      lost = false;
      expect((await unproved.setEnabled('tmr-amb', false, created.reset_token)).enabled).toBe(false);
      const reset = await unproved.resetTimer('tmr-amb', {
        expected_reset_token: created.reset_token,
        next_due_at: at(30),
      });
      expect(
        (
          await rejectionOf(() =>
            unproved.resetTimer('tmr-amb', { expected_reset_token: created.reset_token, next_due_at: at(30) }),
          )
        ).code,
      ).toBe('timer_reset_token_stale');
      expect(await inner.get('tmr-amb')).toMatchObject({
        reset_token: reset.reset_token,
        next_due_at: at(30),
        enabled: false,
      });
    });

    it('a writer that lost the race re-decides against the winner: a racing identical fire is a readback, a racing reset fences the old token', async () => {
      const inner = make().open();
      const other = schedulerStore(inner, CLOCK);
      const { timer: t } = await other.createTimer({
        timer_id: 'tmr-race',
        goal_id: 'g1',
        cadence: 'FREQ=MINUTELY;INTERVAL=5',
        next_due_at: at(5),
      });
      let race: (() => Promise<unknown>) | undefined;
      const racing = schedulerStore(
        {
          ...forward(inner),
          commit: async (w) => {
            const r = race;
            race = undefined;
            if (r) await r(); // lands first
            return inner.commit(w);
          },
        },
        CLOCK,
      );
      race = () => other.ackFire('tmr-race', { reset_token: t.reset_token, due_at: at(5) });
      expect((await racing.ackFire('tmr-race', { reset_token: t.reset_token, due_at: at(5) })).replayed).toBe(true);
      race = () => other.resetTimer('tmr-race', { expected_reset_token: t.reset_token, next_due_at: at(60) });
      expect((await rejectionOf(() => racing.setEnabled('tmr-race', false, t.reset_token))).code).toBe(
        'timer_reset_token_stale',
      );
      expect(await inner.get('tmr-race')).toMatchObject({ enabled: true, next_due_at: at(60) });
    });
  });
}
