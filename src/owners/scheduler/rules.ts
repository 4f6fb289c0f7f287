/**
 * The scheduler owner's decisions as pure functions — cadence parsing, creation identity, the
 * reset-token fence, and the fire acknowledgement that skips (never replays) missed occurrences —
 * the one place they are made, whatever the storage port. The owner (scheduler.ts) reads the
 * timer, asks these functions and commits what they decided.
 */
import { randomBytes } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../core/index.js';
import { assertGoalId } from '../layout.js';
import type { Cadence, CadenceFrequency, CreateTimerRequest, Timer } from './contract.js';
import { CADENCE_FREQUENCIES } from './contract.js';
import {
  cadenceInvalid,
  dueMismatch,
  invalidInput,
  resetTokenStale,
  timerDisabled,
  timerIdentityMismatch,
} from './errors.js';
import type { StoredTimer } from './port.js';

const ID = /^[A-Za-z0-9][A-Za-z0-9._:#@-]{0,191}$/;
const PERIOD_MS: Readonly<Record<CadenceFrequency, number>> = {
  MINUTELY: 60_000,
  HOURLY: 3_600_000,
  DAILY: 86_400_000,
};
const MAX_INTERVAL = 1_000_000;

export function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !ID.test(value)) {
    throw invalidInput(
      `${field} must be 1–192 characters of letters, digits and . _ : # @ -, starting with a letter or digit.`,
      field,
    );
  }
  return value;
}

export function checkGoalId(value: unknown): string {
  try {
    return assertGoalId(value as string);
  } catch {
    throw invalidInput('goal_id is not a valid Goal id.', 'goal_id');
  }
}

/** Parses the RRULE subset `FREQ=MINUTELY|HOURLY|DAILY[;INTERVAL=n]` (keys once each, any order). */
export function parseCadence(text: unknown): Cadence {
  if (typeof text !== 'string' || text.length > 64) throw cadenceInvalid();
  const fields = new Map<string, string>();
  for (const part of text.split(';')) {
    const m = /^([A-Z]+)=([A-Z0-9]+)$/.exec(part);
    if (m === null || fields.has(m[1]!)) throw cadenceInvalid();
    fields.set(m[1]!, m[2]!);
  }
  const freq = fields.get('FREQ');
  const intervalText = fields.get('INTERVAL') ?? '1';
  if (freq === undefined || !(CADENCE_FREQUENCIES as readonly string[]).includes(freq)) throw cadenceInvalid();
  if ([...fields.keys()].some((k) => k !== 'FREQ' && k !== 'INTERVAL')) throw cadenceInvalid();
  if (!/^[1-9][0-9]{0,6}$/.test(intervalText) || Number(intervalText) > MAX_INTERVAL) throw cadenceInvalid();
  const interval = Number(intervalText);
  const f = freq as CadenceFrequency;
  return { freq: f, interval, ms: PERIOD_MS[f] * interval, text: `FREQ=${f};INTERVAL=${interval}` };
}

export function instant(value: unknown, field: string): string {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw invalidInput(`${field} must be an ISO-8601 instant.`, field);
  return new Date(ms).toISOString();
}

export const newResetToken = (): string => `rst_${randomBytes(12).toString('hex')}`;

export interface NormalizedCreate {
  readonly timer_id: string;
  readonly goal_id: string;
  readonly cadence: string;
  readonly next_due_at: string;
  readonly enabled: boolean;
  readonly create_digest: string;
}

export function normalizeCreate(r: CreateTimerRequest): NormalizedCreate {
  if (typeof r !== 'object' || r === null) throw invalidInput('A timer request is required.', 'request');
  if (r.enabled !== undefined && typeof r.enabled !== 'boolean')
    throw invalidInput('enabled must be a boolean.', 'enabled');
  const base = {
    timer_id: r.timer_id === undefined ? `tmr_${randomBytes(12).toString('hex')}` : checkId(r.timer_id, 'timer_id'),
    goal_id: checkGoalId(r.goal_id),
    cadence: parseCadence(r.cadence).text,
    next_due_at: instant(r.next_due_at, 'next_due_at'),
    enabled: r.enabled ?? true,
  };
  return { ...base, create_digest: sha256Hex(canonicalJson(base)) };
}

export function decideCreate(
  existing: StoredTimer | undefined,
  n: NormalizedCreate,
  at: string,
): { replay: StoredTimer } | { write: StoredTimer } {
  if (existing !== undefined) {
    if (existing.create_digest !== n.create_digest) throw timerIdentityMismatch(n.timer_id);
    return { replay: existing };
  }
  const timer: StoredTimer = {
    timer_id: n.timer_id,
    goal_id: n.goal_id,
    cadence: n.cadence,
    next_due_at: n.next_due_at,
    enabled: n.enabled,
    reset_token: newResetToken(),
    last_fired_due_at: null,
    create_digest: n.create_digest,
    created_at: at,
    updated_at: at,
  };
  return { write: timer };
}

export function assertToken(t: Timer, token: unknown): void {
  if (t.reset_token !== token) throw resetTokenStale(t.timer_id);
}

/**
 * Acknowledge occurrence `dueAt` fired at `firedAt`: the next occurrence is the first
 * `dueAt + k·period` (k ≥ 1) strictly after `firedAt` — missed ones are skipped, never replayed.
 */
export function decideAck<T extends Timer>(
  t: T,
  token: unknown,
  dueAt: string,
  firedAt: string,
): { replay: T } | { write: T } {
  assertToken(t, token);
  if (t.last_fired_due_at === dueAt) return { replay: t };
  if (!t.enabled) throw timerDisabled(t.timer_id);
  if (t.next_due_at !== dueAt) throw dueMismatch(t.timer_id, t.next_due_at, dueAt);
  const period = parseCadence(t.cadence).ms;
  const due = Date.parse(dueAt);
  const k = Math.max(1, Math.floor((Date.parse(firedAt) - due) / period) + 1);
  return {
    write: {
      ...t,
      next_due_at: new Date(due + k * period).toISOString(),
      last_fired_due_at: dueAt,
      updated_at: firedAt,
    },
  };
}

export function decideSetEnabled<T extends Timer>(t: T, enabled: unknown, token: unknown, at: string): T {
  if (typeof enabled !== 'boolean') throw invalidInput('enabled must be a boolean.', 'enabled');
  assertToken(t, token);
  return t.enabled === enabled ? t : { ...t, enabled, updated_at: at };
}

export function decideReset<T extends Timer>(
  t: T,
  token: unknown,
  nextDueAt: string,
  cadence: string | undefined,
  at: string,
): T {
  assertToken(t, token);
  return {
    ...t,
    cadence: cadence === undefined ? t.cadence : parseCadence(cadence).text,
    next_due_at: instant(nextDueAt, 'next_due_at'),
    reset_token: newResetToken(),
    last_fired_due_at: null,
    updated_at: at,
  };
}
