/**
 * What every PostgreSQL storage-port implementation of an owner shares (effect, quota, session,
 * scheduler): the schema check, snapshot reads, and the commit protocol of port.ts over one pool
 * (`PgDatabase`) — one transaction in which the implementation checks the write's precondition on
 * the current rows (a conditional statement, or the row locked `FOR UPDATE` / `FOR SHARE`) and
 * writes. Only a COMMIT the connection failed under is `ambiguous`; anything failing before it is
 * rolled back and `failed` (nothing written). It decides nothing about the owner's rows.
 *
 * The port owns `db`: `close()` ends its pool. The constructor is synchronous (the pool connects
 * lazily); the component's schema version is checked once, before the first read or commit
 * (`pg_schema_not_migrated` / `pg_schema_version_unknown` — `loopx db migrate` applies migrations,
 * never a port).
 */
import { internal, isLoopxError } from '../core/index.js';
import { POSTGRESQL_PROVIDER, PgCommitAmbiguous, RowInvalid, isRetryableConflict, requireSchemaVersion, type PgDatabase, type PgMigration, type PgQuery } from '../store/index.js';
import { APPLIED, conflictOf, providerClosed, storeCorrupt, type CommitResult, type ConflictReason, type StoreOwner } from './port.js';

export interface PgPortBase {
  readonly provider: string;
  readonly db: PgDatabase;
  /** One snapshot-consistent read (REPEATABLE READ, READ ONLY). A closed port refuses; a row that does not decode is `<owner>_store_corrupt`. */
  read<T>(fn: (q: PgQuery) => Promise<T>): Promise<T>;
  /** Runs `body` in one transaction: it returns a conflict reason (everything is rolled back) or writes and returns undefined. */
  commit(body: (q: PgQuery) => Promise<ConflictReason | undefined>): Promise<CommitResult>;
  /** Ends the pool; later reads reject and commits fail with `provider_closed`. Idempotent. */
  close(): void;
}

/** A BIGINT (or numeric) column as `pg` returns it — a decimal string — as a bigint the row decoders' `intColumn` checks; anything else unchanged (and refused there). */
export const pgInteger = (v: unknown): unknown => (typeof v === 'string' && /^-?\d{1,30}$/.test(v) ? BigInt(v) : v);

/** The body decided on a conflict: carried out of the transaction so that it rolls back. */
class Declined extends Error {
  constructor(readonly reason: ConflictReason) {
    super(`precondition did not hold: ${reason}`);
  }
}

const pgReadFailed = (owner: string, cause: unknown) =>
  internal('pg_store_read_failed', `Reading the ${owner} tables in PostgreSQL failed.`, {
    cause,
    nextAction: 'check that the database server answers, then retry',
    details: { owner },
  });

/** The owner's port base over `db`, whose `component` tables must be at the latest of `migrations`. */
export function openPgPort(db: PgDatabase, component: string, migrations: readonly PgMigration[], owner: StoreOwner): PgPortBase {
  let closed = false;
  let checked: Promise<void> | undefined;
  // Checked once; a failed check (not migrated yet, server away) is asked again next time.
  const ready = (): Promise<void> =>
    (checked ??= requireSchemaVersion(db, component, migrations).catch((e: unknown) => {
      checked = undefined;
      throw e;
    }));
  const where = `the ${component} tables of schema ${db.schema}`;
  // Our own rows failing to decode means the store was damaged under us: stop, never guess.
  const corrupt = (e: RowInvalid) => storeCorrupt(owner, where, e);

  return {
    provider: POSTGRESQL_PROVIDER,
    db,
    async read(fn) {
      if (closed) throw providerClosed(owner);
      try {
        await ready();
        return await db.transaction(fn, { isolation: 'repeatable read', readOnly: true });
      } catch (e) {
        if (e instanceof RowInvalid) throw corrupt(e);
        if (isLoopxError(e)) throw e;
        if (closed) throw providerClosed(owner);
        throw pgReadFailed(owner, e);
      }
    },
    async commit(body): Promise<CommitResult> {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      try {
        await ready();
      } catch (e) {
        if (isLoopxError(e)) throw e; // the schema is not this loopx's: a refusal with its next action
        return { status: 'failed', code: 'provider_write_failed' };
      }
      try {
        await db.transaction(async (q) => {
          const reason = await body(q);
          if (reason !== undefined) throw new Declined(reason);
        });
        return APPLIED;
      } catch (e) {
        if (e instanceof Declined) return conflictOf(e.reason);
        if (e instanceof PgCommitAmbiguous) return { status: 'ambiguous' };
        if (e instanceof RowInvalid) throw corrupt(e);
        // Rolled back before COMMIT, or COMMIT refused by the server: nothing was written.
        if (closed) return { status: 'failed', code: 'provider_closed' };
        return { status: 'failed', code: isRetryableConflict(e) ? 'provider_busy' : 'provider_write_failed' };
      }
    },
    close() {
      if (closed) return;
      closed = true;
      void db.close().catch(() => undefined);
    },
  };
}
