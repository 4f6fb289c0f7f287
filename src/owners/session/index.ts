/**
 * Public API of the session owner: Goal-bound agent sessions, session/execution generations,
 * Turn journals and Turn settlement. Live API: `SessionStore` (SQLite `sessions.db` or the
 * in-memory reference). Recovery contract: `readHistorical` reads a copy without authority.
 */
export {
  SESSION_MODE,
  TURN_PHASES,
  TURN_RESULT_KINDS,
  type BeginTurnResult,
  type GoalRef,
  type OpenSessionOptions,
  type Session,
  type SessionMode,
  type SessionStatus,
  type SessionStore,
  type SessionStoreOptions,
  type SettleTurnRequest,
  type SettleTurnResult,
  type SettlementStatus,
  type TurnJournal,
  type TurnPhase,
  type TurnPhaseRecord,
  type TurnResultKind,
  type TurnSettlement,
  type TurnStatus,
} from './contract.js';
export { SESSION_ERROR_CODES, SessionError, isSessionError, type SessionErrorCode } from './errors.js';
export { settlementDigest, turnKeyOf } from './rules.js';
export { memorySessionStore } from './memory.js';
export { openSqliteSessionStore, type SqliteSessionStoreOptions } from './sqlite.js';
export type { ReadHistoricalOptions, SessionFinding, SessionHistory } from './historical.js';
export { recovery } from './recovery.js';
