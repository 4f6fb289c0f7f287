/**
 * Private SQLite copies (src/store/copy.ts): the source is never opened where it lies, a WAL-era
 * file opens with no sidecars once its copy is marked rollback-journal, and a copy over its byte
 * bound is refused with nothing left behind.
 */
import Database from 'better-sqlite3';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SQLITE_COPY_TOO_LARGE, SQLITE_COPY_UNREADABLE, openSqliteCopy } from '../../src/store/index.js';

const made: string[] = [];
const temp = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
};
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function walDatabase(): { dir: string; path: string } {
  const dir = temp('loopx-copy-src-');
  const path = join(dir, 'w.db');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3)');
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { dir, path };
}

describe('openSqliteCopy', () => {
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
    expect(() => openSqliteCopy(path, { scratchDir, maxBytes: 100 })).toThrow(expect.objectContaining({ code: SQLITE_COPY_TOO_LARGE }));
    expect(readdirSync(scratchDir)).toEqual([]);
  });

  it('a file that is not SQLite is refused with sqlite_copy_unreadable, path or bytes', () => {
    const dir = temp('loopx-copy-src-');
    const path = join(dir, 'x.db');
    writeFileSync(path, 'SQLite format 3\u0000 but then nothing');
    const scratchDir = temp('loopx-copy-scratch-');
    expect(() => openSqliteCopy(path, { scratchDir })).toThrow(expect.objectContaining({ code: SQLITE_COPY_UNREADABLE }));
    expect(() => openSqliteCopy(readFileSync(path), { scratchDir })).toThrow(expect.objectContaining({ code: SQLITE_COPY_UNREADABLE }));
    expect(readdirSync(scratchDir)).toEqual([]);
  });
});
