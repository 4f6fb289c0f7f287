/**
 * SQLite online snapshots for the backup producer. The source is opened read-only and copied with
 * SQLite's backup API while other connections (in this or other processes) may keep writing: the
 * copy is made in one backup step, i.e. inside one read transaction, so it is a committed state of
 * the source and cannot be restarted forever by a busy writer. The snapshot is then switched to
 * journal_mode=DELETE (it must not claim a WAL it does not have), checked with
 * `PRAGMA integrity_check`, and fsynced. This module never writes to the source database, and it
 * refuses to overwrite an existing destination.
 */
import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, fsyncSync, openSync, constants } from 'node:fs';
import { rejected } from '../core/index.js';

export interface SqliteSnapshotFacts {
  readonly sqliteVersion: string;
  readonly sqliteSourceId: string;
  readonly pageCount: number;
  readonly pageSize: number;
  /** Always 'ok': anything else is a refusal. */
  readonly integrity: 'ok';
}

const snapshotFailed = (step: string, cause: unknown) =>
  rejected('sqlite_snapshot_failed', `The SQLite online snapshot of a database failed: ${step}.`, {
    cause,
    nextAction: 'check the database file, then retry',
  });

/** Pages per backup step: "all of them", so the whole copy is one read transaction. */
const ALL_PAGES = 0x7fffffff;

/**
 * Copy the database at `sourcePath` into the new file `destPath` (which must not exist) and check
 * the copy. Throws `sqlite_snapshot_failed` when the source cannot be read as SQLite and
 * `sqlite_snapshot_integrity_failed` when the copy does not pass `integrity_check`.
 */
export async function snapshotSqliteDatabase(sourcePath: string, destPath: string): Promise<SqliteSnapshotFacts> {
  if (existsSync(destPath))
    throw rejected(
      'sqlite_snapshot_destination_exists',
      'The snapshot destination already exists; a snapshot never overwrites a file.',
    );
  let source: Database.Database;
  try {
    source = new Database(sourcePath, { readonly: true, fileMustExist: true });
  } catch (e) {
    throw snapshotFailed('it could not be opened read-only', e);
  }
  try {
    source.pragma('busy_timeout = 10000');
    await source.backup(destPath, { progress: () => ALL_PAGES });
  } catch (e) {
    throw snapshotFailed('the backup step failed', e);
  } finally {
    source.close();
  }
  chmodSync(destPath, 0o600);
  const copy = new Database(destPath, { fileMustExist: true });
  let facts: SqliteSnapshotFacts;
  try {
    copy.pragma('journal_mode = DELETE');
    const rows = copy.pragma('integrity_check') as Array<{ integrity_check: string }>;
    if (rows.length !== 1 || rows[0]!.integrity_check !== 'ok') {
      throw rejected('sqlite_snapshot_integrity_failed', 'A SQLite snapshot did not pass integrity_check.', {
        nextAction: 'check the source database with its owner, then retry',
        details: { findings: rows.length },
      });
    }
    const versions = copy.prepare('SELECT sqlite_version() AS v, sqlite_source_id() AS s').get() as {
      v: string;
      s: string;
    };
    facts = {
      sqliteVersion: versions.v,
      sqliteSourceId: versions.s,
      pageCount: copy.pragma('page_count', { simple: true }) as number,
      pageSize: copy.pragma('page_size', { simple: true }) as number,
      integrity: 'ok',
    };
  } finally {
    copy.close();
  }
  const fd = openSync(destPath, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return facts;
}

/**
 * Rows of `table` in the database at `path`, opened read-only; `undefined` when the table does not
 * exist. Meant for private snapshot copies (a read-only open of a live WAL database may create its
 * -shm file).
 */
export function countSqliteTableRows(path: string, table: string): number | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new TypeError('table names are plain identifiers');
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
    if (exists === undefined) return undefined;
    return (db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

let runtimeIdentity: { sqliteVersion: string; sqliteSourceId: string } | undefined;

/** The SQLite library this process links (what a snapshot taken here was written by). */
export function sqliteRuntimeIdentity(): { sqliteVersion: string; sqliteSourceId: string } {
  if (runtimeIdentity === undefined) {
    const db = new Database(':memory:');
    try {
      const v = db.prepare('SELECT sqlite_version() AS v, sqlite_source_id() AS s').get() as { v: string; s: string };
      runtimeIdentity = { sqliteVersion: v.v, sqliteSourceId: v.s };
    } finally {
      db.close();
    }
  }
  return runtimeIdentity;
}

/**
 * Run SQLite's own crash recovery on a PRIVATE copy of a database that sits beside its copied WAL
 * or rollback journal: open it read-write (a hot journal is rolled back, a WAL is read), fold the
 * WAL into the file and remove it. Never call it on a live store: it writes the file it is given.
 */
export function recoverSqliteCopy(path: string): void {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma('journal_mode = DELETE');
  } finally {
    db.close();
  }
}
