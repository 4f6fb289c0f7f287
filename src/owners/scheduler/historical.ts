/**
 * Historical readback of a COPY of `scheduler.db` (the backup verifier's owner reader), through
 * the owners' one SQLite history reader (sqlite-history.ts: a private read-only copy, never
 * written). A saved timer is not an active schedule: restored timers are data, and nothing here
 * fires, arms or enables one. For restored automations/ and skills/, use `listAutomations` /
 * `listSkills` on the restored root.
 */
import { RowInvalid } from '../../store/index.js';
import {
  VERIFY_COPY_AGAIN as VERIFY,
  readSqliteHistory,
  type ReadSqliteHistoryOptions,
  type SqliteHistorySpec,
} from '../sqlite-history.js';
import type { TableRows } from '../table-rows.js';
import type { SchedulerFinding, Timer } from './contract.js';
import { decodeTimer, type TimerRow } from './schema.js';
import { SCHEDULER_TABLES, MIGRATIONS } from './sql.js';

export interface SchedulerHistory {
  readonly owner: 'scheduler';
  readonly schema_version: number | null;
  /** Timers as captured (their `enabled` is the captured fact, not a live state). */
  readonly timers: readonly Timer[];
  readonly findings: readonly SchedulerFinding[];
}

export type { ReadSqliteHistoryOptions as ReadHistoricalOptions } from '../sqlite-history.js';

/** The timers read from a copy of `scheduler.db` (sqlite-history.ts). */
export const readHistoricalFile = (copiedFilePath: string, options: ReadSqliteHistoryOptions = {}): SchedulerHistory =>
  readSqliteHistory(SCHEDULER_HISTORY, copiedFilePath, options);

/** The timers decoded from their rows (either provider's); an armed one is restored disabled (a warning). */
export function decodeTimers(
  rows: TableRows<'timers'>,
  findings: SchedulerFinding[],
): Omit<SchedulerHistory, 'schema_version'> {
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
          next_action:
            'a saved timer is not an active schedule; re-enable it through the scheduler owner after adoption, under a new reset token',
        });
      }
    } catch (err) {
      if (!(err instanceof RowInvalid)) throw err;
      findings.push({
        code: 'timer_row_invalid',
        severity: 'error',
        subject: `timer:${String(row.timer_id)}`,
        next_action: VERIFY,
      });
    }
  }
  return { owner: 'scheduler', timers, findings };
}

const SCHEDULER_HISTORY: SqliteHistorySpec<'timers', SchedulerHistory> = {
  owner: 'scheduler',
  file: 'scheduler.db',
  version: MIGRATIONS.length,
  tables: SCHEDULER_TABLES,
  none: () => ({ timers: [] }),
  decode: decodeTimers,
};
