/**
 * `effects.db` schema and its row decoders, shared by the live SQLite provider and the
 * historical reader. Decoders check every column; a row they cannot prove well-formed is refused
 * (live) or reported as a finding (historical), never guessed.
 */
import {
  instantColumn as instant,
  instantOrNullColumn as instantOrNull,
  intColumn as int,
  jsonColumn as json,
  jsonOrNullColumn as jsonOrNull,
  oneOfColumn as oneOf,
  sha256Column,
  textColumn as str,
  textOrNullColumn as strOrNull,
} from '../../store/index.js';
import type { EffectEvent, EffectRecord, EffectTransition, JsonValue } from './contract.js';
import { EFFECT_OUTCOMES } from './contract.js';

export interface EffectRow {
  operation_id: unknown;
  idempotency_key: unknown;
  goal_id: unknown;
  kind: unknown;
  target: unknown;
  intent: unknown;
  intent_digest: unknown;
  outcome: unknown;
  receipt: unknown;
  attempt: unknown;
  dispatched_at: unknown;
  hold: unknown;
  reconcile_attempts: unknown;
  created_at: unknown;
  settled_at: unknown;
}
export interface OutboxRow {
  operation_id: unknown;
  enqueued_at: unknown;
}
export interface HistoryRow {
  operation_id: unknown;
  seq: unknown;
  event: unknown;
  outcome: unknown;
  receipt: unknown;
  reason: unknown;
  at: unknown;
}

export function decodeEffect(r: EffectRow): EffectRecord {
  const digest = sha256Column(r.intent_digest, 'intent_digest');
  json(r.intent, 'intent');
  return {
    operation_id: str(r.operation_id, 'operation_id'),
    idempotency_key: str(r.idempotency_key, 'idempotency_key'),
    goal_id: str(r.goal_id, 'goal_id'),
    kind: str(r.kind, 'kind'),
    target: str(r.target, 'target'),
    intent: r.intent as string,
    intent_digest: digest,
    outcome: oneOf(r.outcome, 'outcome', EFFECT_OUTCOMES),
    receipt: jsonOrNull<JsonValue>(r.receipt, 'receipt'),
    attempt: int(r.attempt, 'attempt', 0),
    dispatched_at: instantOrNull(r.dispatched_at, 'dispatched_at'),
    hold: strOrNull(r.hold, 'hold'),
    reconcile_attempts: int(r.reconcile_attempts, 'reconcile_attempts', 0),
    created_at: instant(r.created_at, 'created_at'),
    settled_at: instantOrNull(r.settled_at, 'settled_at'),
  };
}

export function decodeTransition(r: HistoryRow): EffectTransition {
  return {
    operation_id: str(r.operation_id, 'operation_id'),
    seq: int(r.seq, 'seq', 1),
    event: oneOf(r.event, 'event', ['intent', 'dispatch', 'settle', 'hold', 'reissue'] as readonly EffectEvent[]),
    outcome: oneOf(r.outcome, 'outcome', EFFECT_OUTCOMES),
    receipt: jsonOrNull<JsonValue>(r.receipt, 'receipt'),
    reason: strOrNull(r.reason, 'reason'),
    at: instant(r.at, 'at'),
  };
}
