/**
 * Historical readback of a COPY of `scheduler.db` (the backup verifier's owner reader). A saved
 * timer is not an active schedule: restored timers are data, and nothing here fires, arms or
 * enables one. The copy is never written: SQLite would create -wal/-shm sidecars even for a
 * read-only open of a WAL file, so it is duplicated into a private scratch directory and opened
 * read-only there. For restored automations/ and skills/, use `listAutomations` / `listSkills`
 * on the restored root.
 */
import { RowInvalid, withSqliteCopy, type SqliteDatabase } from '../../store/index.js';
import { sqliteRows, type TableQueries, type TableRows } from '../table-rows.js';
import type { SchedulerFinding, Timer } from './contract.js';
import { MIGRATIONS, decodeTimer, type TimerRow } from './schema.js';

export interface SchedulerHistory {
  readonly owner: 'scheduler';
  readonly schema_version: number | null;
  /** Timers as captured (their `enabled` is the captured fact, not a live state). */
  readonly timers: readonly Timer[];
  readonly findings: readonly SchedulerFinding[];
}

export interface ReadHistoricalOptions {
  /** Where the private scratch copy is made (default: the OS temp dir). */
  readonly scratchDir?: string;
}

const VERIFY = 'run the backup verifier again on a fresh copy, or restore this owner from another backup';

export function readHistoricalFile(copiedFilePath: string, options: ReadHistoricalOptions = {}): SchedulerHistory {
  const findings: SchedulerFinding[] = [];
  const empty = (schemaVersion: number | null): SchedulerHistory => ({ owner: 'scheduler', schema_version: schemaVersion, timers: [], findings });
  const unreadable = (): SchedulerHistory => {
    findings.push({ code: 'scheduler_copy_unreadable', severity: 'error', subject: 'file:scheduler.db', next_action: VERIFY });
    return empty(null);
  };
  const read = (db: SqliteDatabase): SchedulerHistory => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version !== MIGRATIONS.length) {
      findings.push({
        code: 'scheduler_schema_unsupported',
        severity: 'error',
        subject: `schema:${version}`,
        next_action: version > MIGRATIONS.length ? 'read this backup with the loopx version that wrote it or a newer one' : VERIFY,
      });
      return empty(version);
    }
    if (db.pragma('quick_check', { simple: true }) !== 'ok') {
      findings.push({ code: 'scheduler_db_corrupt', severity: 'error', subject: 'file:scheduler.db', next_action: VERIFY });
    }
    return { ...decodeTimers(sqliteRows(db, SCHEDULER_TABLES), findings), schema_version: version };
  };
  return withSqliteCopy(copiedFilePath, read, { scratchDir: options.scratchDir, scratchPrefix: 'loopx-scheduler-historical-', fileName: 'scheduler.db', onUnreadable: unreadable });
}

/** The timers' table, in creation order on either provider. */
export const SCHEDULER_TABLES: TableQueries<'timers'> = {
  timers: { sqlite: 'SELECT * FROM timers ORDER BY rowid', postgresql: 'SELECT * FROM timers ORDER BY seq' },
};

/** The timers decoded from their rows (either provider's); an armed one is restored disabled (a warning). */
export function decodeTimers(rows: TableRows<'timers'>, findings: SchedulerFinding[]): Omit<SchedulerHistory, 'schema_version'> {
  const timers: Timer[] = [];
  for (const row of rows('timers') as unknown as TimerRow[]) {
    try {
      const { create_digest: _digest, ...t } = decodeTimer(row);
      timers.push(t);
      if (t.enabled) {
        findings.push({
          code: 'timer_restored_disabled',
          severity: 'warning',
          subject: `timer:${t.timer_id}`,
          next_action: 'a saved timer is not an active schedule; re-enable it through the scheduler owner after adoption, under a new reset token',
        });
      }
    } catch (err) {
      if (!(err instanceof RowInvalid)) throw err;
      findings.push({ code: 'timer_row_invalid', severity: 'error', subject: `timer:${String(row.timer_id)}`, next_action: VERIFY });
    }
  }
  return { owner: 'scheduler', timers, findings };
}
