/**
 * Typed refusals of the session owner. Each code is stable and carries exactly one next action;
 * details hold public-safe facts only (ids and generations).
 */
import { OwnerError, ownerErrors } from '../owner-errors.js';

export const SESSION_ERROR_CODES = [
  'session_input_invalid',
  'session_not_found',
  'session_identity_mismatch',
  'session_generation_stale',
  'session_retired',
  'session_run_unbound',
  'turn_not_found',
  'turn_index_out_of_order',
  'turn_in_progress',
  'turn_identity_mismatch',
  'turn_not_in_progress',
  'turn_phase_out_of_order',
  'turn_already_settled',
  'settlement_invalid',
  'settlement_identity_mismatch',
] as const;
export type SessionErrorCode = (typeof SESSION_ERROR_CODES)[number];

/** The session owner's refusals (owner-errors.ts). */
export const SESSION_ERRORS = ownerErrors('session', 'SessionError', SESSION_ERROR_CODES);
export type SessionError = OwnerError<SessionErrorCode>;

export const isSessionError = SESSION_ERRORS.is;

export const invalidInput = (message: string, field: string): SessionError =>
  new OwnerError(SESSION_ERRORS, 'usage', 'session_input_invalid', message, {
    nextAction: `correct ${field} and retry`,
    details: { field },
  });

export const sessionNotFound = (sessionId: string): SessionError =>
  new OwnerError(SESSION_ERRORS, 'not_found', 'session_not_found', 'No such session.', {
    nextAction: 'list the sessions of the Goal and use an existing session id',
    details: { session_id: sessionId },
  });

export const sessionIdentityMismatch = (sessionId: string): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'conflict',
    'session_identity_mismatch',
    'The session id is already bound to another Goal lifetime.',
    {
      nextAction: 'open the session without a session id to get a new one',
      details: { session_id: sessionId },
    },
  );

export const generationStale = (
  sessionId: string,
  which: 'execution_generation' | 'session_generation',
  expected: number,
  current: number,
): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'conflict',
    'session_generation_stale',
    `The session's ${which.replace('_', ' ')} moved on; this writer is fenced.`,
    {
      nextAction: 'reload the session and act only under its current generation',
      details: { session_id: sessionId, generation: which, expected, current },
    },
  );

export const sessionRetired = (sessionId: string): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'rejected',
    'session_retired',
    'The session is retired and admits no further execution.',
    {
      nextAction: 'open a new session for the Goal',
      details: { session_id: sessionId },
    },
  );

export const runUnbound = (sessionId: string): SessionError =>
  new OwnerError(SESSION_ERRORS, 'rejected', 'session_run_unbound', 'The session has no bound run; a turn needs one.', {
    nextAction: 'bind a run to the session first',
    details: { session_id: sessionId },
  });

export const turnNotFound = (turnKey: string): SessionError =>
  new OwnerError(SESSION_ERRORS, 'not_found', 'turn_not_found', 'No such turn journal.', {
    nextAction: 'list the turns of the session and use an existing turn key',
    details: { turn_key: turnKey },
  });

export const turnIndexOutOfOrder = (sessionId: string, expected: number, got: number): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'conflict',
    'turn_index_out_of_order',
    `Turn ${got} is not the session's next turn (${expected}).`,
    {
      nextAction: `begin turn ${expected}`,
      details: { session_id: sessionId, expected_turn_index: expected, turn_index: got },
    },
  );

export const turnInProgress = (sessionId: string, turnKey: string): SessionError =>
  new OwnerError(SESSION_ERRORS, 'conflict', 'turn_in_progress', 'Another turn of this session is still in progress.', {
    nextAction: 'settle the in-progress turn first',
    details: { session_id: sessionId, turn_key: turnKey },
  });

export const turnIdentityMismatch = (turnKey: string): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'conflict',
    'turn_identity_mismatch',
    'The turn was begun under another execution generation.',
    {
      nextAction: "begin the session's next turn index instead",
      details: { turn_key: turnKey },
    },
  );

export const turnNotInProgress = (turnKey: string, status: string): SessionError =>
  new OwnerError(SESSION_ERRORS, 'rejected', 'turn_not_in_progress', `The turn is ${status}; its journal is closed.`, {
    nextAction: 'read the turn settlement instead of writing to the journal',
    details: { turn_key: turnKey, status },
  });

export const phaseOutOfOrder = (turnKey: string, expected: string | null, got: string): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'conflict',
    'turn_phase_out_of_order',
    `Phase ${got} does not extend the recorded prefix (next is ${expected ?? 'none'}).`,
    {
      nextAction: expected === null ? 'settle the turn; every phase is recorded' : `record phase ${expected} first`,
      details: { turn_key: turnKey, expected_phase: expected, phase: got },
    },
  );

export const turnAlreadySettled = (turnKey: string, settlementId: string): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'conflict',
    'turn_already_settled',
    'The turn is already settled under another settlement identity.',
    {
      nextAction: 'read the existing settlement; a turn is never settled twice',
      details: { turn_key: turnKey, settlement_id: settlementId },
    },
  );

export const settlementInvalid = (message: string, turnKey: string): SessionError =>
  new OwnerError(SESSION_ERRORS, 'rejected', 'settlement_invalid', message, {
    nextAction: 'settle with a status that matches the recorded phases',
    details: { turn_key: turnKey },
  });

export const settlementIdentityMismatch = (settlementId: string): SessionError =>
  new OwnerError(
    SESSION_ERRORS,
    'conflict',
    'settlement_identity_mismatch',
    'The settlement id was already used with a different request.',
    {
      nextAction: 'read the original settlement; use a new settlement id only for a different turn',
      details: { settlement_id: settlementId },
    },
  );
