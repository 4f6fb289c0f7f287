/**
 * Public API of the scheduler owner: Goal timers with cadence, reset-token fencing and
 * acknowledge-once firing (missed occurrences are skipped, never replayed); automations and
 * skills listed as disabled data. Live API: `SchedulerStore` (async), the owner over a
 * `SchedulerPort` — SQLite `scheduler.db`, a PostgreSQL table or the in-memory reference. Recovery contract:
 * `readHistorical` reads a copy of scheduler.db without arming anything.
 */
export {
  CADENCE_FREQUENCIES,
  type AckFireRequest,
  type Cadence,
  type CadenceFrequency,
  type CreateTimerRequest,
  type DataDirectoryEntry,
  type DataDirectoryListing,
  type ResetTimerRequest,
  type SchedulerFinding,
  type SchedulerStore,
  type SchedulerStoreOptions,
  type Timer,
  type TimerWriteResult,
} from './contract.js';
export {
  SCHEDULER_ERROR_CODES,
  SCHEDULER_ERRORS,
  isSchedulerError,
  type SchedulerError,
  type SchedulerErrorCode,
} from './errors.js';
export { parseCadence } from './rules.js';
export type { SchedulerPort, SchedulerWrite, StoredTimer } from './port.js';
export {
  memorySchedulerStore,
  openSqliteSchedulerStore,
  schedulerStore,
  type SqliteSchedulerStoreOptions,
} from './scheduler.js';
export {
  createMemorySchedulerState,
  memorySchedulerPort,
  type MemorySchedulerPortOptions,
  type MemorySchedulerState,
} from './memory.js';
export { openSqliteSchedulerPort, type SqliteSchedulerPortOptions } from './sqlite.js';
export { openPgSchedulerPort } from './postgres.js';
export { SCHEDULER_PG_MIGRATIONS, SCHEDULER_SQL } from './sql.js';
export { listAutomations, listSkills } from './data-dirs.js';
export type { ReadHistoricalOptions, SchedulerHistory } from './historical.js';
export { recovery } from './recovery.js';
