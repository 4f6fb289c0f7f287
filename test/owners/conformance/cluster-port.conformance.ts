/**
 * The conformance suite of the cluster owner's contract (src/owners/cluster/contract.ts): every
 * provider — the in-memory reference and PostgreSQL — runs these same cases through
 * `describeClusterPort(name, factory)` in test/owners/cluster/port.test.ts, so they answer alike:
 * membership joined once, drains that never take a member back, liveness on the provider's clock,
 * work submitted once, each transition applied only from the state it moves from (a cancel request
 * never requeued), submission order, and wake-ups that reach a watcher of another port of the
 * same store (another process) and stop when it stops.
 *
 * The factory returns a fresh, empty store; each `open()` of it is another port on that store
 * (a restart, or another process).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cluster } from '../../../src/owners/index.js';
import { rejectionOf, type PortFactory } from './support.js';

type ClusterPort = cluster.ClusterPort;

const member = (id: string, lease_ms = 60_000): cluster.InstanceJoin => ({
  instance_id: id,
  host: 'host-a',
  pid: 4242,
  lease_ms,
});
const work = (id: string, input: string | null = `input of ${id}`): cluster.SubmittedWork => ({
  run_id: id,
  agent: `{"id":"agent.${id}"}`,
  input,
});
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A watcher: how many wake-ups it heard, and a latch on the next one (bounded: a lost wake-up fails the case). */
function counter() {
  let heard = 0;
  let next: (() => void) | undefined;
  return {
    onWake: () => {
      heard++;
      next?.();
    },
    get heard() {
      return heard;
    },
    next: (what: string) =>
      new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no wake-up after ${what}`)), 10_000);
        next = () => {
          clearTimeout(t);
          next = undefined;
          resolve();
        };
      }),
  };
}

export function describeClusterPort(name: string, make: PortFactory<ClusterPort>): void {
  describe(`cluster port conformance: ${name}`, () => {
    const stops: Array<() => void> = [];
    afterEach(() => {
      for (const stop of stops.splice(0)) stop();
    });
    const watch = async (p: ClusterPort, c: ReturnType<typeof counter>) => {
      const stop = await p.watch(c.onWake);
      stops.push(stop);
      return stop;
    };

    describe('membership', () => {
      it('a joined instance is active and live, read back as it joined; instances come in join order', async () => {
        const p = make().open();
        await p.join(member('inst_b'));
        await p.join(member('inst_a', 30_000));
        const b = await p.instance('inst_b');
        expect(b).toMatchObject({
          instance_id: 'inst_b',
          host: 'host-a',
          pid: 4242,
          lease_ms: 60_000,
          state: 'active',
          live: true,
        });
        expect(b!.heartbeat_age_ms).toBeGreaterThanOrEqual(0);
        expect((await p.instances()).map((i) => i.instance_id)).toEqual(['inst_b', 'inst_a']);
      });

      it('an instance id joins once: a second join is cluster_instance_exists and changes nothing', async () => {
        const p = make().open();
        await p.join(member('inst_a'));
        await p.markInstance('inst_a', 'drained');
        const e = await rejectionOf(() => p.join({ ...member('inst_a'), host: 'host-b' }));
        expect(e).toMatchObject({ code: 'cluster_instance_exists', kind: 'conflict' });
        expect(await p.instance('inst_a')).toMatchObject({ host: 'host-a', state: 'drained' });
        expect(await p.instances()).toHaveLength(1);
      });

      it('an unknown instance is undefined, never an error: no heartbeat, no drain, no row made', async () => {
        const p = make().open();
        expect(await p.instance('inst_x')).toBeUndefined();
        expect(await p.heartbeat('inst_x')).toBeUndefined();
        expect(await p.requestDrain('inst_x')).toBeUndefined();
        await p.markInstance('inst_x', 'stopped');
        expect(await p.instances()).toEqual([]);
      });

      it('a drain asked of an active member makes it draining, and its heartbeat says so; a drained or stopped one stays as it is', async () => {
        const h = make();
        const p = h.open();
        await p.join(member('inst_a'));
        await p.join(member('inst_b'));
        await p.join(member('inst_c'));
        expect(await p.requestDrain('inst_a')).toBe('draining');
        expect(await h.open().heartbeat('inst_a')).toBe('draining');
        expect(await p.requestDrain('inst_a')).toBe('draining');
        await p.markInstance('inst_b', 'drained');
        expect(await p.requestDrain('inst_b')).toBe('drained');
        await p.markInstance('inst_c', 'stopped');
        expect(await p.requestDrain('inst_c')).toBe('stopped');
        expect((await p.instances()).map((i) => i.state)).toEqual(['draining', 'drained', 'stopped']);
      });

      it("a member's own report moves it on, but never back into draining", async () => {
        const p = make().open();
        await p.join(member('inst_a'));
        await p.markInstance('inst_a', 'draining');
        expect((await p.instance('inst_a'))?.state).toBe('draining');
        await p.markInstance('inst_a', 'drained');
        await p.markInstance('inst_a', 'draining');
        expect((await p.instance('inst_a'))?.state).toBe('drained');
        await p.markInstance('inst_a', 'stopped');
        await p.markInstance('inst_a', 'draining');
        expect((await p.instance('inst_a'))?.state).toBe('stopped');
      });

      it("a member is live while its last heartbeat is younger than its lease, on the provider's clock", async () => {
        const p = make().open();
        await p.join(member('inst_a', 300));
        expect((await p.instance('inst_a'))?.live).toBe(true);
        await pause(450);
        const lapsed = await p.instance('inst_a');
        expect(lapsed).toMatchObject({ live: false, state: 'active' });
        expect(lapsed!.heartbeat_age_ms).toBeGreaterThanOrEqual(300);
        expect(await p.heartbeat('inst_a')).toBe('active');
        const renewed = await p.instance('inst_a');
        expect(renewed?.live).toBe(true);
        expect(renewed!.heartbeat_age_ms).toBeLessThan(300);
      });
    });

    describe('the work queue', () => {
      it('a run is submitted once: the second submission answers false and changes nothing', async () => {
        const p = make().open();
        expect(await p.submit(work('run_a'))).toBe(true);
        expect(await p.submit({ ...work('run_a', 'another input'), agent: '{"id":"other"}' })).toBe(false);
        expect(await p.work('run_a')).toEqual({ ...work('run_a'), state: 'pending', held_code: null });
        expect(await p.submit(work('run_b', null))).toBe(true);
        expect(await p.work('run_b')).toEqual({ ...work('run_b', null), state: 'pending', held_code: null });
      });

      it('an unknown run is undefined, and no transition applies to it', async () => {
        const p = make().open();
        expect(await p.work('run_x')).toBeUndefined();
        expect(await p.hold('run_x', 'mutation_uncertain')).toBe(false);
        expect(await p.requeue('run_x')).toBe(false);
        expect(await p.requestCancel('run_x')).toBe(false);
        expect(await p.finish('run_x')).toBe(false);
        expect(await p.listWork()).toEqual([]);
      });

      it('work is listed in submission order, pending work too, up to a limit and less the runs excluded', async () => {
        const h = make();
        const p = h.open();
        for (const id of ['run_c', 'run_a', 'run_d', 'run_b']) await p.submit(work(id));
        expect((await h.open().listWork()).map((w) => w.run_id)).toEqual(['run_c', 'run_a', 'run_d', 'run_b']);
        expect(await p.pending({ limit: 10 })).toEqual(['run_c', 'run_a', 'run_d', 'run_b']);
        expect(await p.pending({ limit: 2 })).toEqual(['run_c', 'run_a']);
        expect(await p.pending({ limit: 2, excluding: ['run_c', 'run_x'] })).toEqual(['run_a', 'run_d']);
        await p.hold('run_a', 'interaction_pending');
        await p.finish('run_d');
        expect(await p.pending({ limit: 10, excluding: [] })).toEqual(['run_c', 'run_b']);
      });

      it('only pending work is held, with its code; held work is listed by code in submission order', async () => {
        const p = make().open();
        for (const id of ['run_c', 'run_a', 'run_b']) await p.submit(work(id));
        expect(await p.hold('run_c', 'mutation_uncertain')).toBe(true);
        expect(await p.hold('run_c', 'plan_identity_changed')).toBe(false);
        expect(await p.hold('run_a', 'mutation_uncertain')).toBe(true);
        expect(await p.hold('run_b', 'interaction_pending')).toBe(true);
        expect(await p.work('run_c')).toMatchObject({ state: 'held', held_code: 'mutation_uncertain' });
        expect(await p.held({ code: 'mutation_uncertain', limit: 8 })).toEqual(['run_c', 'run_a']);
        expect(await p.held({ code: 'mutation_uncertain', limit: 1 })).toEqual(['run_c']);
        expect(await p.held({ code: 'interaction_pending', limit: 8 })).toEqual(['run_b']);
        await p.finish('run_b');
        expect(await p.hold('run_b', 'mutation_uncertain')).toBe(false);
        expect(await p.work('run_b')).toMatchObject({ state: 'finished' });
      });

      it('held work is requeued pending, without its code; pending or finished work is not requeued', async () => {
        const p = make().open();
        await p.submit(work('run_a'));
        expect(await p.requeue('run_a')).toBe(false);
        await p.hold('run_a', 'mutation_uncertain');
        expect(await p.requeue('run_a')).toBe(true);
        expect(await p.work('run_a')).toMatchObject({ state: 'pending', held_code: null });
        expect(await p.requeue('run_a')).toBe(false);
        await p.finish('run_a');
        expect(await p.requeue('run_a')).toBe(false);
        expect(await p.work('run_a')).toMatchObject({ state: 'finished' });
      });

      it('a cancel request holds pending or held work as cancel_requested, which is never requeued; finished work stays finished', async () => {
        const p = make().open();
        for (const id of ['run_a', 'run_b', 'run_c']) await p.submit(work(id));
        await p.hold('run_b', 'mutation_uncertain');
        await p.finish('run_c');
        expect(await p.requestCancel('run_a')).toBe(true);
        expect(await p.requestCancel('run_b')).toBe(true);
        expect(await p.requestCancel('run_c')).toBe(false);
        expect(await p.work('run_a')).toMatchObject({ state: 'held', held_code: cluster.CANCEL_REQUESTED });
        expect(await p.work('run_b')).toMatchObject({ state: 'held', held_code: cluster.CANCEL_REQUESTED });
        expect(await p.work('run_c')).toMatchObject({ state: 'finished' });
        expect(await p.requeue('run_a')).toBe(false);
        expect(await p.hold('run_a', 'mutation_uncertain')).toBe(false);
        expect(await p.work('run_a')).toMatchObject({ state: 'held', held_code: cluster.CANCEL_REQUESTED });
        expect(await p.pending({ limit: 10 })).toEqual([]);
        expect(await p.held({ code: 'mutation_uncertain', limit: 8 })).toEqual([]);
      });

      it('finishing is idempotent: pending or held work finishes once, and a finished run is in no list of work to do', async () => {
        const p = make().open();
        await p.submit(work('run_a'));
        await p.submit(work('run_b'));
        await p.requestCancel('run_b');
        expect(await p.finish('run_a')).toBe(true);
        expect(await p.finish('run_a')).toBe(false);
        expect(await p.finish('run_b')).toBe(true);
        expect((await p.listWork()).map((w) => [w.run_id, w.state])).toEqual([
          ['run_a', 'finished'],
          ['run_b', 'finished'],
        ]);
        expect(await p.pending({ limit: 10 })).toEqual([]);
        expect(await p.held({ code: cluster.CANCEL_REQUESTED, limit: 8 })).toEqual([]);
      });

      it('rows come back as copies: changing one changes nothing stored', async () => {
        const p = make().open();
        await p.submit(work('run_a'));
        await p.join(member('inst_a'));
        const w = (await p.work('run_a')) as { state: string };
        w.state = 'finished';
        const i = (await p.instance('inst_a')) as { state: string };
        i.state = 'stopped';
        expect((await p.work('run_a'))?.state).toBe('pending');
        expect((await p.instance('inst_a'))?.state).toBe('active');
      });
    });

    describe('wake-ups', () => {
      it('a submission, a requeue, a drain request and a plain wake each wake a watcher of another port of the same store', async () => {
        const h = make();
        const watcher = h.open();
        const p = h.open();
        const c = counter();
        await watch(watcher, c);
        await p.join(member('inst_a'));

        let woken = c.next('submit');
        await p.submit(work('run_a'));
        await woken;
        await p.hold('run_a', 'mutation_uncertain');
        woken = c.next('requeue');
        await p.requeue('run_a');
        await woken;
        woken = c.next('requestDrain');
        await p.requestDrain('inst_a');
        await woken;
        woken = c.next('wake');
        await p.wake('run_a');
        await woken;
      });

      it('a stopped watcher hears nothing more, while another still does', async () => {
        const h = make();
        const p = h.open();
        const stopped = counter();
        const still = counter();
        const stop = await watch(h.open(), stopped);
        await watch(h.open(), still);
        const first = Promise.all([stopped.next('first wake'), still.next('first wake')]);
        await p.wake('first');
        await first;
        stop();
        stop(); // stopping twice is harmless
        let woken = still.next('second wake');
        await p.wake('second');
        await woken;
        woken = still.next('submit');
        await p.submit(work('run_a'));
        await woken;
        expect(stopped.heard).toBe(1);
      });
    });
  });
}
