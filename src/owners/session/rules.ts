/**
 * The session owner's decisions as pure functions over the current rows: the one place they are
 * made, whatever the storage port. The owner (session.ts) reads the rows, asks these functions,
 * then commits what they decided under the precondition that the rows are still the ones read.
 */
import { canonicalJson, sha256Hex } from '../../core/index.js';
import { assertGoalId } from '../layout.js';
import type { GoalRef, Session, SettleTurnRequest, TurnJournal, TurnPhase, TurnSettlement } from './contract.js';
import { TURN_PHASES, TURN_RESULT_KINDS } from './contract.js';
import {
  generationStale,
  invalidInput,
  phaseOutOfOrder,
  sessionRetired,
  settlementIdentityMismatch,
  settlementInvalid,
  turnAlreadySettled,
  turnIdentityMismatch,
  turnIndexOutOfOrder,
  turnInProgress,
  turnNotInProgress,
  runUnbound,
} from './errors.js';

/** Identifiers: printable, public-safe, bounded. Effect refs use `#`, lineage ids `:`. */
const ID = /^[A-Za-z0-9][A-Za-z0-9._:#@-]{0,191}$/;

export function checkId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !ID.test(value)) {
    throw invalidInput(
      `${field} must be 1–192 characters of letters, digits and . _ : # @ -, starting with a letter or digit.`,
      field,
    );
  }
  return value;
}

export function checkGoalRef(goal: GoalRef): GoalRef {
  if (typeof goal !== 'object' || goal === null) throw invalidInput('A Goal reference is required.', 'goal');
  try {
    assertGoalId(goal.goal_id);
  } catch {
    throw invalidInput('goal_id is not a valid Goal id.', 'goal_id');
  }
  return { goal_id: goal.goal_id, goal_instance_id: checkId(goal.goal_instance_id, 'goal_instance_id') };
}

export function checkGeneration(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw invalidInput(`${field} must be a positive integer.`, field);
  return value;
}

export function checkTurnIndex(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw invalidInput('turn_index must be a non-negative integer.', 'turn_index');
  return value;
}

export function checkPhase(value: unknown): TurnPhase {
  if (!(TURN_PHASES as readonly unknown[]).includes(value))
    throw invalidInput(`phase must be one of ${TURN_PHASES.join(', ')}.`, 'phase');
  return value as TurnPhase;
}

export function checkRef(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return checkId(value, 'ref');
}

/** The Turn journal key: sha256 of the canonical JSON of the session id and turn index. */
export const turnKeyOf = (sessionId: string, turnIndex: number): string =>
  sha256Hex(canonicalJson({ session_id: sessionId, turn_index: turnIndex }));

/** The settlement's request digest: what it decides, excluding the caller's fence token. */
export const settlementDigest = (
  turnKey: string,
  r: Pick<TurnSettlement, 'settlement_id' | 'status' | 'failed_phase' | 'result_kind'>,
): string =>
  sha256Hex(
    canonicalJson({
      turn_key: turnKey,
      settlement_id: r.settlement_id,
      status: r.status,
      failed_phase: r.failed_phase,
      result_kind: r.result_kind,
    }),
  );

export interface NormalizedSettle {
  readonly settlement_id: string;
  readonly status: TurnSettlement['status'];
  readonly failed_phase: TurnPhase | null;
  readonly result_kind: TurnSettlement['result_kind'];
  readonly expected_execution_generation: number;
}

export function normalizeSettle(r: SettleTurnRequest): NormalizedSettle {
  if (typeof r !== 'object' || r === null) throw invalidInput('A settlement request is required.', 'settlement');
  if (!['committed', 'stopped', 'failed'].includes(r.status))
    throw invalidInput('status must be committed, stopped or failed.', 'status');
  const resultKind = r.result_kind ?? null;
  if (resultKind !== null && !(TURN_RESULT_KINDS as readonly string[]).includes(resultKind)) {
    throw invalidInput(`result_kind must be one of ${TURN_RESULT_KINDS.join(', ')}.`, 'result_kind');
  }
  return {
    settlement_id: checkId(r.settlement_id, 'settlement_id'),
    status: r.status,
    failed_phase: r.failed_phase === undefined || r.failed_phase === null ? null : checkPhase(r.failed_phase),
    result_kind: resultKind,
    expected_execution_generation: checkGeneration(r.expected_execution_generation, 'expected_execution_generation'),
  };
}

export function assertActive(s: Session): void {
  if (s.status !== 'active') throw sessionRetired(s.session_id);
}

export function assertExecutionGeneration(s: Session, expected: number): void {
  if (s.execution_generation !== expected)
    throw generationStale(s.session_id, 'execution_generation', expected, s.execution_generation);
}

export function assertSessionGeneration(s: Session, expected: number): void {
  if (s.session_generation !== expected)
    throw generationStale(s.session_id, 'session_generation', expected, s.session_generation);
}

/**
 * Begin-turn decision. `existing` is the journal at this turn key, `last` the session's highest
 * turn. Returns 'readback' for an identical repeat, 'create' for a new journal.
 */
export function decideBeginTurn(
  s: Session,
  turnIndex: number,
  expected: number,
  existing: TurnJournal | undefined,
  last: TurnJournal | undefined,
): 'readback' | 'create' {
  if (existing !== undefined) {
    if (existing.execution_generation !== expected) throw turnIdentityMismatch(existing.turn_key);
    assertExecutionGeneration(s, expected);
    return 'readback';
  }
  assertActive(s);
  assertExecutionGeneration(s, expected);
  if (s.run_id === null) throw runUnbound(s.session_id);
  const next = last === undefined ? 0 : last.turn_index + 1;
  if (turnIndex !== next) throw turnIndexOutOfOrder(s.session_id, next, turnIndex);
  if (last !== undefined && last.status === 'in_progress') throw turnInProgress(s.session_id, last.turn_key);
  return 'create';
}

/** Record-phase decision: 'readback' if `phase` is already in the prefix, 'append' if it is the next one. */
export function decideRecordPhase(
  s: Session,
  t: TurnJournal,
  phase: TurnPhase,
  expected: number,
): 'readback' | 'append' {
  const at = TURN_PHASES.indexOf(phase);
  if (at < t.phases.length) return 'readback';
  if (t.status !== 'in_progress') throw turnNotInProgress(t.turn_key, t.status);
  assertActive(s);
  assertExecutionGeneration(s, expected);
  if (t.execution_generation !== expected) throw turnIdentityMismatch(t.turn_key);
  const next = TURN_PHASES[t.phases.length] ?? null;
  if (phase !== next) throw phaseOutOfOrder(t.turn_key, next, phase);
  return 'append';
}

/**
 * Settle decision. Returns the original settlement for an identical repeat, or the new settlement
 * to write. `byId` is the settlement already stored under the request's settlement id, if any.
 */
export function decideSettle(
  s: Session,
  t: TurnJournal,
  r: NormalizedSettle,
  current: TurnSettlement | undefined,
  byId: TurnSettlement | undefined,
  settledAt: string,
): { replay: TurnSettlement } | { settle: TurnSettlement } {
  const digest = settlementDigest(t.turn_key, r);
  if (byId !== undefined) {
    if (byId.turn_key !== t.turn_key || byId.request_digest !== digest)
      throw settlementIdentityMismatch(r.settlement_id);
    return { replay: byId };
  }
  if (current !== undefined) throw turnAlreadySettled(t.turn_key, current.settlement_id);
  assertExecutionGeneration(s, r.expected_execution_generation);
  // Only the executor that ran the turn can commit it; the current owner may close an older turn
  // as stopped or failed (a fenced executor's abandoned turn), never as committed.
  if (r.status === 'committed') {
    assertActive(s);
    if (t.execution_generation !== r.expected_execution_generation) throw turnIdentityMismatch(t.turn_key);
    if (t.phases.length <= TURN_PHASES.indexOf('durable_writeback')) {
      throw settlementInvalid('A committed turn must have recorded durable_writeback.', t.turn_key);
    }
    if (r.failed_phase !== null) throw settlementInvalid('Only a failed turn names a failed phase.', t.turn_key);
  } else if (r.status === 'failed') {
    const next = TURN_PHASES[t.phases.length] ?? null;
    if (next === null || r.failed_phase !== next) {
      throw settlementInvalid(
        `A failed turn names the first unrecorded phase as failed_phase (${next ?? 'none: every phase is recorded'}).`,
        t.turn_key,
      );
    }
  } else if (r.failed_phase !== null) {
    throw settlementInvalid('Only a failed turn names a failed phase.', t.turn_key);
  }
  return {
    settle: {
      settlement_id: r.settlement_id,
      turn_key: t.turn_key,
      session_id: t.session_id,
      goal_id: t.goal_id,
      status: r.status,
      failed_phase: r.failed_phase,
      result_kind: r.result_kind,
      phase_count: t.phases.length,
      request_digest: digest,
      settled_at: settledAt,
    },
  };
}
