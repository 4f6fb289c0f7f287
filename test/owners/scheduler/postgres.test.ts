/**
 * The PostgreSQL scheduler provider against the real server, beyond the conformance suite: a reset
 * by another pool while a stale writer's transaction is open fences the old token in the database
 * (the code SQLite gives); two pools acknowledging the same occurrence at once fire it once (the
 * second waits on the row lock and turns into the readback); a fire whose connection the server
 * ended at the commit point is unproved, and one retry advances once.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import {
  SCHEDULER_PG_MIGRATIONS,
  openPgSchedulerPort,
  openSqliteSchedulerPort,
  schedulerStore,
  type SchedulerPort,
} from '../../../src/owners/scheduler/index.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { backendPid, blockedBy, hooked } from '../conformance/pg-hooks.js';
import { rejectionOf, tempDirs } from '../conformance/support.js';
import { describePg } from '../../support/pg.js';

const pg = pgHarnesses('scheduler', SCHEDULER_PG_MIGRATIONS);
const tempDir = tempDirs('loopx-scheduler-pg-');
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (min: number): string => new Date(T0 + min * 60_000).toISOString();
const CLOCK = { now: () => new Date(T0 + 6 * 60_000) };
const CREATE = { timer_id: 'tmr-1', goal_id: 'g1', cadence: 'FREQ=MINUTELY;INTERVAL=5', next_due_at: at(5) };

/** What SQLite answers when another writer resets the timer between a decision and its commit. */
async function sqliteRefusal(): Promise<string> {
  const path = join(tempDir(), 'scheduler.db');
  const inner = openSqliteSchedulerPort(path);
  const other = schedulerStore(openSqliteSchedulerPort(path), CLOCK);
  let race: (() => Promise<unknown>) | undefined;
  const racing: SchedulerPort = {
    ...inner,
    commit: async (w) => (await race?.(), (race = undefined), inner.commit(w)),
  };
  const mine = schedulerStore(racing, CLOCK);
  const { timer } = await mine.createTimer(CREATE);
  race = () => other.resetTimer(timer.timer_id, { expected_reset_token: timer.reset_token, next_due_at: at(60) });
  const code = (await rejectionOf(() => mine.setEnabled(timer.timer_id, false, timer.reset_token))).code;
  inner.close();
  return code;
}

describePg('the PostgreSQL scheduler provider on the real server', () => {
  it('fences an old reset token in the database: a reset by another pool inside the stale writer’s transaction refuses it as in SQLite', async () => {
    const a = await pg.database();
    const other = schedulerStore(openPgSchedulerPort(pg.pool(a.schema)), CLOCK);
    const h = hooked(a);
    const port = openPgSchedulerPort(h.db);
    const mine = schedulerStore(port, CLOCK);
    const { timer } = await mine.createTimer(CREATE);

    let reset: string | undefined;
    h.arm('before', async (q) => {
      await q('SELECT 1');
      reset = (await other.resetTimer(timer.timer_id, { expected_reset_token: timer.reset_token, next_due_at: at(60) }))
        .reset_token;
    });
    const refusal = await rejectionOf(() => mine.setEnabled(timer.timer_id, false, timer.reset_token));
    expect(reset, 'the reset landed inside the write').toBeDefined();
    expect(refusal.code).toBe(await sqliteRefusal());
    expect(refusal.code).toBe('timer_reset_token_stale');
    expect(await port.get(timer.timer_id)).toMatchObject({ enabled: true, next_due_at: at(60), reset_token: reset });
    // The port itself: the write decided on the old row is refused by the row, not by client state.
    const stale = { ...timer, create_digest: (await port.get(timer.timer_id))!.create_digest };
    expect(await port.commit({ op: 'update_timer', expected: stale, timer: { ...stale, enabled: false } })).toEqual({
      status: 'conflict',
      reason: 'changed',
    });
  });

  it('two pools acknowledging the same occurrence at once fire it once: the second waits on the row, then reads the first back', async () => {
    const a = await pg.database();
    const other = schedulerStore(openPgSchedulerPort(pg.pool(a.schema)), CLOCK);
    const h = hooked(a);
    const mine = schedulerStore(openPgSchedulerPort(h.db), CLOCK);
    const { timer } = await mine.createTimer(CREATE);
    const ack = { reset_token: timer.reset_token, due_at: at(5) };

    let second: Promise<{ replayed: boolean }> | undefined;
    h.arm('after', async (q) => {
      const pid = await backendPid(q);
      second = other.ackFire(timer.timer_id, ack);
      await blockedBy(a, pid);
    });
    const first = await mine.ackFire(timer.timer_id, ack);
    expect(first).toMatchObject({ replayed: false, timer: { next_due_at: at(10), last_fired_due_at: at(5) } });
    expect(await second).toMatchObject({ replayed: true, timer: first.timer });
    expect(await a.query('SELECT next_due_at, last_fired_due_at FROM timers')).toEqual([
      { next_due_at: at(10), last_fired_due_at: at(5) },
    ]);
  }, 120_000);

  it('a fire whose connection the server ended at the commit point is unproved, nothing landed, and one retry advances once', async () => {
    const a = await pg.database();
    const killer = pg.pool(a.schema);
    const h = hooked(a);
    const port = openPgSchedulerPort(h.db);
    const store = schedulerStore(port, CLOCK);
    const { timer } = await store.createTimer(CREATE);
    const ack = { reset_token: timer.reset_token, due_at: at(5) };

    h.arm('after', async (q) => {
      await killer.query('SELECT pg_terminate_backend($1)', [await backendPid(q)]);
    });
    expect((await rejectionOf(() => store.ackFire(timer.timer_id, ack))).code).toBe('store_outcome_unproved');
    expect(await port.get(timer.timer_id)).toMatchObject({ next_due_at: at(5), last_fired_due_at: null });

    const fired = await store.ackFire(timer.timer_id, ack);
    expect(fired).toMatchObject({ replayed: false, timer: { next_due_at: at(10), last_fired_due_at: at(5) } });
    expect((await store.ackFire(timer.timer_id, ack)).replayed).toBe(true);
    expect(await port.get(timer.timer_id)).toMatchObject({ next_due_at: at(10), last_fired_due_at: at(5) });
  });
});
