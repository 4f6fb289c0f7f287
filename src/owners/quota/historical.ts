/**
 * Historical readback of a COPY of `quota.db` (the backup verifier's owner reader), through the
 * owners' one SQLite history reader (sqlite-history.ts: a private read-only copy, never written).
 * A restored ledger is history: it grants no admission and is never debited again.
 */
import type { OwnerFinding } from '../contract.js';
import { RowInvalid } from '../../store/index.js';
import {
  VERIFY_COPY_AGAIN as VERIFY,
  readSqliteHistory,
  type ReadSqliteHistoryOptions,
  type SqliteHistorySpec,
} from '../sqlite-history.js';
import type { TableRows } from '../table-rows.js';
import type { SpendEntry } from './contract.js';
import { spendDigest } from './rules.js';
import { decodeSpend, type SpendRow } from './schema.js';
import { QUOTA_TABLES, MIGRATIONS } from './sql.js';

/** Subjects are `<kind>:<id>` — ids only. */
export type QuotaFinding = OwnerFinding;

export interface QuotaHistory {
  readonly owner: 'quota';
  readonly schema_version: number | null;
  readonly entries: readonly SpendEntry[];
  readonly findings: readonly QuotaFinding[];
}

export type { ReadSqliteHistoryOptions as ReadHistoricalOptions } from '../sqlite-history.js';

/** The ledger read from a copy of `quota.db` (sqlite-history.ts). */
export const readHistoricalFile = (copiedFilePath: string, options: ReadSqliteHistoryOptions = {}): QuotaHistory =>
  readSqliteHistory(QUOTA_HISTORY, copiedFilePath, options);

/** The ledger decoded from its rows (either provider's). */
export function decodeQuota(rows: TableRows<'spends'>, findings: QuotaFinding[]): Omit<QuotaHistory, 'schema_version'> {
  const entries: SpendEntry[] = [];
  for (const row of rows('spends') as unknown as SpendRow[]) {
    let e: SpendEntry;
    try {
      e = decodeSpend(row);
    } catch (err) {
      if (!(err instanceof RowInvalid)) throw err;
      findings.push({
        code: 'quota_row_invalid',
        severity: 'error',
        subject: `spend:${String(row.effect_id)}`,
        next_action: VERIFY,
      });
      continue;
    }
    if (e.request_digest !== spendDigest(e)) {
      findings.push({
        code: 'quota_request_digest_mismatch',
        severity: 'error',
        subject: `spend:${e.effect_id}`,
        next_action: VERIFY,
      });
      continue;
    }
    entries.push(e);
  }
  if (entries.length > 0) {
    findings.push({
      code: 'quota_ledger_historical',
      severity: 'warning',
      subject: 'file:quota.db',
      next_action:
        'keep the ledger as history; new spend goes through current admission under the adopted Goal lifetime',
    });
  }
  return { owner: 'quota', entries, findings };
}

const QUOTA_HISTORY: SqliteHistorySpec<'spends', QuotaHistory> = {
  owner: 'quota',
  file: 'quota.db',
  version: MIGRATIONS.length,
  tables: QUOTA_TABLES,
  none: () => ({ entries: [] }),
  decode: decodeQuota,
};
