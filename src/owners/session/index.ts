/**
 * Public API of the session owner: Goal-bound agent sessions, session/execution generations,
 * Turn journals and Turn settlement. Live API: `SessionStore` (async), the owner over a
 * `SessionPort` — SQLite `sessions.db`, PostgreSQL tables or the in-memory reference; a new provider implements the
 * port in its own file. Recovery contract: `readHistorical` reads a copy without authority.
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
export {
  SESSION_ERROR_CODES,
  SESSION_ERRORS,
  isSessionError,
  type SessionError,
  type SessionErrorCode,
} from './errors.js';
export { settlementDigest, turnKeyOf } from './rules.js';
export type { SessionPort, SessionQuery, SessionRows, SessionWrite } from './port.js';
export { memorySessionStore, openSqliteSessionStore, sessionStore, type SqliteSessionStoreOptions } from './session.js';
export {
  createMemorySessionState,
  memorySessionPort,
  type MemorySessionPortOptions,
  type MemorySessionState,
} from './memory.js';
export { openSqliteSessionPort, type SqliteSessionPortOptions } from './sqlite.js';
export { openPgSessionPort } from './postgres.js';
export { SESSION_PG_MIGRATIONS, SESSION_SQL } from './sql.js';
export type { ReadHistoricalOptions, SessionFinding, SessionHistory } from './historical.js';
export { recovery } from './recovery.js';
