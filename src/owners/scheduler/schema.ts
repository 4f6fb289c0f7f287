/**
 * `scheduler.db` schema and its row decoder, shared by the live SQLite provider and the
 * historical reader. A row the decoder cannot prove well-formed is refused (live) or a finding
 * (historical).
 */
import { RowInvalid, sha256Column, textColumn as str } from '../../store/index.js';
import type { Timer } from './contract.js';
import { parseCadence } from './rules.js';

export interface TimerRow {
  timer_id: unknown;
  goal_id: unknown;
  cadence: unknown;
  next_due_at: unknown;
  enabled: unknown;
  reset_token: unknown;
  last_fired_due_at: unknown;
  create_digest: unknown;
  created_at: unknown;
  updated_at: unknown;
}

/** Instants are stored in canonical toISOString form: comparisons are textual. */
const instant = (v: unknown, field: string): string => {
  const s = str(v, field);
  const ms = Date.parse(s);
  if (Number.isNaN(ms) || new Date(ms).toISOString() !== s) throw new RowInvalid(field);
  return s;
};

export function decodeTimer(r: TimerRow): Timer & { create_digest: string } {
  let cadence: string;
  try {
    cadence = parseCadence(r.cadence).text;
  } catch {
    throw new RowInvalid('cadence');
  }
  if (cadence !== r.cadence) throw new RowInvalid('cadence');
  const enabled = typeof r.enabled === 'bigint' ? Number(r.enabled) : r.enabled;
  if (enabled !== 0 && enabled !== 1) throw new RowInvalid('enabled');
  const digest = sha256Column(r.create_digest, 'create_digest');
  return {
    timer_id: str(r.timer_id, 'timer_id'),
    goal_id: str(r.goal_id, 'goal_id'),
    cadence,
    next_due_at: instant(r.next_due_at, 'next_due_at'),
    enabled: enabled === 1,
    reset_token: str(r.reset_token, 'reset_token'),
    last_fired_due_at: r.last_fired_due_at === null ? null : instant(r.last_fired_due_at, 'last_fired_due_at'),
    create_digest: digest,
    created_at: str(r.created_at, 'created_at'),
    updated_at: str(r.updated_at, 'updated_at'),
  };
}

export const timerRow = (t: Timer & { create_digest: string }) => ({ ...t, enabled: t.enabled ? 1 : 0 });
