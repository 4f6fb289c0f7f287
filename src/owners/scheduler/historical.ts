/**
 * Historical readback of a COPY of `scheduler.db` (the backup verifier's owner reader). A saved
 * timer is not an active schedule: restored timers are data, and nothing here fires, arms or
 * enables one. The copy is never written: SQLite would create -wal/-shm sidecars even for a
 * read-only open of a WAL file, so it is duplicated into a private scratch directory and opened
 * read-only there. For restored automations/ and skills/, use `listAutomations` / `listSkills`
 * on the restored root.
 */
import { copyFileSync, closeSync, constants, lstatSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite, type SqliteDatabase } from '../../store/index.js';
import type { SchedulerFinding, Timer } from './contract.js';
import { MIGRATIONS, RowInvalid, decodeTimer, type TimerRow } from './schema.js';

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

const SQLITE_MAGIC = 'SQLite format 3\u0000';
const VERIFY = 'run the backup verifier again on a fresh copy, or restore this owner from another backup';

export function readHistorical(copiedFilePath: string, options: ReadHistoricalOptions = {}): SchedulerHistory {
  const findings: SchedulerFinding[] = [];
  const empty = (schemaVersion: number | null): SchedulerHistory => ({ owner: 'scheduler', schema_version: schemaVersion, timers: [], findings });
  const unreadable = (): SchedulerHistory => {
    findings.push({ code: 'scheduler_copy_unreadable', severity: 'error', subject: 'file:scheduler.db', next_action: VERIFY });
    return empty(null);
  };
  if (!isSqliteFile(copiedFilePath)) return unreadable();

  const scratch = mkdtempSync(join(options.scratchDir ?? tmpdir(), 'loopx-scheduler-historical-'));
  let db: SqliteDatabase | undefined;
  try {
    const path = join(scratch, 'scheduler.db');
    copyFileSync(copiedFilePath, path, constants.COPYFILE_EXCL);
    try {
      db = openSqlite(path, { readonly: true });
      db.pragma('schema_version');
    } catch {
      return unreadable();
    }
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
    const timers: Timer[] = [];
    for (const row of db.prepare('SELECT * FROM timers ORDER BY rowid').all() as TimerRow[]) {
      try {
        const { create_digest: _digest, ...t } = decodeTimer(row);
        timers.push(t);
        if (t.enabled) {
          findings.push({
            code: 'timer_restored_disabled',
            severity: 'info',
            subject: `timer:${t.timer_id}`,
            next_action: 'a saved timer is not an active schedule; re-enable it through the scheduler owner after adoption, under a new reset token',
          });
        }
      } catch (err) {
        if (!(err instanceof RowInvalid)) throw err;
        findings.push({ code: 'timer_row_invalid', severity: 'error', subject: `timer:${String(row.timer_id)}`, next_action: VERIFY });
      }
    }
    return { owner: 'scheduler', schema_version: version, timers, findings };
  } finally {
    db?.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function isSqliteFile(path: string): boolean {
  try {
    if (!lstatSync(path).isFile()) return false;
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const head = Buffer.alloc(16);
      return readSync(fd, head, 0, 16, 0) === 16 && head.toString('latin1') === SQLITE_MAGIC;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}
