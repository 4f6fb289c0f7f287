/**
 * The effect owner's decisions as pure functions over the current row: the one place they are
 * made, whatever the storage port. The owner (journal.ts) reads the rows, asks these functions,
 * then commits what they decided under the precondition that the effect is still at the revision
 * read. Each returns either a readback (an idempotent repeat) or the change to persist: the next
 * row, the history event, and what happens to the outbox row.
 */
import { canonicalJson, sha256Hex } from '../../core/index.js';
import { assertGoalId } from '../layout.js';
import type {
  EffectEvent,
  EffectOutcome,
  EffectRecord,
  ExpectedEffectState,
  JsonValue,
  RecordIntentRequest,
  ResolvedOutcome,
  SettledOutcome,
} from './contract.js';
import { EFFECT_OUTCOMES, MAX_INTENT_BYTES, MAX_RECEIPT_BYTES } from './contract.js';
import {
  alreadySettled,
  dispatchInFlight,
  identityMismatch,
  invalidInput,
  keyInUse,
  notDispatched,
  notHeld,
  notReissuable,
  payloadTooLarge,
  stateChanged,
  targetUnsafe,
} from './errors.js';

const ID = /^[A-Za-z0-9][A-Za-z0-9._:#@-]{0,191}$/;
const KIND = /^[a-z][a-z0-9_.-]{0,63}$/;
const TARGET = /^[A-Za-z0-9][A-Za-z0-9._:/[\]-]{0,255}$/;
const REASON = /^[a-z][a-z0-9_]{0,63}$/;
/** `runEffectScope(run id)`: the scope of an effect of a run outside any Goal. */
const RUN_SCOPE = /^run:[A-Za-z0-9_-]{1,128}$/;

export function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !ID.test(value)) {
    throw invalidInput(
      `${field} must be 1–192 characters of letters, digits and . _ : # @ -, starting with a letter or digit.`,
      field,
    );
  }
  return value;
}

/** A public-safe reason code (e.g. `timeout`, `query_failed`). */
export function checkReason(value: unknown): string {
  if (typeof value !== 'string' || !REASON.test(value))
    throw invalidInput('A reason is a lowercase code of a–z, 0–9 and _.', 'reason');
  return value;
}

export function checkResolved(value: unknown): ResolvedOutcome {
  if (value !== 'committed' && value !== 'absent' && value !== 'unknown')
    throw invalidInput('A resolution is committed, absent or unknown.', 'outcome');
  return value;
}

export function checkExpected(value: unknown): ExpectedEffectState {
  const v = value as Partial<ExpectedEffectState> | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    !(EFFECT_OUTCOMES as readonly unknown[]).includes(v.outcome) ||
    !Number.isSafeInteger(v.attempt) ||
    v.attempt! < 0
  ) {
    throw invalidInput('expected is the outcome and attempt the effect was read with.', 'expected');
  }
  return { outcome: v.outcome!, attempt: v.attempt! };
}

export function checkOutcome(value: unknown): SettledOutcome {
  if (value === 'pending' || !(EFFECT_OUTCOMES as readonly unknown[]).includes(value)) {
    throw invalidInput('outcome must be committed, absent, unknown, rejected or superseded.', 'outcome');
  }
  return value as SettledOutcome;
}

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/** Canonical receipt text, bounded. */
export function receiptText(receipt: JsonValue): string {
  let text: string;
  try {
    text = canonicalJson(receipt);
  } catch {
    throw invalidInput('receipt must be a JSON value.', 'receipt');
  }
  if (bytes(text) > MAX_RECEIPT_BYTES) throw payloadTooLarge('receipt', MAX_RECEIPT_BYTES);
  return text;
}

export interface NormalizedIntent {
  readonly operation_id: string;
  readonly idempotency_key: string;
  readonly goal_id: string;
  readonly kind: string;
  readonly target: string;
  readonly intent: string;
  readonly intent_digest: string;
}

/** The digest binds the whole semantic request: identity, Goal, kind, target and intent. */
export const intentDigest = (n: Omit<NormalizedIntent, 'intent_digest'>): string =>
  sha256Hex(
    canonicalJson({
      operation_id: n.operation_id,
      idempotency_key: n.idempotency_key,
      goal_id: n.goal_id,
      kind: n.kind,
      target: n.target,
      intent: JSON.parse(n.intent) as JsonValue,
    }),
  );

export function normalizeIntent(r: RecordIntentRequest): NormalizedIntent {
  if (typeof r !== 'object' || r === null) throw invalidInput('An intent request is required.', 'request');
  const operation_id = checkId(r.operation_id, 'operation_id');
  const idempotency_key = checkId(r.idempotency_key, 'idempotency_key');
  if (typeof r.goal_id !== 'string' || !RUN_SCOPE.test(r.goal_id)) {
    try {
      assertGoalId(r.goal_id);
    } catch {
      throw invalidInput('goal_id is not a valid Goal id or run scope.', 'goal_id');
    }
  }
  if (typeof r.kind !== 'string' || !KIND.test(r.kind))
    throw invalidInput('kind is a lowercase dotted name (e.g. webhook.deliver).', 'kind');
  if (typeof r.target !== 'string' || !TARGET.test(r.target)) throw targetUnsafe();
  let intent: string;
  try {
    intent = canonicalJson(r.intent);
  } catch {
    throw invalidInput('intent must be a JSON value.', 'intent');
  }
  if (bytes(intent) > MAX_INTENT_BYTES) throw payloadTooLarge('intent', MAX_INTENT_BYTES);
  const base = { operation_id, idempotency_key, goal_id: r.goal_id, kind: r.kind, target: r.target, intent };
  return { ...base, intent_digest: intentDigest(base) };
}

export interface Change {
  readonly next: EffectRecord;
  readonly event: EffectEvent;
  /** Canonical receipt text stored with the history row (settle only). */
  readonly receipt: string | null;
  readonly reason: string | null;
  readonly outbox: 'add' | 'remove' | 'keep';
}

export type Decision = { readonly readback: EffectRecord } | { readonly change: Change };

export function decideRecordIntent(
  existing: EffectRecord | undefined,
  keyHolder: EffectRecord | undefined,
  n: NormalizedIntent,
  at: string,
): Decision {
  if (existing !== undefined) {
    if (existing.intent_digest !== n.intent_digest) throw identityMismatch(n.operation_id);
    return { readback: existing };
  }
  if (keyHolder !== undefined) throw keyInUse(n.idempotency_key, keyHolder.operation_id);
  const next: EffectRecord = {
    ...n,
    outcome: 'pending',
    receipt: null,
    attempt: 0,
    dispatched_at: null,
    hold: null,
    reconcile_attempts: 0,
    created_at: at,
    settled_at: null,
  };
  return { change: { next, event: 'intent', receipt: null, reason: null, outbox: 'add' } };
}

export function decideDispatch(e: EffectRecord, inOutbox: boolean, at: string): Change {
  if (e.outcome !== 'pending') throw alreadySettled(e.operation_id, e.outcome);
  if (!inOutbox) throw dispatchInFlight(e.operation_id);
  return {
    next: { ...e, attempt: e.attempt + 1, dispatched_at: at },
    event: 'dispatch',
    receipt: null,
    reason: null,
    outbox: 'remove',
  };
}

const SETTLE_FROM: Readonly<Record<EffectOutcome, readonly SettledOutcome[]>> = {
  pending: ['committed', 'absent', 'unknown', 'rejected', 'superseded'],
  unknown: ['committed', 'absent'],
  committed: [],
  absent: [],
  rejected: [],
  superseded: [],
};

export function decideSettle(e: EffectRecord, outcome: SettledOutcome, receipt: string, at: string): Decision {
  if (e.outcome === outcome && canonicalJson(e.receipt) === receipt) return { readback: e };
  if (!SETTLE_FROM[e.outcome].includes(outcome)) throw alreadySettled(e.operation_id, e.outcome);
  if ((outcome === 'committed' || outcome === 'unknown') && e.dispatched_at === null)
    throw notDispatched(e.operation_id);
  const next: EffectRecord = { ...e, outcome, receipt: JSON.parse(receipt) as JsonValue, hold: null, settled_at: at };
  return { change: { next, event: 'settle', receipt, reason: null, outbox: 'remove' } };
}

/** `resolve`: an uncertain effect, still exactly as the caller read it, settled from outside evidence. */
export function decideResolve(
  e: EffectRecord,
  expected: ExpectedEffectState,
  outcome: ResolvedOutcome,
  receipt: string,
  at: string,
): Decision {
  if (e.outcome === outcome && canonicalJson(e.receipt) === receipt) return { readback: e };
  if (e.outcome !== expected.outcome || e.attempt !== expected.attempt)
    throw stateChanged(e.operation_id, expected.outcome, e.outcome);
  if (!isUncertain(e))
    throw e.outcome === 'pending' ? notDispatched(e.operation_id) : alreadySettled(e.operation_id, e.outcome);
  return decideSettle(e, outcome, receipt, at);
}

export function decideHold(e: EffectRecord, reason: string): Change {
  if (e.outcome !== 'unknown') throw notHeld(e.operation_id, e.outcome);
  return {
    next: { ...e, hold: reason, reconcile_attempts: e.reconcile_attempts + 1 },
    event: 'hold',
    receipt: null,
    reason,
    outbox: 'keep',
  };
}

export function decideReissue(e: EffectRecord): Change {
  if (e.outcome !== 'absent') throw notReissuable(e.operation_id, e.outcome);
  const next: EffectRecord = {
    ...e,
    outcome: 'pending',
    receipt: null,
    dispatched_at: null,
    hold: null,
    settled_at: null,
  };
  return { next, event: 'reissue', receipt: null, reason: null, outbox: 'add' };
}

/**
 * `adopt`: an effect recovered from a backup, recorded under its ORIGINAL identity in a new root's
 * journal with the outcome reconciliation established — never dispatched here. Only onto the bare
 * intent just recorded for it (pending, never dispatched); once adopted, the effect's current
 * state is the readback (a later reconciliation or resolution is never overwritten). A recovered `unknown` stays held (`recovered_unknown`) until it is reconciled or resolved.
 */
export function decideAdopt(
  e: EffectRecord,
  outcome: SettledOutcome,
  receipt: string,
  attempt: number,
  at: string,
): Decision {
  // Adopted before (and perhaps reconciled or resolved since): its current state stands, never overwritten.
  if (e.outcome !== 'pending' || e.dispatched_at !== null || e.attempt !== 0) return { readback: e };
  const dispatched = outcome === 'committed' || outcome === 'unknown';
  const next: EffectRecord = {
    ...e,
    outcome,
    receipt: JSON.parse(receipt) as JsonValue,
    attempt: dispatched ? Math.max(1, attempt) : attempt,
    dispatched_at: dispatched ? at : null,
    hold: outcome === 'unknown' ? 'recovered_unknown' : null,
    settled_at: at,
  };
  return { change: { next, event: 'settle', receipt, reason: 'recovered', outbox: 'remove' } };
}

/** Uncertain: unknown, or dispatched and never settled (e.g. the process died mid-dispatch). */
export const isUncertain = (e: EffectRecord): boolean =>
  e.outcome === 'unknown' || (e.outcome === 'pending' && e.dispatched_at !== null);
