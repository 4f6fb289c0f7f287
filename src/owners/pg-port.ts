/**
 * What every PostgreSQL storage-port implementation of an owner shares (session, scheduler, quota,
 * effect): snapshot reads and the commit protocol of port.ts over a `PgDatabase`. A read is one
 * REPEATABLE READ READ ONLY transaction; a commit is one transaction in which the implementation
 * checks the write's precondition on the current rows (a conditional statement, or a row locked
 * `FOR UPDATE` / `FOR SHARE`) and writes. A conflict reason rolls back; anything failing before
 * COMMIT rolls back and is `failed` (nothing written); only a connection lost at COMMIT
 * (`PgCommitAmbiguous`) is `ambiguous`. Every commit first runs the installation's admission
 * check in its own transaction (store/pg-installation.ts): a restored schema awaiting rotation, a
 * superseded one, or a rotation since this process was admitted rejects with that typed refusal. The component's schema version is checked once, before
 * the first read or commit (`loopx db migrate` creates it; a port never does). It decides nothing
 * about the owner's rows, and the pool is not its own: `close` ends the port, not the database.
 */
import { isLoopxError } from '../core/index.js';
import {
  INSTALLATION_COMPONENT,
  INSTALLATION_MIGRATIONS,
  POSTGRESQL_PROVIDER,
  PgCommitAmbiguous,
  RowInvalid,
  admissionOf,
  admit,
  installationRefusal,
  isRetryableConflict,
  requireSchemaVersion,
  type PgAdmission,
  type PgDatabase,
  type PgMigration,
  type PgQuery,
} from '../store/index.js';
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

export interface PgPortBase {
  readonly provider: string;
  readonly db: PgDatabase;
  /** One snapshot-consistent read. A closed port refuses; a row that does not decode is `<owner>_store_corrupt`. */
  read<T>(fn: (q: PgQuery) => Promise<T>): Promise<T>;
  /** Runs `body` in one transaction: it returns a conflict reason (everything is rolled back) or writes and returns undefined. */
  commit(body: (q: PgQuery) => Promise<ConflictReason | undefined>): Promise<CommitResult>;
  close(): void;
}

/** The body's conflict: thrown inside the transaction so that it rolls back whole. */
class Refused extends Error {
  constructor(readonly reason: ConflictReason) {
    super(`conflict: ${reason}`);
  }
}

const failed = (e: unknown): CommitResult => ({
  status: 'failed',
  code: isRetryableConflict(e) ? 'provider_busy' : 'provider_write_failed',
});

/** A port on `db`'s schema for `component`'s tables, migrated by `migrations`; `owner` names it in errors. */
export function openPgPort(
  db: PgDatabase,
  component: string,
  migrations: readonly PgMigration[],
  owner: StoreOwner,
): PgPortBase {
  const where = `the ${component} tables of schema ${db.schema}`;
  const corrupt = (e: RowInvalid) => storeCorrupt(owner, where, e);
  let closed = false;
  let checked: Promise<void> | undefined;
  // The versions once per port (a refusal is not remembered, so a schema migrated later opens on the
  // next use); the admission as the database handle keeps it (`forgetAdmission` reads it anew).
  const ready = async (): Promise<PgAdmission> => {
    await (checked ??= (async () => {
      await requireSchemaVersion(db, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS);
      await requireSchemaVersion(db, component, migrations);
    })().catch((e: unknown) => {
      checked = undefined;
      throw e;
    }));
    return admissionOf(db);
  };

  return {
    provider: POSTGRESQL_PROVIDER,
    db,
    async read<T>(fn: (q: PgQuery) => Promise<T>): Promise<T> {
      if (closed) throw providerClosed(owner);
      try {
        await ready();
        return await db.transaction(fn, { isolation: 'repeatable read', readOnly: true });
      } catch (e) {
        if (e instanceof RowInvalid) throw corrupt(e);
        if (isLoopxError(e)) throw e;
        throw storeReadFailed(owner, where, e);
      }
    },
    async commit(body): Promise<CommitResult> {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      let admission: PgAdmission;
      try {
        admission = await ready();
      } catch (e) {
        if (isLoopxError(e)) throw e;
        return failed(e);
      }
      try {
        await db.transaction(async (q) => {
          await admit(q, admission);
          const reason = await body(q);
          if (reason !== undefined) throw new Refused(reason);
        });
        return APPLIED;
      } catch (e) {
        if (e instanceof Refused) return conflictOf(e.reason);
        if (e instanceof PgCommitAmbiguous) return { status: 'ambiguous' };
        // Our own rows failing to decode means the tables were damaged under us: stop, never guess.
        if (e instanceof RowInvalid) throw corrupt(e);
        // The installation refused this writer (restored, superseded, rotated since): typed, never retried.
        const refusal = installationRefusal(e, db.schema, undefined, db.reference, admission);
        if (refusal) throw refusal;
        // A typed refusal raised inside the transaction (a caller's fence) passes through as it is.
        if (isLoopxError(e)) throw e;
        return failed(e);
      }
    },
    close() {
      closed = true;
    },
  };
}
