/**
 * `quota.db` schema and its row decoder, shared by the live SQLite provider and the historical
 * reader. A row the decoder cannot prove well-formed is refused (live) or a finding (historical).
 */
import {
  RowInvalid,
  instantColumn as instant,
  intColumn as int,
  sha256Column,
  textColumn as str,
} from '../../store/index.js';
import type { SpendEntry } from './contract.js';

export interface SpendRow {
  effect_id: unknown;
  goal_id: unknown;
  goal_instance_id: unknown;
  amount: unknown;
  unit: unknown;
  request_digest: unknown;
  status: unknown;
  created_at: unknown;
  voided_at: unknown;
  void_reason: unknown;
}

export function decodeSpend(r: SpendRow): SpendEntry {
  const amount = int(r.amount, 'amount', 1);
  const digest = sha256Column(r.request_digest, 'request_digest');
  if (r.status !== 'written' && r.status !== 'voided') throw new RowInvalid('status');
  const voided = r.status === 'voided';
  if (voided !== (r.voided_at !== null) || voided !== (r.void_reason !== null)) throw new RowInvalid('voided_at');
  return {
    effect_id: str(r.effect_id, 'effect_id'),
    goal_id: str(r.goal_id, 'goal_id'),
    goal_instance_id: str(r.goal_instance_id, 'goal_instance_id'),
    amount,
    unit: str(r.unit, 'unit'),
    request_digest: digest,
    status: r.status,
    created_at: instant(r.created_at, 'created_at'),
    voided_at: voided ? instant(r.voided_at, 'voided_at') : null,
    void_reason: voided ? str(r.void_reason, 'void_reason') : null,
  };
}
