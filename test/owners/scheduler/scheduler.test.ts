/**
 * Scheduler owner conformance (in-memory reference and SQLite): cadence parsing, idempotent
 * creation, the reset-token fence, acknowledge-once firing that skips missed occurrences; plus
 * historical readback of a copied scheduler.db.
 */
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/core/index.js';
import {
  memorySchedulerStore,
  openSqliteSchedulerStore,
  parseCadence,
  type SchedulerStore,
} from '../../../src/owners/scheduler/index.js';
import { readHistoricalFile as readHistorical } from '../../../src/owners/scheduler/historical.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-scheduler-'));
  dirs.push(d);
  return d;
};
const codeOf = async (fn: () => unknown): Promise<string | undefined> => {
  try {
    await fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};
const clock = (start = '2026-03-01T00:00:00.000Z') => {
  let t = Date.parse(start);
  return { now: () => new Date(t), set: (iso: string) => (t = Date.parse(iso)) };
};

const providers: Array<[string, (now: () => Date) => SchedulerStore]> = [
  ['memory', (now) => memorySchedulerStore({ now })],
  ['sqlite', (now) => openSqliteSchedulerStore(join(tempDir(), 'scheduler.db'), { now })],
];

const every5 = {
  timer_id: 'tmr-1',
  goal_id: 'g1',
  cadence: 'FREQ=MINUTELY;INTERVAL=5',
  next_due_at: '2026-03-01T00:05:00Z',
};

describe('cadence', () => {
  it('parses the FREQ/INTERVAL subset into a canonical form and a period', () => {
    expect(parseCadence('FREQ=MINUTELY;INTERVAL=5')).toEqual({
      freq: 'MINUTELY',
      interval: 5,
      ms: 300_000,
      text: 'FREQ=MINUTELY;INTERVAL=5',
    });
    expect(parseCadence('INTERVAL=2;FREQ=HOURLY').text).toBe('FREQ=HOURLY;INTERVAL=2');
    expect(parseCadence('FREQ=DAILY')).toMatchObject({ interval: 1, ms: 86_400_000, text: 'FREQ=DAILY;INTERVAL=1' });
  });

  it('refuses anything else', async () => {
    for (const bad of [
      '',
      'FREQ=WEEKLY',
      'FREQ=MINUTELY;INTERVAL=0',
      'FREQ=MINUTELY;INTERVAL=05',
      'FREQ=MINUTELY;FREQ=HOURLY',
      'FREQ=MINUTELY;COUNT=3',
      'freq=minutely',
      'FREQ=MINUTELY;INTERVAL=1000001',
      'FREQ=MINUTELY;',
    ]) {
      expect(await codeOf(() => parseCadence(bad)), bad).toBe('scheduler_cadence_invalid');
    }
  });
});

describe.each(providers)('scheduler owner (%s)', (_name, make) => {
  it('a timer is created enabled with a reset token; the same request again returns it, a different one is refused', async () => {
    const s = make(clock().now);
    const { timer, replayed } = await s.createTimer(every5);
    expect(replayed).toBe(false);
    expect(timer).toMatchObject({
      timer_id: 'tmr-1',
      goal_id: 'g1',
      cadence: 'FREQ=MINUTELY;INTERVAL=5',
      next_due_at: '2026-03-01T00:05:00.000Z',
      enabled: true,
      last_fired_due_at: null,
    });
    expect(timer.reset_token).toMatch(/^rst_[0-9a-f]{24}$/);
    expect(await s.createTimer(every5)).toEqual({ timer, replayed: true });
    expect(await codeOf(() => s.createTimer({ ...every5, cadence: 'FREQ=MINUTELY;INTERVAL=6' }))).toBe(
      'timer_identity_mismatch',
    );
    expect(await s.listTimers()).toHaveLength(1);
    expect(
      (
        await s.createTimer({
          goal_id: 'g1',
          cadence: 'FREQ=HOURLY',
          next_due_at: '2026-03-01T01:00:00Z',
          enabled: false,
        })
      ).timer.timer_id,
    ).toMatch(/^tmr_[0-9a-f]{24}$/);
    s.close();
  });

  it('invalid requests are refused', async () => {
    const s = make(clock().now);
    expect(await codeOf(() => s.createTimer({ ...every5, cadence: 'FREQ=SECONDLY' }))).toBe(
      'scheduler_cadence_invalid',
    );
    expect(await codeOf(() => s.createTimer({ ...every5, next_due_at: 'soon' }))).toBe('scheduler_input_invalid');
    expect(await codeOf(() => s.createTimer({ ...every5, goal_id: 'G/1' }))).toBe('scheduler_input_invalid');
    expect(await codeOf(() => s.dueTimers('never'))).toBe('scheduler_input_invalid');
    expect(await s.listTimers()).toEqual([]);
    s.close();
  });

  it('due timers are the enabled ones at or before the instant, earliest first', async () => {
    const s = make(clock().now);
    await s.createTimer({ ...every5, timer_id: 'late', next_due_at: '2026-03-01T00:10:00Z' });
    await s.createTimer({ ...every5, timer_id: 'early', next_due_at: '2026-03-01T00:05:00Z' });
    await s.createTimer({ ...every5, timer_id: 'off', next_due_at: '2026-03-01T00:01:00Z', enabled: false });
    expect(await s.dueTimers('2026-03-01T00:04:59Z')).toEqual([]);
    expect((await s.dueTimers('2026-03-01T00:05:00Z')).map((t) => t.timer_id)).toEqual(['early']);
    expect((await s.dueTimers('2026-03-01T01:00:00Z')).map((t) => t.timer_id)).toEqual(['early', 'late']);
    s.close();
  });

  it('acknowledging a fire advances by the cadence; the same occurrence again is a readback, not a second advance', async () => {
    const c = clock();
    const s = make(c.now);
    const { timer } = await s.createTimer(every5);
    c.set('2026-03-01T00:05:02Z');
    const fired = await s.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: '2026-03-01T00:05:00Z' });
    expect(fired).toMatchObject({
      replayed: false,
      timer: { next_due_at: '2026-03-01T00:10:00.000Z', last_fired_due_at: '2026-03-01T00:05:00.000Z' },
    });
    c.set('2026-03-01T00:05:09Z');
    expect(await s.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: '2026-03-01T00:05:00.000Z' })).toEqual({
      timer: fired.timer,
      replayed: true,
    });
    expect(
      await codeOf(() => s.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: '2026-03-01T00:20:00Z' })),
    ).toBe('timer_due_mismatch');
    s.close();
  });

  it('missed occurrences are skipped, never replayed: the next one is the first after the fire time', async () => {
    const c = clock();
    const s = make(c.now);
    const { timer } = await s.createTimer(every5);
    c.set('2026-03-01T00:27:00Z'); // 00:10, 00:15, 00:20, 00:25 were missed
    const r = await s.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: every5.next_due_at });
    expect(r.timer.next_due_at).toBe('2026-03-01T00:30:00.000Z');
    c.set('2026-03-01T00:35:00Z'); // fired exactly on an occurrence boundary: that one is past too
    expect(
      (await s.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: '2026-03-01T00:30:00Z' })).timer.next_due_at,
    ).toBe('2026-03-01T00:40:00.000Z');
    s.close();
  });

  it('a stale reset token is refused for every change; a reset mints a new token and fences the old one', async () => {
    const c = clock();
    const s = make(c.now);
    const { timer } = await s.createTimer(every5);
    const reset = await s.resetTimer('tmr-1', {
      expected_reset_token: timer.reset_token,
      next_due_at: '2026-03-02T00:00:00Z',
      cadence: 'FREQ=HOURLY;INTERVAL=1',
    });
    expect(reset).toMatchObject({
      cadence: 'FREQ=HOURLY;INTERVAL=1',
      next_due_at: '2026-03-02T00:00:00.000Z',
      last_fired_due_at: null,
    });
    expect(reset.reset_token).not.toBe(timer.reset_token);
    expect(
      await codeOf(() => s.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: '2026-03-02T00:00:00Z' })),
    ).toBe('timer_reset_token_stale');
    expect(await codeOf(() => s.setEnabled('tmr-1', false, timer.reset_token))).toBe('timer_reset_token_stale');
    expect(
      await codeOf(() =>
        s.resetTimer('tmr-1', { expected_reset_token: timer.reset_token, next_due_at: '2026-03-03T00:00:00Z' }),
      ),
    ).toBe('timer_reset_token_stale');
    expect(await s.getTimer('tmr-1')).toEqual(reset);
    expect(
      await codeOf(() => s.resetTimer('tmr-9', { expected_reset_token: 'x', next_due_at: '2026-03-03T00:00:00Z' })),
    ).toBe('timer_not_found');
    s.close();
  });

  it('a disabled timer is not due and cannot fire; enabling keeps its token', async () => {
    const c = clock();
    const s = make(c.now);
    const { timer } = await s.createTimer(every5);
    const off = await s.setEnabled('tmr-1', false, timer.reset_token);
    expect(off.enabled).toBe(false);
    expect(await s.dueTimers('2026-03-02T00:00:00Z')).toEqual([]);
    expect(await codeOf(() => s.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: every5.next_due_at }))).toBe(
      'timer_disabled',
    );
    const on = await s.setEnabled('tmr-1', true, timer.reset_token);
    expect([on.enabled, on.reset_token]).toEqual([true, timer.reset_token]);
    expect(await s.setEnabled('tmr-1', true, timer.reset_token)).toEqual(on);
    s.close();
  });

  it('timers list in creation order and by Goal', async () => {
    const s = make(clock().now);
    await s.createTimer({ ...every5, timer_id: 'a' });
    await s.createTimer({ ...every5, timer_id: 'b', goal_id: 'g2' });
    await s.createTimer({ ...every5, timer_id: 'c' });
    expect((await s.listTimers()).map((t) => t.timer_id)).toEqual(['a', 'b', 'c']);
    expect((await s.listTimers('g1')).map((t) => t.timer_id)).toEqual(['a', 'c']);
    expect(await s.getTimer('zzz')).toBeUndefined();
    s.close();
  });
});

describe('scheduler owner (sqlite only)', () => {
  it('scheduler.db is owner-only; an acknowledged fire survives a restart and is not acknowledged twice', async () => {
    const path = join(tempDir(), 'scheduler.db');
    const c = clock('2026-03-01T00:06:00Z');
    const a = openSqliteSchedulerStore(path, { now: c.now });
    const { timer } = await a.createTimer(every5);
    const fired = (await a.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: every5.next_due_at })).timer;
    a.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const b = openSqliteSchedulerStore(path, { now: c.now });
    expect(await b.ackFire('tmr-1', { reset_token: timer.reset_token, due_at: every5.next_due_at })).toEqual({
      timer: fired,
      replayed: true,
    });
    b.close();
  });
});

describe('scheduler readHistorical', () => {
  async function copied() {
    const live = join(tempDir(), 'scheduler.db');
    const s = openSqliteSchedulerStore(live);
    await s.createTimer(every5);
    await s.createTimer({ ...every5, timer_id: 'tmr-off', enabled: false });
    s.close();
    const workspace = tempDir();
    const copy = join(workspace, 'scheduler.db');
    copyFileSync(live, copy);
    return { copy, workspace };
  }
  const damage = (path: string, sql: string) => {
    const db = new Database(path);
    db.pragma('ignore_check_constraints = ON');
    db.exec(sql);
    db.close();
  };
  const codes = (h: { findings: readonly { code: string; subject: string }[] }) =>
    h.findings.map((f) => `${f.code} ${f.subject}`).sort();

  it('decodes timers as captured and reports each enabled one as restored disabled; the copy is not written', async () => {
    const { copy, workspace } = await copied();
    const before = sha256Hex(readFileSync(copy));
    const listing = readdirSync(workspace).sort();
    const h = readHistorical(copy);
    expect(h.schema_version).toBe(1);
    expect(h.timers.map((t) => [t.timer_id, t.enabled, t.cadence])).toEqual([
      ['tmr-1', true, 'FREQ=MINUTELY;INTERVAL=5'],
      ['tmr-off', false, 'FREQ=MINUTELY;INTERVAL=5'],
    ]);
    expect(codes(h)).toEqual(['timer_restored_disabled timer:tmr-1']);
    expect(h.findings[0]!.severity).toBe('warning');
    expect(sha256Hex(readFileSync(copy))).toBe(before);
    expect(readdirSync(workspace).sort()).toEqual(listing);
  });

  it('an unparseable cadence or a non-canonical instant is timer_row_invalid', async () => {
    const { copy } = await copied();
    damage(
      copy,
      `UPDATE timers SET cadence = 'FREQ=YEARLY' WHERE timer_id = 'tmr-1'; UPDATE timers SET next_due_at = 'tomorrow' WHERE timer_id = 'tmr-off'`,
    );
    const h = readHistorical(copy);
    expect(codes(h)).toEqual(['timer_row_invalid timer:tmr-1', 'timer_row_invalid timer:tmr-off']);
    expect(h.timers).toEqual([]);
  });

  it('a file that is not SQLite is scheduler_copy_unreadable; a newer schema is scheduler_schema_unsupported', async () => {
    expect(codes(readHistorical(tempDir()))).toEqual(['scheduler_copy_unreadable file:scheduler.db']);
    const { copy } = await copied();
    damage(copy, 'PRAGMA user_version = 3');
    expect(codes(readHistorical(copy))).toEqual(['scheduler_schema_unsupported schema:3']);
  });
});
