/**
 * Public API of the scheduler owner: Goal timers with cadence, reset-token fencing and
 * acknowledge-once firing (missed occurrences are skipped, never replayed); automations and
 * skills listed as disabled data. Recovery contract: `readHistorical` reads a copy of
 * scheduler.db without arming anything.
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
export { SCHEDULER_ERROR_CODES, SchedulerError, isSchedulerError, type SchedulerErrorCode } from './errors.js';
export { parseCadence } from './rules.js';
export { memorySchedulerStore } from './memory.js';
export { openSqliteSchedulerStore, type SqliteSchedulerStoreOptions } from './sqlite.js';
export { listAutomations, listSkills } from './data-dirs.js';
export type { ReadHistoricalOptions, SchedulerHistory } from './historical.js';
export { recovery } from './recovery.js';
