/**
 * Private SQLite copies (src/store/copy.ts): the source is never opened where it lies, a WAL-era
 * file opens with no sidecars once its copy is marked rollback-journal, and a copy over its byte
 * bound is refused with nothing left behind; a full scratch file system is out of space, never
 * "unreadable". `inPlace` reads the caller's own rollback-journal snapshot where it lies, writing
 * nothing, and still copies a WAL-mode file.
 */
import Database from 'better-sqlite3';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LoopxError } from '../../src/core/errors.js';
import {
  SQLITE_COPY_NO_SPACE,
  SQLITE_COPY_TOO_LARGE,
  SQLITE_COPY_UNREADABLE,
  isOutOfSpace,
  openSqliteCopy,
} from '../../src/store/index.js';
import { mountTmpfs } from '../support/tmpfs.js';

const made: string[] = [];
const temp = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A database of three rows in `mode`: WAL (checkpointed), or rollback journal as `snapshotSqliteDatabase` leaves its snapshots. */
function database(mode: 'WAL' | 'DELETE'): { dir: string; path: string } {
  const dir = temp('loopx-copy-src-');
  const path = join(dir, 'w.db');
  const db = new Database(path);
  db.pragma(`journal_mode = ${mode}`);
  db.exec('CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3)');
  if (mode === 'WAL') db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { dir, path };
}
const walDatabase = (): { dir: string; path: string } => database('WAL');
const rollbackDatabase = (): { dir: string; path: string } => database('DELETE');

describe('openSqliteCopy', () => {
  it('inPlace: a rollback-journal file is read where it lies: nothing is copied, created or written, and closing removes nothing', () => {
    const { dir, path } = rollbackDatabase();
    const before = readFileSync(path);
    const scratchDir = temp('loopx-copy-scratch-');
    const copy = openSqliteCopy(path, { scratchDir, inPlace: true, maxBytes: before.byteLength });
    try {
      expect(copy.db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 3 });
      expect(copy.byteSize).toBe(before.byteLength);
      expect(readdirSync(scratchDir)).toEqual([]);
      expect(readdirSync(dir)).toEqual(['w.db']);
      expect(() => copy.db.exec('INSERT INTO t VALUES (3)')).toThrow(/readonly/);
    } finally {
      copy.close();
    }
    expect(readdirSync(dir)).toEqual(['w.db']);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('inPlace: a WAL-mode file is still copied (a read-only open where it lies would make sidecars), and the bound still holds', () => {
    const { dir, path } = walDatabase();
    const before = readFileSync(path);
    const scratchDir = temp('loopx-copy-scratch-');
    const copy = openSqliteCopy(path, { scratchDir, inPlace: true, rollbackJournal: true, fileName: 'c.db' });
    try {
      expect(copy.db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 3 });
      expect(readdirSync(scratchDir)).toHaveLength(1);
    } finally {
      copy.close();
    }
    expect(readdirSync(dir)).toEqual(['w.db']);
    expect(readFileSync(path).equals(before)).toBe(true);
    const own = rollbackDatabase();
    const size = statSync(own.path).size;
    const e = (() => {
      try {
        openSqliteCopy(own.path, { scratchDir, inPlace: true, maxBytes: size - 1 }).close();
      } catch (x) {
        return x;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(LoopxError);
    expect((e as LoopxError).code).toBe(SQLITE_COPY_TOO_LARGE);
  });

  it('rollbackJournal: the copy of a WAL-era file opens with no -wal/-shm; the source keeps its bytes', () => {
    const { path } = walDatabase();
    const before = readFileSync(path);
    expect([before[18], before[19]]).toEqual([2, 2]);
    const scratchDir = temp('loopx-copy-scratch-');
    const copy = openSqliteCopy(path, { scratchDir, rollbackJournal: true, fileName: 'c.db' });
    try {
      expect(copy.db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 3 });
      expect(copy.byteSize).toBe(before.byteLength);
      const [inner] = readdirSync(scratchDir);
      expect(readdirSync(join(scratchDir, inner!))).toEqual(['c.db']);
    } finally {
      copy.close();
    }
    expect(readdirSync(scratchDir)).toEqual([]);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('the private copy is 0600 whatever the source mode (a read-only 0444 source included)', () => {
    const { path } = walDatabase();
    chmodSync(path, 0o444);
    const scratchDir = temp('loopx-copy-scratch-');
    const copy = openSqliteCopy(path, { scratchDir, rollbackJournal: true, fileName: 'c.db' });
    try {
      const [inner] = readdirSync(scratchDir);
      expect(statSync(join(scratchDir, inner!, 'c.db')).mode & 0o777).toBe(0o600);
      expect(copy.db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 3 });
    } finally {
      copy.close();
    }
    expect(statSync(path).mode & 0o777).toBe(0o444);
  });

  it('maxBytes: a larger copy is refused with sqlite_copy_too_large and its scratch directory removed', () => {
    const { path } = walDatabase();
    const scratchDir = temp('loopx-copy-scratch-');
    expect(() => openSqliteCopy(path, { scratchDir, maxBytes: 100 })).toThrow(
      expect.objectContaining({ code: SQLITE_COPY_TOO_LARGE }),
    );
    expect(readdirSync(scratchDir)).toEqual([]);
  });

  it('a file that is not SQLite is refused with sqlite_copy_unreadable, path or bytes', () => {
    const dir = temp('loopx-copy-src-');
    const path = join(dir, 'x.db');
    writeFileSync(path, 'SQLite format 3\u0000 but then nothing');
    const scratchDir = temp('loopx-copy-scratch-');
    expect(() => openSqliteCopy(path, { scratchDir })).toThrow(
      expect.objectContaining({ code: SQLITE_COPY_UNREADABLE }),
    );
    expect(() => openSqliteCopy(readFileSync(path), { scratchDir })).toThrow(
      expect.objectContaining({ code: SQLITE_COPY_UNREADABLE }),
    );
    expect(readdirSync(scratchDir)).toEqual([]);
  });
});

describe('out of space', () => {
  const errno = (code: string): Error => Object.assign(new Error(code), { code });

  it('isOutOfSpace: ENOSPC, EDQUOT, SQLITE_FULL and SQLITE_IOERR_SHMSIZE, also as the cause of a wrapping error — nothing else', () => {
    for (const code of ['ENOSPC', 'EDQUOT', 'SQLITE_FULL', 'SQLITE_IOERR_SHMSIZE']) {
      expect(isOutOfSpace(errno(code))).toBe(true);
      expect(
        isOutOfSpace(
          new LoopxError('rejected', 'wrapper', 'm', {
            cause: new LoopxError('rejected', 'inner', 'm', { cause: errno(code) }),
          }),
        ),
      ).toBe(true);
    }
    for (const code of ['EIO', 'EACCES', 'SQLITE_CORRUPT', 'SQLITE_IOERR_WRITE', undefined])
      expect(isOutOfSpace(errno(String(code)))).toBe(false);
    expect(isOutOfSpace('ENOSPC')).toBe(false);
  });

  it('a copy into a full scratch file system is sqlite_copy_no_space, not sqlite_copy_unreadable, and leaves nothing behind', (ctx) => {
    const fs = mountTmpfs(join(temp('loopx-copy-enospc-'), 'mnt'), 1024 * 1024);
    if (!fs) return ctx.skip(); // mountTmpfs throws instead under CI=true
    try {
      const src = join(temp('loopx-copy-big-'), 'big.db');
      const db = new Database(src);
      db.exec('CREATE TABLE t (b BLOB)');
      db.prepare('INSERT INTO t VALUES (randomblob(2 * 1024 * 1024))').run();
      db.close();
      let code: string | undefined;
      try {
        openSqliteCopy(src, { scratchDir: fs.dir }).close();
      } catch (e) {
        code = (e as LoopxError).code;
        expect(isOutOfSpace(e)).toBe(true);
      }
      expect(code).toBe(SQLITE_COPY_NO_SPACE);
      expect(code).not.toBe(SQLITE_COPY_UNREADABLE);
      expect(readdirSync(fs.dir)).toEqual([]);
    } finally {
      fs.unmount();
    }
  });
});
