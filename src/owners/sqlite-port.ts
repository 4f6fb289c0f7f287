/**
 * What every SQLite storage-port implementation of an owner shares (session, quota, scheduler, effect):
 * opening its database, snapshot reads, and the commit protocol of port.ts — BEGIN IMMEDIATE →
 * the implementation checks the write's precondition on the current rows and writes → COMMIT.
 * Only a failing COMMIT is `ambiguous`; anything failing before it is rolled back and `failed`
 * (nothing written). The work provider runs the same protocol (`immediateTransaction`). It decides
 * nothing about the owner's rows.
 */
import { isLoopxError } from '../core/index.js';
import { RowInvalid, SQLITE_PROVIDER, openSqlite, setup, type Migration, type SqliteDatabase } from '../store/index.js';
import {
  APPLIED,
  conflictOf,
  providerClosed,
  storeCorrupt,
  storeReadFailed,
  type CommitResult,
  type ConflictReason,
  type StoreOwner,
} from './port.js';

export interface SqlitePortOptions {
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

export interface SqlitePortBase {
  readonly provider: string;
  readonly db: SqliteDatabase;
  /** One snapshot-consistent read. A closed port refuses; a row that does not decode is `<owner>_store_corrupt`. */
  read<T>(fn: () => T): Promise<T>;
  /** Runs `body` in one IMMEDIATE transaction: it returns a conflict reason (nothing is written) or writes and returns undefined. */
  commit(body: () => ConflictReason | undefined): Promise<CommitResult>;
  close(): void;
}

const isBusy = (e: unknown): boolean =>
  typeof (e as { code?: unknown })?.code === 'string' && (e as { code: string }).code.startsWith('SQLITE_BUSY');

/** The prepared statements of the commit protocol on one connection. */
export interface TransactionStatements {
  readonly db: SqliteDatabase;
  readonly begin: { run(): unknown };
  readonly commit: { run(): unknown };
  readonly rollback: { run(): unknown };
}

export const transactionStatements = (db: SqliteDatabase): TransactionStatements => ({
  db,
  begin: db.prepare('BEGIN IMMEDIATE'),
  commit: db.prepare('COMMIT'),
  rollback: db.prepare('ROLLBACK'),
});

/** What `body` decided: commit its writes and answer `value`, or roll back and answer `value`. */
export type TransactionDecision<T> = { readonly commit: boolean; readonly value: T };

/**
 * The commit protocol of every SQLite store of an owner (the ports here and the work provider):
 * BEGIN IMMEDIATE → `body` checks and writes → COMMIT. A failing BEGIN, or `body` throwing, is
 * rolled back and `failed` (nothing written) — unless `rethrow` throws first (e.g. a row that does
 * not decode). Only a failing COMMIT is `ambiguous`: WAL frames may or may not be durable.
 */
export function immediateTransaction<T>(
  tx: TransactionStatements,
  body: () => TransactionDecision<T>,
  rethrow: (e: unknown) => void = () => {},
): T | { readonly status: 'failed'; readonly code: string } | { readonly status: 'ambiguous' } {
  const rollback = (): void => {
    if (tx.db.inTransaction) tx.rollback.run();
  };
  try {
    tx.begin.run();
  } catch (e) {
    return { status: 'failed', code: isBusy(e) ? 'provider_busy' : 'provider_write_failed' };
  }
  let decided: TransactionDecision<T>;
  try {
    decided = body();
    if (!decided.commit) {
      rollback();
      return decided.value;
    }
  } catch (e) {
    // Nothing is committed before COMMIT: rolling back proves absence.
    try {
      rollback();
    } catch {
      /* still uncommitted: no COMMIT was issued */
    }
    rethrow(e);
    return { status: 'failed', code: isBusy(e) ? 'provider_busy' : 'provider_write_failed' };
  }
  try {
    tx.commit.run();
  } catch {
    try {
      rollback();
    } catch {
      /* the outcome stays ambiguous either way */
    }
    return { status: 'ambiguous' };
  }
  return decided.value;
}

/** Opens `path` with the owner's migrations. `owner` names it in errors; `file` is its name in a root (e.g. `sessions.db`). */
export function openSqlitePort(
  path: string,
  migrations: readonly Migration[],
  owner: StoreOwner,
  file: string,
  options: SqlitePortOptions = {},
): SqlitePortBase {
  const db = openSqlite(path, options.synchronous ? { synchronous: options.synchronous } : {});
  try {
    setup(db, migrations);
  } catch (e) {
    db.close();
    throw e;
  }
  let closed = false;
  const tx = transactionStatements(db);
  // Our own rows failing to decode means the file was damaged under us: stop, never guess.
  const corrupt = (e: RowInvalid) => storeCorrupt(owner, file, e);

  return {
    provider: SQLITE_PROVIDER,
    db,
    async read<T>(fn: () => T): Promise<T> {
      if (closed) throw providerClosed(owner);
      try {
        return db.transaction(fn)();
      } catch (e) {
        if (e instanceof RowInvalid) throw corrupt(e);
        if (isLoopxError(e)) throw e;
        throw storeReadFailed(owner, file, e);
      }
    },
    async commit(body): Promise<CommitResult> {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      return immediateTransaction(
        tx,
        () => {
          const reason = body();
          return reason === undefined ? { commit: true, value: APPLIED } : { commit: false, value: conflictOf(reason) };
        },
        (e) => {
          if (e instanceof RowInvalid) throw corrupt(e);
        },
      );
    },
    close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}
