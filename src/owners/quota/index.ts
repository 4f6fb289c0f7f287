/**
 * Public API of the quota owner: the spend ledger keyed by settlement identity (no double
 * debit), voids, and windowed totals. Live API: `QuotaLedger` (async), the owner over a
 * `QuotaPort` — SQLite `quota.db` or the in-memory reference. Recovery contract:
 * `readHistorical` reads a copy of quota.db as history, without admission.
 */
export type {
  ListSpendsFilter,
  QuotaGoal,
  QuotaLedger,
  QuotaLedgerOptions,
  QuotaTotal,
  QuotaWindow,
  SpendEntry,
  SpendRequest,
  SpendResult,
  SpendStatus,
  VoidResult,
} from './contract.js';
export { QUOTA_ERROR_CODES, QUOTA_ERRORS, isQuotaError, type QuotaError, type QuotaErrorCode } from './errors.js';
export { rollingWindow, spendDigest } from './rules.js';
export type { QuotaPort, QuotaWrite, SpendQuery, SpendSums } from './port.js';
export { memoryQuotaLedger, openSqliteQuotaLedger, quotaLedger, type SqliteQuotaLedgerOptions } from './quota.js';
export {
  createMemoryQuotaState,
  memoryQuotaPort,
  type MemoryQuotaPortOptions,
  type MemoryQuotaState,
} from './memory.js';
export { openSqliteQuotaPort, type SqliteQuotaPortOptions } from './sqlite.js';
export { QUOTA_PG_MIGRATIONS, QUOTA_SQL } from './sql.js';
export { openPgQuotaPort } from './postgres.js';
export type { QuotaFinding, QuotaHistory, ReadHistoricalOptions } from './historical.js';
export { recovery } from './recovery.js';
