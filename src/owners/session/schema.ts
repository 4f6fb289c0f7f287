/**
 * `sessions.db` schema and its row decoders, shared by the live SQLite provider and the
 * historical reader. Decoders check every column strictly: a row they cannot prove well-formed
 * is refused (live) or reported as a finding (historical), never guessed.
 */
import {
  RowInvalid,
  instantColumn as instant,
  intColumn as int,
  oneOfColumn as oneOf,
  sha256Column,
  textColumn as str,
  textOrNullColumn as strOrNull,
} from '../../store/index.js';
import type { Session, TurnJournal, TurnPhaseRecord, TurnSettlement } from './contract.js';
import { SESSION_MODE, TURN_PHASES, TURN_RESULT_KINDS } from './contract.js';

export interface SessionRow {
  session_id: unknown;
  goal_id: unknown;
  goal_instance_id: unknown;
  session_mode: unknown;
  session_generation: unknown;
  execution_generation: unknown;
  run_id: unknown;
  status: unknown;
  created_at: unknown;
  updated_at: unknown;
}
export interface TurnRow {
  turn_key: unknown;
  session_id: unknown;
  goal_id: unknown;
  goal_instance_id: unknown;
  turn_index: unknown;
  execution_generation: unknown;
  run_id: unknown;
  status: unknown;
  created_at: unknown;
  updated_at: unknown;
}
export interface PhaseRow {
  turn_key: unknown;
  position: unknown;
  phase: unknown;
  at: unknown;
  ref: unknown;
}
export interface SettlementRow {
  turn_key: unknown;
  settlement_id: unknown;
  session_id: unknown;
  goal_id: unknown;
  status: unknown;
  failed_phase: unknown;
  result_kind: unknown;
  phase_count: unknown;
  request_digest: unknown;
  settled_at: unknown;
}

export function decodeSession(r: SessionRow): Session {
  return {
    session_id: str(r.session_id, 'session_id'),
    goal_id: str(r.goal_id, 'goal_id'),
    goal_instance_id: str(r.goal_instance_id, 'goal_instance_id'),
    session_mode: oneOf(r.session_mode, 'session_mode', [SESSION_MODE]),
    session_generation: int(r.session_generation, 'session_generation', 1),
    execution_generation: int(r.execution_generation, 'execution_generation', 1),
    run_id: strOrNull(r.run_id, 'run_id'),
    status: oneOf(r.status, 'status', ['active', 'retired'] as const),
    created_at: instant(r.created_at, 'created_at'),
    updated_at: instant(r.updated_at, 'updated_at'),
  };
}

export function decodePhase(r: PhaseRow): TurnPhaseRecord & { position: number } {
  return {
    position: int(r.position, 'position', 0),
    phase: oneOf(r.phase, 'phase', TURN_PHASES),
    at: instant(r.at, 'at'),
    ref: strOrNull(r.ref, 'ref'),
  };
}

/** Decodes a turn with its phases; the phases must be exactly the ordered prefix of TURN_PHASES. */
export function decodeTurn(r: TurnRow, phaseRows: readonly PhaseRow[]): TurnJournal {
  const phases = phaseRows.map(decodePhase).sort((a, b) => a.position - b.position);
  phases.forEach((p, i) => {
    if (p.position !== i || p.phase !== TURN_PHASES[i]) throw new RowInvalid('phases');
  });
  return {
    turn_key: str(r.turn_key, 'turn_key'),
    session_id: str(r.session_id, 'session_id'),
    goal_id: str(r.goal_id, 'goal_id'),
    goal_instance_id: str(r.goal_instance_id, 'goal_instance_id'),
    turn_index: int(r.turn_index, 'turn_index', 0),
    execution_generation: int(r.execution_generation, 'execution_generation', 1),
    run_id: str(r.run_id, 'run_id'),
    status: oneOf(r.status, 'status', ['in_progress', 'committed', 'stopped', 'failed'] as const),
    phases: phases.map(({ phase, at, ref }) => ({ phase, at, ref })),
    created_at: instant(r.created_at, 'created_at'),
    updated_at: instant(r.updated_at, 'updated_at'),
  };
}

export function decodeSettlement(r: SettlementRow): TurnSettlement {
  const digest = sha256Column(r.request_digest, 'request_digest');
  return {
    settlement_id: str(r.settlement_id, 'settlement_id'),
    turn_key: str(r.turn_key, 'turn_key'),
    session_id: str(r.session_id, 'session_id'),
    goal_id: str(r.goal_id, 'goal_id'),
    status: oneOf(r.status, 'status', ['committed', 'stopped', 'failed'] as const),
    failed_phase: r.failed_phase === null ? null : oneOf(r.failed_phase, 'failed_phase', TURN_PHASES),
    result_kind: r.result_kind === null ? null : oneOf(r.result_kind, 'result_kind', TURN_RESULT_KINDS),
    phase_count: int(r.phase_count, 'phase_count', 0),
    request_digest: digest,
    settled_at: instant(r.settled_at, 'settled_at'),
  };
}
