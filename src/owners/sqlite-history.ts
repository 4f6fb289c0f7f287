/**
 * The one historical reader of an owner's SQLite database COPY (the backup verifier's owner
 * reader for session, effect, quota, scheduler — and any owner built the same way). Each owner
 * supplies only what is its own: its name and file, its schema version, its tables and its row
 * decoder (table-rows.ts; the same decoder reads a PostgreSQL capture).
 *
 * Rules it keeps for every owner:
 * - The copy is never written: SQLite would create -wal/-shm sidecars even for a read-only open of
 *   a WAL file, so it is duplicated into a private scratch directory, opened read-only there, and
 *   removed afterwards (`withSqliteCopy`).
 * - Nothing here grants authority, arms, dispatches or debits anything: the rows are history.
 * - Every defect is a finding (code, severity, subject, one next action), collected, never thrown:
 *   `<owner>_copy_unreadable` (not SQLite, or it does not open), `<owner>_schema_unsupported` (a
 *   schema version this reader does not know: nothing is decoded), `<owner>_db_corrupt` (its quick
 *   check fails: the rows are still decoded, for what they are worth). A scratch file system out of
 *   space is thrown (it says nothing about the copy).
 */
import { withSqliteCopy, type SqliteDatabase } from '../store/index.js';
import type { OwnerFinding } from './contract.js';
import { sqliteRows, type TableQueries, type TableRows } from './table-rows.js';

/** What every owner's history holds besides its own lists. */
export interface SqliteHistory {
  readonly owner: string;
  /** The copy's schema version (`PRAGMA user_version`), or null when unreadable. */
  readonly schema_version: number | null;
  readonly findings: readonly OwnerFinding[];
}

export interface SqliteHistorySpec<K extends string, H extends SqliteHistory> {
  /** The owner's name: the prefix of its finding codes and of its scratch directory. */
  readonly owner: H['owner'];
  /** The database's file name: the subject of its file findings (`file:<name>`) and the name of the scratch copy. */
  readonly file: string;
  /** The schema version this reader understands (the length of the owner's migration list). */
  readonly version: number;
  readonly tables: TableQueries<K>;
  /** The owner's lists when nothing is decoded (an unreadable copy, an unknown schema): new, empty ones. */
  none(): Omit<H, keyof SqliteHistory>;
  /** The rows decoded (either provider's), defects and holds pushed onto `findings`. */
  decode(rows: TableRows<K>, findings: OwnerFinding[]): Omit<H, 'schema_version'>;
}

export interface ReadSqliteHistoryOptions {
  /** Where the private scratch copy is made (default: the OS temp dir). */
  readonly scratchDir?: string;
}

/** The next action of a defect in a copy (the readers' own row findings say it too). */
export const VERIFY_COPY_AGAIN =
  'run the backup verifier again on a fresh copy, or restore this owner from another backup';

/** The owner's history read from the copy at `copiedFilePath`, with every finding. */
export function readSqliteHistory<K extends string, H extends SqliteHistory>(
  spec: SqliteHistorySpec<K, H>,
  copiedFilePath: string,
  options: ReadSqliteHistoryOptions = {},
): H {
  const findings: OwnerFinding[] = [];
  const subject = `file:${spec.file}`;
  const nothing = (schemaVersion: number | null): H =>
    ({ owner: spec.owner, schema_version: schemaVersion, ...spec.none(), findings }) as unknown as H;
  const unreadable = (): H => {
    findings.push({
      code: `${spec.owner}_copy_unreadable`,
      severity: 'error',
      subject,
      next_action: VERIFY_COPY_AGAIN,
    });
    return nothing(null);
  };
  const read = (db: SqliteDatabase): H => {
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version !== spec.version) {
      findings.push({
        code: `${spec.owner}_schema_unsupported`,
        severity: 'error',
        subject: `schema:${version}`,
        next_action:
          version > spec.version
            ? 'read this backup with the loopx version that wrote it or a newer one'
            : VERIFY_COPY_AGAIN,
      });
      return nothing(version);
    }
    if (db.pragma('quick_check', { simple: true }) !== 'ok')
      findings.push({ code: `${spec.owner}_db_corrupt`, severity: 'error', subject, next_action: VERIFY_COPY_AGAIN });
    return { ...spec.decode(sqliteRows(db, spec.tables), findings), schema_version: version } as H;
  };
  return withSqliteCopy(copiedFilePath, read, {
    scratchDir: options.scratchDir,
    scratchPrefix: `loopx-${spec.owner}-historical-`,
    fileName: spec.file,
    onUnreadable: unreadable,
  });
}
