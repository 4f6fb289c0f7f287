/**
 * The one SQLite commit protocol (`immediateTransaction`) every owner's SQLite store runs — the
 * ports and the work provider — on a real database, with its statements failing where a disk or a
 * second writer would make them fail: a refused BEGIN and a throwing body are `failed` with nothing
 * written, a declined write is rolled back, and only a failing COMMIT is `ambiguous`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { immediateTransaction, transactionStatements } from '../../src/owners/sqlite-port.js';

function database() {
  const db = new Database(join(mkdtempSync(join(tmpdir(), 'loopx-sqlite-port-')), 'x.db'));
  db.exec('CREATE TABLE t (v INTEGER)');
  const count = () => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
  const insert = db.prepare('INSERT INTO t (v) VALUES (1)');
  return { db, count, insert: () => void insert.run() };
}

const sqliteError = (code: string) => Object.assign(new Error(code), { code });

describe('immediateTransaction', () => {
  it('commits what the body wrote and answers its value', () => {
    const { db, count, insert } = database();
    expect(immediateTransaction(transactionStatements(db), () => (insert(), { commit: true, value: 'done' }))).toBe(
      'done',
    );
    expect([count(), db.inTransaction]).toEqual([1, false]);
  });

  it('rolls back a write the body declines and answers its value', () => {
    const { db, count, insert } = database();
    expect(
      immediateTransaction(transactionStatements(db), () => (insert(), { commit: false, value: 'conflict' })),
    ).toBe('conflict');
    expect([count(), db.inTransaction]).toEqual([0, false]);
  });

  it('a refused BEGIN is failed: provider_busy for a busy database', () => {
    const { db, count } = database();
    const tx = {
      ...transactionStatements(db),
      begin: {
        run: () => {
          throw sqliteError('SQLITE_BUSY');
        },
      },
    };
    expect(immediateTransaction(tx, () => ({ commit: true, value: 'never' }))).toEqual({
      status: 'failed',
      code: 'provider_busy',
    });
    expect(count()).toBe(0);
  });

  it('a body that throws is rolled back and failed; rethrow sees it first', () => {
    const { db, count, insert } = database();
    const tx = transactionStatements(db);
    expect(
      immediateTransaction(
        tx,
        () => (
          insert(),
          (() => {
            throw new Error('write');
          })()
        ),
      ),
    ).toEqual({ status: 'failed', code: 'provider_write_failed' });
    expect([count(), db.inTransaction]).toEqual([0, false]);
    const seen = new Error('damaged row');
    expect(() =>
      immediateTransaction(
        tx,
        () => {
          insert();
          throw seen;
        },
        (e) => {
          throw e;
        },
      ),
    ).toThrow(seen);
    expect([count(), db.inTransaction]).toEqual([0, false]);
  });

  it('only a failing COMMIT is ambiguous, and the connection is left usable', () => {
    const { db, count, insert } = database();
    const tx = {
      ...transactionStatements(db),
      commit: {
        run: () => {
          throw sqliteError('SQLITE_IOERR');
        },
      },
    };
    expect(immediateTransaction(tx, () => (insert(), { commit: true, value: 'applied' }))).toEqual({
      status: 'ambiguous',
    });
    expect(db.inTransaction).toBe(false);
    expect(immediateTransaction(transactionStatements(db), () => (insert(), { commit: true, value: 'again' }))).toBe(
      'again',
    );
    expect(count()).toBe(1);
  });
});
