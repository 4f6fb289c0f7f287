/**
 * Read-only access to a COPY of a SQLite database (the owners' historical readers). The copy is
 * never opened where it lies: SQLite would create -wal/-shm sidecars even for a read-only open of
 * a WAL file, so it is duplicated into a private scratch directory, opened read-only there, and
 * the scratch directory is removed when the reader is done. The one exception is `inPlace`: a
 * rollback-journal snapshot the caller has just made itself, which is opened read-only as it is.
 */
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  fstatSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasCode, rejected } from '../core/index.js';
import { openSqlite, type SqliteDatabase } from './sqlite.js';

/** The code of the refusal thrown when a copy is not a SQLite database that opens. */
export const SQLITE_COPY_UNREADABLE = 'sqlite_copy_unreadable';

/** The code of the refusal thrown when the scratch file system has no room for a copy (never "unreadable"). */
export const SQLITE_COPY_NO_SPACE = 'sqlite_copy_no_space';

// SQLite reports ENOSPC on a write as SQLITE_FULL, and a -shm file it cannot extend (WAL mode on a
// full file system) as SQLITE_IOERR_SHMSIZE.
const NO_SPACE_CODES: ReadonlySet<unknown> = new Set([
  'ENOSPC',
  'EDQUOT',
  'SQLITE_FULL',
  'SQLITE_IOERR_SHMSIZE',
  SQLITE_COPY_NO_SPACE,
]);

/**
 * Whether `e`, or an error in its `cause` chain, is a file system out of space or over quota
 * (errno ENOSPC/EDQUOT, SQLite's SQLITE_FULL / SQLITE_IOERR_SHMSIZE). A caller that turns failures
 * into findings must let these through: a full disk says nothing about the bytes being read.
 */
export function isOutOfSpace(e: unknown): boolean {
  for (let at = e, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    if (NO_SPACE_CODES.has((at as NodeJS.ErrnoException).code)) return true;
  }
  return false;
}

const noSpace = (cause: unknown): Error =>
  rejected(SQLITE_COPY_NO_SPACE, 'The scratch file system has no room for a database copy.', {
    nextAction: 'free space on that file system, then retry',
    cause,
  });

const SQLITE_MAGIC = 'SQLite format 3\u0000';

/** Whether `bytes` start with the SQLite file header magic. */
export function hasSqliteHeader(bytes: Uint8Array): boolean {
  return bytes.byteLength >= 16 && Buffer.from(bytes.buffer, bytes.byteOffset, 16).toString('latin1') === SQLITE_MAGIC;
}

/** Whether `path` is a regular file (not a link) whose first 16 bytes are the SQLite magic. Never throws. */
export function isSqliteFile(path: string): boolean {
  try {
    if (!lstatSync(path).isFile()) return false;
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const head = Buffer.alloc(16);
      return readSync(fd, head, 0, 16, 0) === 16 && hasSqliteHeader(head);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

export interface SqliteCopyOptions {
  /** Where the private scratch directory is made (default: the OS temp dir). */
  readonly scratchDir?: string;
  /** `mkdtemp` prefix of the scratch directory. */
  readonly scratchPrefix?: string;
  /** Name of the private copy inside the scratch directory. */
  readonly fileName?: string;
  /**
   * Mark the private copy rollback-journal (header bytes 18/19 from 2 to 1) before opening it, so a
   * WAL-era file opens without -wal/-shm sidecars. Only the copy is changed.
   */
  readonly rollbackJournal?: boolean;
  /** Refuse (`sqlite_copy_too_large`) when the private copy is larger than this. */
  readonly maxBytes?: number;
  /**
   * The source path is the caller's own private file — a snapshot it has just made — so it is
   * opened read-only where it lies instead of copied, when its header says rollback journal (such
   * an open creates no file and writes nothing). A WAL-mode file is copied as usual.
   */
  readonly inPlace?: boolean;
}

/** The code of the refusal thrown when a copy exceeds `maxBytes`. */
export const SQLITE_COPY_TOO_LARGE = 'sqlite_copy_too_large';

/** A read-only connection to a private copy; `close()` closes it and removes the scratch directory. */
export interface SqliteCopy {
  readonly db: SqliteDatabase;
  /** Bytes of the private copy (as copied, before any open). */
  readonly byteSize: number;
  close(): void;
}

const unreadable = (cause?: unknown): Error =>
  rejected(SQLITE_COPY_UNREADABLE, 'A database copy is not a readable SQLite database.', {
    nextAction: 'check that the copy is complete',
    ...(cause === undefined ? {} : { cause }),
  });

/** The file's size (`sqlite_copy_too_large` over `maxBytes`) and its 100-byte header (`sqlite_copy_unreadable` unless SQLite's). */
function checkedHeader(fd: number, options: SqliteCopyOptions): { readonly size: number; readonly header: Buffer } {
  const size = fstatSync(fd).size;
  if (options.maxBytes !== undefined && size > options.maxBytes) {
    throw rejected(SQLITE_COPY_TOO_LARGE, `A database copy exceeds ${options.maxBytes} bytes.`, {
      nextAction: 'inspect it with sqlite3 directly',
      details: { byte_size: size },
    });
  }
  const header = Buffer.alloc(100);
  if (readSync(fd, header, 0, 100, 0) !== 100 || !hasSqliteHeader(header)) throw unreadable();
  return { size, header };
}

/** `path` opened read-only with its header read (a damaged file fails here); out of space or unreadable as typed refusals. */
function openReadOnly(path: string): SqliteDatabase {
  let db: SqliteDatabase | undefined;
  try {
    db = openSqlite(path, { readonly: true });
    db.pragma('schema_version');
    return db;
  } catch (e) {
    db?.close();
    throw isOutOfSpace(e) ? noSpace(e) : unreadable(e);
  }
}

/**
 * Checks the private copy (its size against `maxBytes`, its header) and, with `rollbackJournal`,
 * rewrites its journal-mode header bytes in place: a file copy plus a two-byte write, so a large
 * database never passes through this process's memory. Returns the copy's size.
 */
function prepareCopy(path: string, options: SqliteCopyOptions): number {
  const fd = openSync(path, constants.O_RDWR | constants.O_NOFOLLOW);
  try {
    const { size, header } = checkedHeader(fd, options);
    if (options.rollbackJournal && (header[18] === 2 || header[19] === 2)) {
      writeSync(fd, Buffer.from([header[18] === 2 ? 1 : header[18]!, header[19] === 2 ? 1 : header[19]!]), 0, 2, 18);
    }
    return size;
  } finally {
    closeSync(fd);
  }
}

/**
 * Duplicate `source` — a path to a SQLite file, or the bytes of a SQLite image — into a new private
 * scratch directory and open it read-only there. A path is first checked with `isSqliteFile`; a
 * path is copied with COPYFILE_EXCL, bytes are written owner-only and exclusively.
 *
 * Throws `sqlite_copy_unreadable` (rejected; nothing is left behind) when the source is not SQLite
 * or the copy cannot be opened and its header read, and `sqlite_copy_no_space` when the scratch file
 * system is full or over quota (at any step, opening included). Other failures to make the scratch
 * directory or to write the copy are thrown as they are (the scratch directory is removed first).
 */
export function openSqliteCopy(source: string | Uint8Array, options: SqliteCopyOptions = {}): SqliteCopy {
  if (typeof source === 'string' ? !isSqliteFile(source) : !hasSqliteHeader(source)) throw unreadable();
  if (options.inPlace && typeof source === 'string') {
    const own = openInPlace(source, options);
    if (own !== undefined) return own;
  }
  let scratch: string;
  try {
    scratch = mkdtempSync(join(options.scratchDir ?? tmpdir(), options.scratchPrefix ?? 'loopx-sqlite-copy-'));
  } catch (e) {
    throw isOutOfSpace(e) ? noSpace(e) : e;
  }
  const dispose = (): void => rmSync(scratch, { recursive: true, force: true });
  let db: SqliteDatabase | undefined;
  let byteSize = 0;
  try {
    const path = join(scratch, options.fileName ?? 'copy.db');
    if (typeof source === 'string') {
      copyFileSync(source, path, constants.COPYFILE_EXCL);
      chmodSync(path, 0o600); // the copy is ours alone, whatever the source's mode (0444 included)
    } else writeFileSync(path, source, { mode: 0o600, flag: 'wx' });
    byteSize = prepareCopy(path, options);
    db = openReadOnly(path);
  } catch (e) {
    try {
      db?.close();
    } finally {
      dispose();
    }
    throw isOutOfSpace(e) && !hasCode(e, SQLITE_COPY_NO_SPACE) ? noSpace(e) : e;
  }
  const handle = db;
  return {
    db: handle,
    byteSize,
    close: () => {
      try {
        handle.close();
      } finally {
        dispose();
      }
    },
  };
}

/**
 * `inPlace`: the caller's own rollback-journal file opened read-only where it lies (its size checked
 * against `maxBytes`); undefined when its header says WAL, so the caller copies it instead.
 */
function openInPlace(path: string, options: SqliteCopyOptions): SqliteCopy | undefined {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  let size: number;
  try {
    const checked = checkedHeader(fd, options);
    if (checked.header[18] !== 1 || checked.header[19] !== 1) return undefined;
    size = checked.size;
  } finally {
    closeSync(fd);
  }
  const db = openReadOnly(path);
  return { db, byteSize: size, close: () => db.close() };
}

export interface WithSqliteCopyOptions<T> extends SqliteCopyOptions {
  /** The result when the source is not SQLite or the copy does not open (instead of throwing `sqlite_copy_unreadable`). */
  readonly onUnreadable?: () => T;
}

/**
 * `fn` over a read-only private copy of `source` (see `openSqliteCopy`); the copy is closed and
 * removed afterwards, whatever `fn` does. `onUnreadable` answers only for a copy that does not
 * open; errors of `fn` are never mapped.
 */
export function withSqliteCopy<T>(
  source: string | Uint8Array,
  fn: (db: SqliteDatabase) => T,
  options: WithSqliteCopyOptions<T> = {},
): T {
  let copy: SqliteCopy;
  try {
    copy = openSqliteCopy(source, options);
  } catch (e) {
    if (options.onUnreadable !== undefined && hasCode(e, SQLITE_COPY_UNREADABLE)) return options.onUnreadable();
    throw e;
  }
  try {
    return fn(copy.db);
  } finally {
    copy.close();
  }
}
