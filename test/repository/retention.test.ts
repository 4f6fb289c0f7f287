/**
 * The retention policy of `loopx repo forget` (src/repository/retention.ts): restic's keep rules
 * per root, bucketed in UTC, plus the three things that always keep a backup (the newest verified
 * one of its root, a pin, an unparsable time), and the refusals of a policy that keeps nothing or
 * has a bad count. Every test states the rule it checks and asserts the plan itself; the property
 * test compares the planner with an independent formulation of the rules (bucket first, then
 * rank), seeded so that a failure reproduces.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { EXIT_CODES, exitCodeOf, isLoopxError, type LoopxError } from '../../src/core/index.js';
import {
  KEEP_REASONS,
  RETENTION_CODES,
  checkPolicy,
  isoWeek,
  parseInstant,
  planForget,
  type ForgetPlan,
  type KeepReason,
  type RepositoryPin,
  type RetainedBackup,
  type RetentionPolicy,
} from '../../src/repository/retention.js';

const backup = (backup_id: string, created_at: string, more: Partial<RetainedBackup> = {}): RetainedBackup => ({
  backup_id,
  root_id: 'root-a',
  created_at,
  verified: false,
  ...more,
});

/** backup_id → reasons of every kept backup. */
const reasonsOf = (plan: ForgetPlan): Record<string, KeepReason[]> =>
  Object.fromEntries(plan.keep.map((k) => [k.backup_id, k.reasons]));
const forgotten = (plan: ForgetPlan): string[] => plan.forget.map((f) => f.backup_id);

/** The refusal a call throws (a LoopxError), or a failure when it returns. */
function refusal(call: () => unknown): LoopxError {
  try {
    call();
  } catch (e) {
    if (isLoopxError(e)) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

/** mulberry32: a small seeded PRNG, so a shuffle that fails reproduces. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const byReason = (a: KeepReason, b: KeepReason) => KEEP_REASONS.indexOf(a) - KEEP_REASONS.indexOf(b);

describe('keep-last', () => {
  test('keep-last N keeps the N newest backups and forgets the rest', () => {
    const backups = [1, 2, 3, 4, 5].map((d) => backup(`b${d}`, `2026-03-0${d}T12:00:00Z`));
    const plan = planForget(backups, { keepLast: 3 }, []);
    expect(reasonsOf(plan)).toEqual({ b5: ['last'], b4: ['last'], b3: ['last'] });
    expect(forgotten(plan)).toEqual(['b2', 'b1']);
  });

  test('backups with the same created_at are ordered by backup id, the greater id counting as newer', () => {
    const at = '2026-03-01T12:00:00Z';
    const plan = planForget([backup('b-a', at), backup('b-c', at), backup('b-b', at)], { keepLast: 1 }, []);
    expect(reasonsOf(plan)).toEqual({ 'b-c': ['last'] });
    expect(forgotten(plan)).toEqual(['b-b', 'b-a']);
  });

  test('instants are compared below the millisecond, and across zones', () => {
    const plan = planForget(
      [
        backup('z-earlier', '2026-03-01T12:00:00.0001Z'),
        backup('a-later', '2026-03-01T12:00:00.0002Z'), // the same millisecond, and the smaller id
        backup('b3', '2026-03-01T13:00:00.0001+02:00'), // 11:00Z: the oldest
      ],
      { keepLast: 1 },
      [],
    );
    expect(reasonsOf(plan)).toEqual({ 'a-later': ['last'] });
    expect(forgotten(plan)).toEqual(['z-earlier', 'b3']);
  });
});

describe('time buckets, in UTC', () => {
  test('23:59:59Z and 00:00:00Z the next day are different days', () => {
    const backups = [backup('late', '2026-03-01T23:59:59Z'), backup('midnight', '2026-03-02T00:00:00Z')];
    expect(reasonsOf(planForget(backups, { keepDaily: 2 }, []))).toEqual({ midnight: ['daily'], late: ['daily'] });
    const one = planForget(backups, { keepDaily: 1 }, []);
    expect(reasonsOf(one)).toEqual({ midnight: ['daily'] });
    expect(forgotten(one)).toEqual(['late']);
  });

  test('a timestamp with an offset is bucketed by its UTC day, not its local one', () => {
    // 01:00+02:00 on 2 March is 23:00Z on 1 March: the same UTC day as the morning backup.
    const backups = [backup('morning', '2026-03-01T10:00:00Z'), backup('offset', '2026-03-02T01:00:00+02:00')];
    const plan = planForget(backups, { keepDaily: 2 }, []);
    expect(reasonsOf(plan)).toEqual({ offset: ['daily'] });
    expect(forgotten(plan)).toEqual(['morning']);
  });

  test("buckets do not depend on the machine's zone", () => {
    const zone = process.env['TZ'];
    const backups = [
      backup('sun-late', '2027-01-03T23:59:59Z'),
      backup('mon', '2027-01-04T00:00:00Z'),
      backup('month-end', '2026-12-31T23:30:00Z'),
    ];
    const expected = {
      daily: { mon: ['daily'], 'sun-late': ['daily'], 'month-end': ['daily'] },
      weekly: { mon: ['weekly'], 'sun-late': ['weekly'] },
      monthly: { mon: ['monthly'], 'month-end': ['monthly'] },
    };
    try {
      for (const tz of ['UTC', 'Pacific/Kiritimati', 'America/Adak']) {
        process.env['TZ'] = tz; // Node re-reads TZ when it is set
        expect(reasonsOf(planForget(backups, { keepDaily: 5 }, [])), tz).toEqual(expected.daily);
        expect(reasonsOf(planForget(backups, { keepWeekly: 5 }, [])), tz).toEqual(expected.weekly);
        expect(reasonsOf(planForget(backups, { keepMonthly: 5 }, [])), tz).toEqual(expected.monthly);
      }
    } finally {
      if (zone === undefined) delete process.env['TZ'];
      else process.env['TZ'] = zone;
    }
  });

  test('keep-daily keeps the newest backup of each day', () => {
    const backups = [
      backup('d1-early', '2026-03-01T08:00:00Z'),
      backup('d1-late', '2026-03-01T20:00:00Z'),
      backup('d2-early', '2026-03-02T08:00:00Z'),
      backup('d2-late', '2026-03-02T20:00:00Z'),
    ];
    const plan = planForget(backups, { keepDaily: 5 }, []);
    expect(reasonsOf(plan)).toEqual({ 'd2-late': ['daily'], 'd1-late': ['daily'] });
    expect(forgotten(plan)).toEqual(['d2-early', 'd1-early']);
  });

  test('hours end at :59:59.999Z, and one hour keeps only its newest backup', () => {
    const backups = [
      backup('h10-start', '2026-03-01T10:00:00Z'),
      backup('h10-end', '2026-03-01T10:59:59.999Z'),
      backup('h11', '2026-03-01T11:00:00Z'),
      backup('h09', '2026-03-01T09:30:00Z'),
    ];
    const plan = planForget(backups, { keepHourly: 2 }, []);
    expect(reasonsOf(plan)).toEqual({ h11: ['hourly'], 'h10-end': ['hourly'] });
    expect(forgotten(plan)).toEqual(['h10-start', 'h09']);
  });

  test('ISO weeks cross the year: 2026-12-31 and 2027-01-03 are 2026-W53, 2027-01-04 is 2027-W01', () => {
    const week = (s: string) => isoWeek(parseInstant(s) ?? { ms: NaN, subMs: 0 });
    expect(week('2026-12-28T00:00:00Z')).toBe('2026-W53'); // Monday
    expect(week('2026-12-31T12:00:00Z')).toBe('2026-W53');
    expect(week('2027-01-01T00:00:00Z')).toBe('2026-W53');
    expect(week('2027-01-03T23:59:59Z')).toBe('2026-W53'); // Sunday
    expect(week('2027-01-04T00:00:00Z')).toBe('2027-W01'); // Monday
    expect(week('2024-12-30T00:00:00Z')).toBe('2025-W01'); // a Monday in December in next year's week 1
    expect(week('2021-01-03T00:00:00Z')).toBe('2020-W53');
    expect(week('2026-03-01T23:00:00-02:00')).toBe('2026-W10'); // Monday 2 March in UTC

    const plan = planForget(
      [
        backup('thu', '2026-12-31T12:00:00Z'),
        backup('fri', '2027-01-01T12:00:00Z'),
        backup('mon', '2027-01-04T12:00:00Z'),
        backup('prev', '2026-12-27T12:00:00Z'), // Sunday of 2026-W52
      ],
      { keepWeekly: 2 },
      [],
    );
    expect(reasonsOf(plan)).toEqual({ mon: ['weekly'], fri: ['weekly'] });
    expect(forgotten(plan)).toEqual(['thu', 'prev']);
  });

  test('months end at the last second of their last day', () => {
    const backups = [
      backup('jan-a', '2026-01-15T00:00:00Z'),
      backup('jan-b', '2026-01-31T23:59:59Z'),
      backup('feb-a', '2026-02-01T00:00:00Z'),
      backup('feb-b', '2026-02-20T00:00:00Z'),
      backup('mar', '2026-03-01T00:00:00Z'),
    ];
    const plan = planForget(backups, { keepMonthly: 2 }, []);
    expect(reasonsOf(plan)).toEqual({ mar: ['monthly'], 'feb-b': ['monthly'] });
    expect(forgotten(plan)).toEqual(['feb-a', 'jan-b', 'jan-a']);
    expect(reasonsOf(planForget(backups, { keepMonthly: 3 }, []))).toEqual({
      mar: ['monthly'],
      'feb-b': ['monthly'],
      'jan-b': ['monthly'],
    });
  });

  test('a day without a backup uses no slot: keep-daily N reaches back to the Nth day that has one', () => {
    const backups = [
      backup('mar-01', '2026-03-01T12:00:00Z'),
      backup('mar-05', '2026-03-05T12:00:00Z'),
      backup('mar-20-a', '2026-03-20T06:00:00Z'),
      backup('mar-20-b', '2026-03-20T18:00:00Z'),
    ];
    const three = planForget(backups, { keepDaily: 3 }, []);
    expect(reasonsOf(three)).toEqual({ 'mar-20-b': ['daily'], 'mar-05': ['daily'], 'mar-01': ['daily'] });
    expect(forgotten(three)).toEqual(['mar-20-a']);
    expect(forgotten(planForget(backups, { keepDaily: 2 }, []))).toEqual(['mar-20-a', 'mar-01']);
  });
});

describe('reasons', () => {
  test('a backup kept for several reasons lists them all, in a fixed order', () => {
    const backups = [
      backup('old', '2026-01-10T12:00:00Z'),
      backup('mid', '2026-03-01T09:00:00Z'),
      backup('new', '2026-03-01T10:00:00Z', { verified: true }),
    ];
    const pins: RepositoryPin[] = [{ backup_id: 'new', pin_id: 'pin-1', reason: 'recovery planned' }];
    const policy = { keepLast: 1, keepHourly: 1, keepDaily: 1, keepWeekly: 1, keepMonthly: 2 };
    const plan = planForget(backups, policy, pins);
    expect(reasonsOf(plan)).toEqual({
      new: ['last', 'hourly', 'daily', 'weekly', 'monthly', 'newest_verified', 'pinned'],
      old: ['monthly'],
    });
    expect(forgotten(plan)).toEqual(['mid']);
    for (const kept of plan.keep) expect([...kept.reasons].sort(byReason)).toEqual(kept.reasons);
  });

  test('the plan echoes the policy as checked, only its set options', () => {
    const plan = planForget([backup('b1', '2026-03-01T00:00:00Z')], { keepDaily: 7, keepLast: 0 }, []);
    expect(plan.policy).toEqual({ keepLast: 0, keepDaily: 7 });
  });
});

describe('roots', () => {
  test('each root is planned on its own: an older root keeps its newest backups too', () => {
    const backups = [
      backup('a1', '2026-03-10T00:00:00Z', { root_id: 'root-a' }),
      backup('a2', '2026-03-11T00:00:00Z', { root_id: 'root-a' }),
      backup('b1', '2025-01-01T00:00:00Z', { root_id: 'root-b' }),
      backup('b2', '2025-01-02T00:00:00Z', { root_id: 'root-b' }),
    ];
    const plan = planForget(backups, { keepLast: 1 }, []);
    expect(plan.keep.map((k) => [k.root_id, k.backup_id])).toEqual([
      ['root-a', 'a2'],
      ['root-b', 'b2'],
    ]);
    expect(plan.forget.map((f) => [f.root_id, f.backup_id])).toEqual([
      ['root-a', 'a1'],
      ['root-b', 'b1'],
    ]);
  });

  test('buckets do not cross roots: the same day in two roots is a slot in each', () => {
    const backups = [
      backup('a', '2026-03-01T10:00:00Z', { root_id: 'root-a' }),
      backup('b', '2026-03-01T11:00:00Z', { root_id: 'root-b' }),
    ];
    expect(reasonsOf(planForget(backups, { keepDaily: 1 }, []))).toEqual({ a: ['daily'], b: ['daily'] });
  });
});

describe('what always keeps a backup', () => {
  test('the newest verified backup of a root survives a policy that would drop it; a newer unverified one does not replace it', () => {
    const backups = [
      backup('v-old', '2026-03-01T00:00:00Z', { verified: true }),
      backup('v-new', '2026-03-02T00:00:00Z', { verified: true }),
      backup('unverified', '2026-03-03T00:00:00Z'),
    ];
    const plan = planForget(backups, { keepLast: 1 }, []);
    expect(reasonsOf(plan)).toEqual({ unverified: ['last'], 'v-new': ['newest_verified'] });
    expect(forgotten(plan)).toEqual(['v-old']);
  });

  test('a root with no verified backup has no newest_verified reason', () => {
    const backups = [backup('b1', '2026-03-01T00:00:00Z'), backup('b2', '2026-03-02T00:00:00Z')];
    const plan = planForget(backups, { keepLast: 1 }, []);
    expect(reasonsOf(plan)).toEqual({ b2: ['last'] });
    expect(forgotten(plan)).toEqual(['b1']);
  });

  test('each root keeps its own newest verified backup', () => {
    const backups = [
      backup('a-v', '2026-03-01T00:00:00Z', { root_id: 'root-a', verified: true }),
      backup('a-new', '2026-03-05T00:00:00Z', { root_id: 'root-a' }),
      backup('b-v', '2026-02-01T00:00:00Z', { root_id: 'root-b', verified: true }),
      backup('b-new', '2026-02-05T00:00:00Z', { root_id: 'root-b' }),
    ];
    const plan = planForget(backups, { keepLast: 1 }, []);
    expect(reasonsOf(plan)).toEqual({
      'a-new': ['last'],
      'a-v': ['newest_verified'],
      'b-new': ['last'],
      'b-v': ['newest_verified'],
    });
    expect(plan.forget).toEqual([]);
  });

  test('pins keep their backups and are listed by pin id; a pin on an unknown backup changes nothing', () => {
    const backups = [
      backup('b1', '2026-03-01T00:00:00Z'),
      backup('b2', '2026-03-02T00:00:00Z'),
      backup('b3', '2026-03-03T00:00:00Z'),
    ];
    const pins: RepositoryPin[] = [
      { backup_id: 'b1', pin_id: 'pin-z', reason: 'recovery planned' },
      { backup_id: 'b1', pin_id: 'pin-a', reason: 'recovery planned' },
      { backup_id: 'b1', pin_id: 'pin-a', reason: 'recovery planned' },
      { backup_id: 'b3', pin_id: 'pin-m', reason: 'recovery planned' },
      { backup_id: 'gone', pin_id: 'pin-x', reason: 'recovery planned' },
    ];
    const plan = planForget(backups, { keepLast: 1 }, pins);
    expect(plan.keep).toEqual([
      {
        backup_id: 'b3',
        root_id: 'root-a',
        created_at: '2026-03-03T00:00:00Z',
        reasons: ['last', 'pinned'],
        pins: ['pin-m'],
      },
      {
        backup_id: 'b1',
        root_id: 'root-a',
        created_at: '2026-03-01T00:00:00Z',
        reasons: ['pinned'],
        pins: ['pin-a', 'pin-z'],
      },
    ]);
    expect(forgotten(plan)).toEqual(['b2']);
    // Once the recovery completes and its pin is removed, the backup is forgotten like any other.
    expect(forgotten(planForget(backups, { keepLast: 1 }, []))).toEqual(['b2', 'b1']);
  });

  test('a backup whose created_at cannot be parsed is kept, takes no slot, and is listed after the timed ones by id', () => {
    const bad = [
      'yesterday',
      '2026-03-01T10:00:00', // no zone: would be read in the machine's zone
      '2026-02-30T00:00:00Z', // no such day
      '2026-03-01T24:00:00Z',
      '2026-03-01 10:00:00Z',
      '2026-03-01T10:00:00+25:00',
      '',
    ];
    for (const text of bad) expect(parseInstant(text), text).toBeUndefined();
    const backups = [
      backup('t-old', '2026-03-01T00:00:00Z'),
      backup('t-new', '2026-03-02T00:00:00Z'),
      ...bad.map((text, i) => backup(`u${bad.length - i}`, text, { verified: true })),
    ];
    const plan = planForget(backups, { keepLast: 1 }, []);
    expect(plan.keep.map((k) => [k.backup_id, k.reasons])).toEqual([
      ['t-new', ['last']],
      ...bad.map((_, i) => [`u${i + 1}`, ['unparsable_time']]),
    ]);
    expect(forgotten(plan)).toEqual(['t-old']);
  });

  test('a listing that names one backup twice is refused, so no plan can keep and forget the same id', () => {
    const e = refusal(() =>
      planForget(
        [backup('b1', '2026-03-01T00:00:00Z'), backup('b1', '2026-03-02T00:00:00Z', { root_id: 'root-b' })],
        { keepLast: 1 },
        [],
      ),
    );
    expect(e.code).toBe(RETENTION_CODES.backupDuplicate);
    expect(e.details).toEqual({ backup_id: 'b1' });
  });
});

describe('policy refusals', () => {
  test('a policy with no keep option above 0 is refused as a usage error with a runnable dry run', () => {
    for (const policy of [{}, { keepLast: 0 }, { keepLast: 0, keepDaily: 0, keepMonthly: undefined }]) {
      const e = refusal(() => checkPolicy(policy));
      expect(e.code).toBe(RETENTION_CODES.policyEmpty);
      expect(exitCodeOf(e)).toBe(EXIT_CODES.usage);
      expect(e.nextAction).toBe('see what a policy would keep: loopx repo forget --keep-last 7 --dry-run');
      expect(refusal(() => planForget([backup('b1', '2026-03-01T00:00:00Z')], policy, [])).code).toBe(
        RETENTION_CODES.policyEmpty,
      );
    }
  });

  test('a negative, fractional, non-finite or non-number count is refused, naming its option', () => {
    const cases: Array<[RetentionPolicy, string]> = [
      [{ keepDaily: -1 }, '--keep-daily'],
      [{ keepLast: 1.5 }, '--keep-last'],
      [{ keepHourly: Number.NaN }, '--keep-hourly'],
      [{ keepWeekly: Number.POSITIVE_INFINITY }, '--keep-weekly'],
      [{ keepMonthly: '3' as unknown as number }, '--keep-monthly'],
      [{ keepLast: 3, keepDaily: -2 }, '--keep-daily'],
    ];
    for (const [policy, flag] of cases) {
      const e = refusal(() => checkPolicy(policy));
      expect(e.code, flag).toBe(RETENTION_CODES.policyInvalid);
      expect(exitCodeOf(e)).toBe(EXIT_CODES.usage);
      expect(e.message).toContain(flag);
      expect(e.message).not.toContain('\n');
      expect(e.nextAction).toBe('see what a policy would keep: loopx repo forget --keep-last 7 --dry-run');
    }
  });

  test('an option this policy does not know is refused, not ignored', () => {
    const e = refusal(() => checkPolicy({ keepLast: 1, keepYearly: 3 } as RetentionPolicy));
    expect(e.code).toBe(RETENTION_CODES.policyInvalid);
    expect(e.message).toContain('keepYearly');
  });

  test('valid policies pass, including a 0 beside a positive count', () => {
    expect(() => checkPolicy({ keepLast: 0, keepDaily: 7 })).not.toThrow();
    expect(() => checkPolicy({ keepMonthly: Number.MAX_SAFE_INTEGER })).not.toThrow();
  });

  test('each code is a distinct repo_forget_ code', () => {
    const codes = Object.values(RETENTION_CODES);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^repo_forget_[a-z_]+$/);
  });
});

/** A day's worth of ms, and the span the generated backups fall in (across a year boundary and a 53-week year). */
const DAY = 86_400_000;
const START = Date.UTC(2026, 10, 1);
const SPAN = 150 * DAY;

const arbBackups = fc
  .array(
    fc.record({
      root: fc.constantFrom('root-a', 'root-b', 'root-c'),
      // Coarse steps of 20 minutes, so that hours, days and exact ties repeat often.
      step: fc.integer({ min: 0, max: SPAN / (20 * 60_000) }),
      verified: fc.boolean(),
      // About one backup in twenty has a time that does not parse.
      unparsable: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
    }),
    { maxLength: 60 },
  )
  .map((rows) =>
    rows.map((r, i): RetainedBackup => ({
      backup_id: `b${String(i).padStart(3, '0')}`,
      root_id: r.root,
      created_at: r.unparsable ? 'not a time' : new Date(START + r.step * 20 * 60_000).toISOString(),
      verified: r.verified,
    })),
  );

const arbPolicy = fc
  .record(
    {
      keepLast: fc.integer({ min: 0, max: 6 }),
      keepHourly: fc.integer({ min: 0, max: 6 }),
      keepDaily: fc.integer({ min: 0, max: 10 }),
      keepWeekly: fc.integer({ min: 0, max: 6 }),
      keepMonthly: fc.integer({ min: 0, max: 4 }),
    },
    { requiredKeys: [] },
  )
  .filter((p) => Object.values(p).some((n) => n > 0));

/** ISO week by ordinal day, independently of the planner's Thursday arithmetic. */
function oracleWeek(d: Date): string {
  const y = d.getUTCFullYear();
  const ordinal = (Date.UTC(y, d.getUTCMonth(), d.getUTCDate()) - Date.UTC(y, 0, 1)) / DAY + 1;
  const weekday = d.getUTCDay() || 7;
  const weeksIn = (year: number) => {
    const p = (x: number) => (x + Math.floor(x / 4) - Math.floor(x / 100) + Math.floor(x / 400)) % 7;
    return p(year) === 4 || p(year - 1) === 3 ? 53 : 52;
  };
  let week = Math.floor((ordinal - weekday + 10) / 7);
  let year = y;
  if (week < 1) week = weeksIn((year -= 1));
  else if (week > weeksIn(y)) [week, year] = [1, y + 1];
  return `${year}-W${String(week).padStart(2, '0')}`;
}

/** The rules stated another way: bucket every backup, take each bucket's newest, keep the N newest buckets. */
function oracle(backups: readonly RetainedBackup[], policy: RetentionPolicy): Record<string, KeepReason[]> {
  const out: Record<string, KeepReason[]> = {};
  const add = (id: string, r: KeepReason) => (out[id] ??= []).push(r);
  const later = (a: RetainedBackup, b: RetainedBackup) =>
    Date.parse(a.created_at) - Date.parse(b.created_at) || (a.backup_id < b.backup_id ? -1 : 1);
  const keys: Array<[keyof RetentionPolicy, KeepReason, (b: RetainedBackup) => string]> = [
    ['keepLast', 'last', (b) => b.backup_id],
    ['keepHourly', 'hourly', (b) => b.created_at.slice(0, 13)],
    ['keepDaily', 'daily', (b) => b.created_at.slice(0, 10)],
    ['keepWeekly', 'weekly', (b) => oracleWeek(new Date(b.created_at))],
    ['keepMonthly', 'monthly', (b) => b.created_at.slice(0, 7)],
  ];
  for (const root of new Set(backups.map((b) => b.root_id))) {
    const timed = backups.filter((b) => b.root_id === root && b.created_at !== 'not a time');
    for (const [key, reason, bucketOf] of keys) {
      const newest = new Map<string, RetainedBackup>();
      for (const b of timed) {
        const cur = newest.get(bucketOf(b));
        if (!cur || later(b, cur) > 0) newest.set(bucketOf(b), b);
      }
      const ranked = [...newest.values()].sort((a, b) => later(b, a));
      for (const b of ranked.slice(0, policy[key] ?? 0)) add(b.backup_id, reason);
    }
    const verified = timed.filter((b) => b.verified).sort((a, b) => later(b, a))[0];
    if (verified) add(verified.backup_id, 'newest_verified');
  }
  for (const b of backups) if (b.created_at === 'not a time') add(b.backup_id, 'unparsable_time');
  return out;
}

describe('determinism', () => {
  test('the order of the input does not change the plan (seeded shuffles)', () => {
    const backups: RetainedBackup[] = [];
    const random = prng(20260501);
    for (let i = 0; i < 120; i++) {
      const at = new Date(START + Math.floor((random() * SPAN) / 3_600_000) * 3_600_000).toISOString();
      backups.push({
        backup_id: `b${i}`,
        root_id: `root-${i % 3}`,
        created_at: i % 29 === 0 ? 'garbled' : at,
        verified: random() < 0.3,
      });
    }
    const pins: RepositoryPin[] = [5, 17, 17, 40].map((n, i) => ({
      backup_id: `b${n}`,
      pin_id: `p${i}`,
      reason: 'recovery planned',
    }));
    const policy = { keepLast: 2, keepDaily: 5, keepWeekly: 3, keepMonthly: 2 };
    const expected = planForget(backups, policy, pins);
    for (let round = 0; round < 25; round++) {
      expect(planForget(shuffled(backups, random), policy, shuffled(pins, random))).toEqual(expected);
    }
  });

  test('both lists are ordered by root, then newest first', () => {
    const backups = [
      backup('a1', '2026-03-01T00:00:00Z', { root_id: 'root-b' }),
      backup('a2', '2026-03-03T00:00:00Z', { root_id: 'root-b' }),
      backup('a3', '2026-03-02T00:00:00Z', { root_id: 'root-a' }),
      backup('a4', '2026-03-04T00:00:00Z', { root_id: 'root-a' }),
      backup('a5', '2026-03-05T00:00:00Z', { root_id: 'root-a' }),
    ];
    const plan = planForget(backups, { keepDaily: 1 }, []);
    expect(plan.keep.map((k) => k.backup_id)).toEqual(['a5', 'a2']);
    expect(plan.forget.map((f) => f.backup_id)).toEqual(['a4', 'a3', 'a1']);
  });

  test('property: the plan matches the rules stated bucket-first, and keeps or forgets every backup exactly once', () => {
    fc.assert(
      fc.property(arbBackups, arbPolicy, fc.integer(), (backups, policy, seed) => {
        const plan = planForget(shuffled(backups, prng(seed)), policy, []);
        expect(reasonsOf(plan)).toEqual(oracle(backups, policy));
        const ids = [...plan.keep, ...plan.forget].map((b) => b.backup_id).sort();
        expect(ids).toEqual(backups.map((b) => b.backup_id).sort());
      }),
      { seed: 20260501, numRuns: 300 },
    );
  });
});
