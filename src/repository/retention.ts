/**
 * The retention policy of `loopx repo forget`: which backups of a repository a policy keeps, which
 * it forgets, and why. Pure and deterministic — no I/O, no clock, no randomness: the same backups,
 * policy and pins give the same plan whatever their input order, so a dry run shows exactly what
 * the real run will remove. This module decides; it never deletes (the repository does, from a plan).
 *
 * Semantics follow restic's `forget` policy (internal/restic/snapshot_policy.go, read, not copied):
 *
 *   - Backups are grouped by `root_id`; each group is planned on its own.
 *   - Within a group, backups are ordered newest first by `created_at`; equal instants are ordered
 *     by `backup_id`, the greater id counting as the newer (time-ordered ids then agree with time).
 *   - `keepLast` N keeps the N newest. `keepHourly`/`keepDaily`/`keepWeekly`/`keepMonthly` N keep
 *     the newest backup of each of the N most recent distinct hours / days / ISO 8601 weeks /
 *     months *that have a backup*: a day without a backup uses no slot. A count of 0 is "off".
 *   - Buckets are computed in UTC, always (restic uses each snapshot's own zone): a backup at
 *     23:59:59Z and one at 00:00:00Z the next day fall on different days whatever the machine's
 *     zone, and a `+02:00` timestamp is converted to UTC first. Weeks are ISO weeks (Monday
 *     first; the week of a year's first Thursday is week 1), so 2026-12-31 and 2027-01-01 are
 *     both 2026-W53.
 *   - A backup kept for several reasons lists every one, in the order of `KEEP_REASONS`.
 *   - Beyond the policy, three things always keep a backup: it is the newest *verified* backup of
 *     its root (`newest_verified` — an unverified newer backup does not take its place, so the
 *     newest restorable backup survives any policy); a pin names it (`pinned`, with the pin ids:
 *     a recovery is planned from it); its `created_at` is not a strict ISO 8601 timestamp with a
 *     zone (`unparsable_time` — never deleted on a guess; it takes no policy slot, and is listed
 *     after the timed backups of its root, by id).
 *   - Everything else is forgotten.
 *
 * Refused, before anything is planned: a policy that keeps nothing (no count above 0 — forgetting
 * every backup by accident must be impossible), a count that is negative, fractional or not a
 * number, an option this module does not know (silently ignoring `keepYearly` would forget what
 * the operator meant to keep), and a listing that names one backup id twice (a plan could then
 * keep and forget the same id).
 *
 * Differences from restic, on purpose: no `--keep-yearly`, `--keep-within*`, `--keep-tag` (not
 * asked for); no "unlimited" (-1) count; and not restic's ≥0.16 rule that a bucket option with
 * slots left also keeps the group's oldest snapshot (restic PR #4366) — here a count means exactly
 * "the newest of each of the N most recent buckets", which is what the dry run explains.
 *
 * Why hand-written: the policy is a few dozen lines over our own records, and its edge cases (UTC,
 * ties, verified and pinned backups, unparsable times) are ours to decide and test. No maintained
 * npm package implements restic's rule. The closest, `grandfatherson` (a grandfather-father-son
 * calculator on moment and lodash), counts windows back from a "now" with a configurable first
 * weekday — not "the N most recent buckets that have a backup" — and the registry here answers 404
 * for it; restic and rustic themselves are Go and Rust.
 */
import { internal, usageError, type LoopxError } from '../core/index.js';

/** How many backups of each kind a forget keeps; an absent or 0 count is off. */
export interface RetentionPolicy {
  keepLast?: number;
  keepHourly?: number;
  keepDaily?: number;
  keepWeekly?: number;
  keepMonthly?: number;
}

/** What the planner needs to know of one backup in the repository. */
export interface RetainedBackup {
  backup_id: string;
  root_id: string;
  /** ISO 8601 with a zone (`Z` or `±hh:mm`), e.g. `2026-05-01T12:00:00.000Z`. */
  created_at: string;
  /** The backup was verified after it was written (only a verified backup is known restorable). */
  verified: boolean;
}

/** A pin on a backup: written when a recovery is planned from it, removed when that completes or is abandoned. */
export interface RepositoryPin {
  backup_id: string;
  pin_id: string;
  /** e.g. 'recovery planned' */
  reason: string;
}

/** Every reason a backup can be kept for, in the order a plan lists them. */
export const KEEP_REASONS = [
  'last',
  'hourly',
  'daily',
  'weekly',
  'monthly',
  'newest_verified',
  'pinned',
  'unparsable_time',
] as const;

export type KeepReason = (typeof KEEP_REASONS)[number];

export interface KeptBackup {
  backup_id: string;
  root_id: string;
  created_at: string;
  /** Every reason it is kept for, in `KEEP_REASONS` order; never empty. */
  reasons: KeepReason[];
  /** The ids of the pins on it (sorted), present only when it is pinned. */
  pins?: string[];
}

export interface ForgottenBackup {
  backup_id: string;
  root_id: string;
  created_at: string;
}

/**
 * What a forget would do. Both lists are ordered by `root_id`, then newest first within a root
 * (backups with an unparsable time last, by id). `policy` is the policy as checked, only its set options.
 */
export interface ForgetPlan {
  keep: KeptBackup[];
  forget: ForgottenBackup[];
  policy: RetentionPolicy;
}

/** The stable refusal codes of the retention policy; each is built by exactly one function below. */
export const RETENTION_CODES = {
  /** The policy keeps nothing: no keep option above 0. A usage error (exit 2); nothing is planned. */
  policyEmpty: 'repo_forget_policy_empty',
  /** A keep count is negative, fractional or not a number, or the option is unknown. A usage error (exit 2). */
  policyInvalid: 'repo_forget_policy_invalid',
  /**
   * The listing given to the planner names one backup id twice (the caller's bug: a repository
   * lists each backup once). Internal (exit 1): planning on would risk forgetting a kept id.
   */
  backupDuplicate: 'repo_forget_backup_duplicate',
} as const;

type PolicyKey = keyof RetentionPolicy;
type BucketReason = Exclude<KeepReason, 'newest_verified' | 'pinned' | 'unparsable_time'>;

/** A `created_at` as a sortable instant: whole UTC milliseconds and the nanoseconds below them. */
export interface Instant {
  readonly ms: number;
  readonly subMs: number;
}

/** The options, in the order reasons are listed; `bucket` names the slot a backup falls in. */
const OPTIONS: ReadonlyArray<{
  key: PolicyKey;
  flag: string;
  reason: BucketReason;
  bucket: (at: Instant, rank: number) => string;
}> = [
  { key: 'keepLast', flag: '--keep-last', reason: 'last', bucket: (_at, rank) => `#${rank}` },
  { key: 'keepHourly', flag: '--keep-hourly', reason: 'hourly', bucket: (at) => utcIso(at).slice(0, 13) },
  { key: 'keepDaily', flag: '--keep-daily', reason: 'daily', bucket: (at) => utcIso(at).slice(0, 10) },
  { key: 'keepWeekly', flag: '--keep-weekly', reason: 'weekly', bucket: (at) => isoWeek(at) },
  { key: 'keepMonthly', flag: '--keep-monthly', reason: 'monthly', bucket: (at) => utcIso(at).slice(0, 7) },
];

/** The dry run to try instead (the CLI carries the invocation's --repo into it, as it carries --root). */
const DRY_RUN = 'see what a policy would keep: loopx repo forget --keep-last 7 --dry-run';

function policyEmpty(): LoopxError {
  return usageError(
    RETENTION_CODES.policyEmpty,
    'The policy keeps nothing: give at least one --keep-* option above 0.',
    DRY_RUN,
  );
}

function policyInvalid(flag: string, value: unknown): LoopxError {
  const known = OPTIONS.some((o) => o.flag === flag);
  return usageError(
    RETENTION_CODES.policyInvalid,
    known
      ? `${flag} must be a whole number of 0 or more, not ${typeof value === 'string' ? JSON.stringify(value) : String(value)}.`
      : `${flag} is not a keep option; use ${OPTIONS.map((o) => o.flag).join(', ')}.`,
    DRY_RUN,
  );
}

function backupDuplicate(backupId: string): LoopxError {
  return internal(RETENTION_CODES.backupDuplicate, `Backup ${backupId} is listed twice; nothing is planned.`, {
    details: { backup_id: backupId },
  });
}

/**
 * Refuse a policy that keeps nothing or has a bad count (`RETENTION_CODES`).
 */
export function checkPolicy(policy: RetentionPolicy): void {
  for (const [key, value] of Object.entries(policy)) {
    if (value === undefined) continue;
    const option = OPTIONS.find((o) => o.key === key);
    if (!option) throw policyInvalid(key, value);
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw policyInvalid(option.flag, value);
  }
  if (!OPTIONS.some((o) => (policy[o.key] ?? 0) > 0)) throw policyEmpty();
}

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

/**
 * A strict ISO 8601 timestamp with a zone, as an instant; undefined for anything else. No
 * `Date.parse`: it reads a zoneless time in the machine's zone and accepts forms we never write.
 */
export function parseInstant(text: string): Instant | undefined {
  const m = ISO_8601.exec(text);
  if (!m) return undefined;
  const field = (i: number): number => Number(m[i] ?? 0);
  const [year, month, day] = [field(1), field(2), field(3)];
  const [hour, minute, second] = [field(4), field(5), field(6)];
  const fraction = (m[7] ?? '').padEnd(9, '0');
  if (hour > 23 || minute > 59 || second > 59 || field(10) > 23 || field(11) > 59) return undefined;
  const offsetMinutes = (m[9] === '-' ? -1 : 1) * (field(10) * 60 + field(11));
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) return undefined;
  d.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3)));
  return { ms: d.getTime() - offsetMinutes * 60_000, subMs: Number(fraction.slice(3)) };
}

/** The instant as `YYYY-MM-DDTHH:mm:ss.sssZ` in UTC: its prefixes are the hour, day and month buckets. */
const utcIso = (at: Instant): string => new Date(at.ms).toISOString();

/** The ISO 8601 week of the instant's UTC date, `YYYY-Www` (the week-numbering year may differ from the calendar year). */
export function isoWeek(at: Instant): string {
  const d = new Date(at.ms);
  const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const mondayBased = (d.getUTCDay() + 6) % 7;
  // The week belongs to the year of its Thursday; week 1 holds that year's first Thursday.
  const thursday = new Date(midnight + (3 - mondayBased) * 86_400_000);
  const year = thursday.getUTCFullYear();
  const week = 1 + Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * 86_400_000));
  return `${String(year).padStart(4, '0')}-W${String(week).padStart(2, '0')}`;
}

interface Timed {
  readonly backup: RetainedBackup;
  readonly at: Instant;
}

/** Newest first; equal instants by backup_id, the greater id first. */
const newestFirst = (a: Timed, b: Timed): number =>
  b.at.ms - a.at.ms || b.at.subMs - a.at.subMs || compareText(b.backup.backup_id, a.backup.backup_id);

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The bucket reasons of each backup of one root's timed backups, which are sorted newest first. */
function bucketReasons(timed: readonly Timed[], policy: RetentionPolicy): Map<string, BucketReason[]> {
  const reasons = new Map<string, BucketReason[]>();
  for (const option of OPTIONS) {
    let left = policy[option.key] ?? 0;
    let previous: string | undefined;
    for (const [rank, { backup, at }] of timed.entries()) {
      if (left === 0) break;
      const bucket = option.bucket(at, rank);
      // Sorted newest first, a bucket's backups are adjacent: the first one met is its newest.
      if (bucket === previous) continue;
      previous = bucket;
      left -= 1;
      reasons.set(backup.backup_id, [...(reasons.get(backup.backup_id) ?? []), option.reason]);
    }
  }
  return reasons;
}

/** The plan of one root's backups: kept and forgotten, each newest first, unparsable times last by id. */
function planRoot(
  backups: readonly RetainedBackup[],
  policy: RetentionPolicy,
  pinsOf: ReadonlyMap<string, string[]>,
): { keep: KeptBackup[]; forget: ForgottenBackup[] } {
  const timed: Timed[] = [];
  const untimed: RetainedBackup[] = [];
  for (const backup of backups) {
    const at = parseInstant(backup.created_at);
    if (at) timed.push({ backup, at });
    else untimed.push(backup);
  }
  timed.sort(newestFirst);
  untimed.sort((a, b) => compareText(a.backup_id, b.backup_id));
  const byBucket = bucketReasons(timed, policy);
  const newestVerified = timed.find((t) => t.backup.verified)?.backup.backup_id;

  const keep: KeptBackup[] = [];
  const forget: ForgottenBackup[] = [];
  const ordered = [
    ...timed.map((t) => ({ backup: t.backup, unparsable: false })),
    ...untimed.map((backup) => ({ backup, unparsable: true })),
  ];
  for (const { backup, unparsable } of ordered) {
    const { backup_id, root_id, created_at } = backup;
    const pins = pinsOf.get(backup_id);
    const reasons: KeepReason[] = [...(byBucket.get(backup_id) ?? [])];
    if (backup_id === newestVerified) reasons.push('newest_verified');
    if (pins) reasons.push('pinned');
    if (unparsable) reasons.push('unparsable_time');
    if (reasons.length === 0) forget.push({ backup_id, root_id, created_at });
    else keep.push({ backup_id, root_id, created_at, reasons, ...(pins ? { pins } : {}) });
  }
  return { keep, forget };
}

/** The policy with only its set options, in option order (what the plan echoes). */
const setOptions = (policy: RetentionPolicy): RetentionPolicy =>
  Object.fromEntries(OPTIONS.filter((o) => policy[o.key] !== undefined).map((o) => [o.key, policy[o.key]]));

/**
 * Plan a forget over every root's backups. Refuses (throws) a policy `checkPolicy` refuses, and a
 * listing with a repeated backup id. Pins naming a backup not in `backups` change nothing.
 */
export function planForget(
  backups: readonly RetainedBackup[],
  policy: RetentionPolicy,
  pins: readonly RepositoryPin[],
): ForgetPlan {
  checkPolicy(policy);
  const roots = new Map<string, RetainedBackup[]>();
  const seen = new Set<string>();
  for (const backup of backups) {
    if (seen.has(backup.backup_id)) throw backupDuplicate(backup.backup_id);
    seen.add(backup.backup_id);
    const group = roots.get(backup.root_id);
    if (group) group.push(backup);
    else roots.set(backup.root_id, [backup]);
  }
  const pinSets = new Map<string, Set<string>>();
  for (const pin of pins) pinSets.set(pin.backup_id, (pinSets.get(pin.backup_id) ?? new Set()).add(pin.pin_id));
  const pinsOf = new Map([...pinSets].map(([id, set]) => [id, [...set].sort(compareText)]));

  const plan: ForgetPlan = { keep: [], forget: [], policy: setOptions(policy) };
  for (const rootId of [...roots.keys()].sort(compareText)) {
    const { keep, forget } = planRoot(roots.get(rootId) ?? [], policy, pinsOf);
    plan.keep.push(...keep);
    plan.forget.push(...forget);
  }
  return plan;
}
