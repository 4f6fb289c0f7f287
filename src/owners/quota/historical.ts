/**
 * Historical readback of a COPY of `quota.db` (the backup verifier's owner reader). A restored
 * ledger is history: it grants no admission and is never debited again. The copy is never
 * written: SQLite would create -wal/-shm sidecars even for a read-only open of a WAL file, so it
 * is duplicated into a private scratch directory and opened read-only there.
 */
import type { OwnerFinding } from '../contract.js';
import { RowInvalid, withSqliteCopy, type SqliteDatabase } from '../../store/index.js';
import { sqliteRows, type TableQueries, type TableRows } from '../table-rows.js';
import type { SpendEntry } from './contract.js';
import { spendDigest } from './rules.js';
import { MIGRATIONS, decodeSpend, type SpendRow } from './schema.js';

/** Subjects are `<kind>:<id>` — ids only. */
export type QuotaFinding = OwnerFinding;

export interface QuotaHistory {
  readonly owner: 'quota';
  readonly schema_version: number | null;
  readonly entries: readonly SpendEntry[];
  readonly findings: readonly QuotaFinding[];
}

export interface ReadHistoricalOptions {
  /** Where the private scratch copy is made (default: the OS temp dir). */
  readonly scratchDir?: string;
}

const VERIFY = 'run the backup verifier again on a fresh copy, or restore this owner from another backup';

export function readHistoricalFile(copiedFilePath: string, options: ReadHistoricalOptions = {}): QuotaHistory {
  const findings: QuotaFinding[] = [];
  const empty = (schemaVersion: number | null): QuotaHistory => ({ owner: 'quota', schema_version: schemaVersion, entries: [], findings });
  const unreadable = (): QuotaHistory => {
    findings.push({ code: 'quota_copy_unreadable', severity: 'error', subject: 'file:quota.db', next_action: VERIFY });
    return empty(null);
  };
  const read = (db: SqliteDatabase): QuotaHistory => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version !== MIGRATIONS.length) {
      findings.push({
        code: 'quota_schema_unsupported',
        severity: 'error',
        subject: `schema:${version}`,
        next_action: version > MIGRATIONS.length ? 'read this backup with the loopx version that wrote it or a newer one' : VERIFY,
      });
      return empty(version);
    }
    if (db.pragma('quick_check', { simple: true }) !== 'ok') {
      findings.push({ code: 'quota_db_corrupt', severity: 'error', subject: 'file:quota.db', next_action: VERIFY });
    }
    return { ...decodeQuota(sqliteRows(db, QUOTA_TABLES), findings), schema_version: version };
  };
  return withSqliteCopy(copiedFilePath, read, { scratchDir: options.scratchDir, scratchPrefix: 'loopx-quota-historical-', fileName: 'quota.db', onUnreadable: unreadable });
}

/**
 * The ledger's table, in creation order on either provider. PostgreSQL's BIGINT amount is read as a
 * JavaScript number: exact to 2^53, and one beyond it fails its request digest (a finding), never
 * rounded silently into the ledger.
 */
export const QUOTA_TABLES: TableQueries<'spends'> = {
  spends: { sqlite: 'SELECT * FROM spends ORDER BY rowid', postgresql: 'SELECT *, amount::float8 AS amount FROM spends ORDER BY position' },
};

/** The ledger decoded from its rows (either provider's). */
export function decodeQuota(rows: TableRows<'spends'>, findings: QuotaFinding[]): Omit<QuotaHistory, 'schema_version'> {
  const entries: SpendEntry[] = [];
  for (const row of rows('spends') as unknown as SpendRow[]) {
    let e: SpendEntry;
    try {
      e = decodeSpend(row);
    } catch (err) {
      if (!(err instanceof RowInvalid)) throw err;
      findings.push({ code: 'quota_row_invalid', severity: 'error', subject: `spend:${String(row.effect_id)}`, next_action: VERIFY });
      continue;
    }
    if (e.request_digest !== spendDigest(e)) {
      findings.push({ code: 'quota_request_digest_mismatch', severity: 'error', subject: `spend:${e.effect_id}`, next_action: VERIFY });
      continue;
    }
    entries.push(e);
  }
  if (entries.length > 0) {
    findings.push({
      code: 'quota_ledger_historical',
      severity: 'warning',
      subject: 'file:quota.db',
      next_action: 'keep the ledger as history; new spend goes through current admission under the adopted Goal lifetime',
    });
  }
  return { owner: 'quota', entries, findings };
}
