/**
 * The quota owner's decisions as pure functions — request validation and digest, replay/conflict,
 * void, and window normalization — the one place they are made, whatever the storage port. The
 * owner (quota.ts) reads the entry, asks these functions and commits what they decided.
 */
import { canonicalJson, sha256Hex } from '../../core/index.js';
import { assertGoalId } from '../layout.js';
import type { QuotaGoal, QuotaWindow, SpendEntry, SpendRequest } from './contract.js';
import { invalidInput, spendConflict } from './errors.js';
import type { SpendQuery } from './port.js';

const ID = /^[A-Za-z0-9][A-Za-z0-9._:#@-]{0,191}$/;
const UNIT = /^[a-z][a-z0-9_]{0,31}$/;
const REASON = /^[a-z][a-z0-9_]{0,63}$/;

export function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !ID.test(value)) {
    throw invalidInput(
      `${field} must be 1–192 characters of letters, digits and . _ : # @ -, starting with a letter or digit.`,
      field,
    );
  }
  return value;
}

function checkGoalId(value: unknown): string {
  try {
    return assertGoalId(value as string);
  } catch {
    throw invalidInput('goal_id is not a valid Goal id.', 'goal_id');
  }
}

export function checkReason(value: unknown): string {
  if (typeof value !== 'string' || !REASON.test(value))
    throw invalidInput('A void reason is a lowercase code of a–z, 0–9 and _.', 'reason');
  return value;
}

/** The digest of the semantic request: identity, Goal lifetime, amount and unit. */
export const spendDigest = (
  r: Pick<SpendEntry, 'effect_id' | 'goal_id' | 'goal_instance_id' | 'amount' | 'unit'>,
): string =>
  sha256Hex(
    canonicalJson({
      effect_id: r.effect_id,
      goal_id: r.goal_id,
      goal_instance_id: r.goal_instance_id,
      amount: r.amount,
      unit: r.unit,
    }),
  );

export function normalizeSpend(
  r: SpendRequest,
): Omit<SpendEntry, 'status' | 'created_at' | 'voided_at' | 'void_reason'> {
  if (typeof r !== 'object' || r === null) throw invalidInput('A spend request is required.', 'request');
  const base = {
    effect_id: checkId(r.effect_id, 'effect_id'),
    goal_id: checkGoalId(r.goal_id),
    goal_instance_id: checkId(r.goal_instance_id, 'goal_instance_id'),
    amount: r.amount,
    unit: r.unit,
  };
  if (typeof r.amount !== 'number' || !Number.isSafeInteger(r.amount) || r.amount < 1)
    throw invalidInput('amount must be a positive integer.', 'amount');
  if (typeof r.unit !== 'string' || !UNIT.test(r.unit))
    throw invalidInput('unit is a lowercase name of a–z, 0–9 and _ (e.g. turn, token).', 'unit');
  return { ...base, request_digest: spendDigest(base) };
}

/** `replay` for an identical repeat (whatever its status), `write` for a new entry; a changed request is a conflict. */
export function decideSpend(
  existing: SpendEntry | undefined,
  n: ReturnType<typeof normalizeSpend>,
  at: string,
): { replay: SpendEntry } | { write: SpendEntry } {
  if (existing !== undefined) {
    if (existing.request_digest !== n.request_digest)
      throw spendConflict(n.effect_id, existing.request_digest, n.request_digest);
    return { replay: existing };
  }
  return { write: { ...n, status: 'written', created_at: at, voided_at: null, void_reason: null } };
}

export function decideVoid(e: SpendEntry, reason: string, at: string): { replay: SpendEntry } | { write: SpendEntry } {
  if (e.status === 'voided') return { replay: e };
  return { write: { ...e, status: 'voided', voided_at: at, void_reason: reason } };
}

function instant(value: unknown, field: string): string {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw invalidInput(`${field} must be an ISO-8601 instant.`, field);
  return new Date(ms).toISOString();
}

export function normalizeTotal(goal: string | QuotaGoal, window: QuotaWindow): SpendQuery {
  const g = typeof goal === 'string' ? { goal_id: goal } : goal;
  if (typeof window !== 'object' || window === null)
    throw invalidInput('A window {since, until?} is required.', 'window');
  const since = instant(window.since, 'since');
  const until = window.until === undefined ? null : instant(window.until, 'until');
  if (until !== null && until < since) throw invalidInput('until must not be before since.', 'until');
  return {
    goal_id: checkGoalId(g.goal_id),
    goal_instance_id: g.goal_instance_id === undefined ? null : checkId(g.goal_instance_id, 'goal_instance_id'),
    since,
    until,
  };
}

/** The rolling window of the last `hours` hours ending at `now`. */
export function rollingWindow(hours: number, now: Date = new Date()): QuotaWindow {
  if (!(hours > 0) || !Number.isFinite(hours)) throw invalidInput('hours must be a positive number.', 'hours');
  return { since: new Date(now.getTime() - hours * 3_600_000).toISOString(), until: now.toISOString() };
}
