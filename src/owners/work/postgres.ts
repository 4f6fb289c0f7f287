/**
 * PostgreSQL work provider: the canonical work of ONE Goal as rows of an installation's schema,
 * where several Goals' stores live side by side. Every table carries the store's key (`goal_key`:
 * by default the Goal id; what a work.db path is to the SQLite provider) and every statement is
 * scoped by it, so a store never sees another Goal's rows. Tables (component `work`, applied only
 * by `loopx db migrate`):
 *
 *   work_stores           one row per store: schema, goal_id, store_identity (`postgresql:<hex>`),
 *                         incarnation, created_at, and the head — cursor, provider_revision,
 *                         projection (canonical JSON, NULL before the first commit) and the writer
 *                         fence it names (fence_id, fence_epoch)
 *   work_commits          one row per committed transaction: (goal_key, cursor) and
 *                         (goal_key, operation_id) unique — the receipt index
 *   work_lineage, work_lineage_commits   the histories imported from earlier lifetimes
 *
 * Every mutation (commit, lineage import) is one transaction that first runs the installation's
 * admission check (store/pg-installation.ts: a restored, superseded or since-rotated schema
 * rejects the writer with its typed refusal), then locks its store row
 * (`SELECT … FOR UPDATE`) and checks there, in the database, the store identity and incarnation
 * this provider opened, then the writer's fence token (fenced_commit), the operation id and the
 * revision; the head moves by a conditional UPDATE on the revision, incarnation and fence epoch
 * it checked. A commit is all of that in ONE autocommit statement, the server-side function
 * `loopx_work_commit` (migration 2): one round trip, its own transaction. Writers of one Goal are
 * serialised by that row lock, on any number of connections or processes. A decision not to write
 * writes nothing; only a commit point the connection failed under (a COMMIT, or the one commit
 * statement once sent) is `ambiguous` (`PgCommitAmbiguous`). BIGINT columns arrive as strings and are decoded explicitly;
 * instants are stored as ISO text, as in SQLite. Opening checks the schema version, then fails
 * closed on metadata of another Goal, a foreign incarnation or a head that disagrees with its
 * commits. The database handle is the caller's: `close()` releases this provider, not the pool.
 */
import { canonicalJson, isLoopxError, type LoopxError } from '../../core/index.js';
import {
  INSTALLATION_COMPONENT,
  INSTALLATION_MIGRATIONS,
  POSTGRESQL_PROVIDER,
  PgCommitAmbiguous,
  admissionOf,
  admit,
  assertAdmitted,
  installationRefusal,
  pgFailure,
  RowInvalid,
  isRetryableConflict,
  jsonColumn,
  jsonOrNullColumn,
  parseStoreIdentity,
  requireSchemaVersion,
  textColumn,
  type PgAdmission,
  type PgDatabase,
  type PgQuery,
} from '../../store/index.js';
import {
  INCARNATION_PATTERN,
  formatProviderRevision,
  parseProviderRevision,
  type CommittedTransaction,
  type JsonObject,
  type LineageImportRequest,
  type LineageImportResult,
  type LineageRecord,
  type ScanPage,
  type StoredCommitText,
  type StoredReceipt,
  type WorkCommitRequest,
  type WorkCommitResult,
  type WorkLoad,
  type WorkProvider,
  type WorkStoreIdentity,
} from './contract.js';
import { assertScanArguments, encodeCommit, fenceOf } from './encoding.js';
import { checkIdentity, foreignIncarnation, mintIdentity, type IdentityExpectations } from './identity.js';
import {
  metadataInvalid,
  protocolViolation,
  providerClosed,
  storeReplaced,
  workStoreMissing,
  workStoreReadFailed,
} from './errors.js';
import {
  COMMIT_COLUMNS,
  LINEAGE_COLUMNS,
  STORE_COLUMNS,
  bigintColumn,
  decodeCommit,
  decodeLineage,
  decodeStore,
  type StoreRow,
} from './pg-rows.js';
import { WORK_PG_COMPONENT, WORK_PG_MIGRATIONS } from './sql.js';

export const WORK_PG_SCHEMA = 'loopx_work_pg_v0';

export interface PgWorkOptions extends IdentityExpectations {
  /** The store's row key in the schema (default: the Goal id). Opening it for another Goal is refused. */
  readonly store_key?: string;
  /** Create the store's rows when there are none (default true). */
  readonly create?: boolean;
}

/** Our own rows failing to decode: the store was damaged or written by someone else — refuse, never guess. */
const rowsInvalid = (e: RowInvalid): LoopxError =>
  protocolViolation(`a stored row is malformed (${e.field})`, { column: e.field });

/** The store row this provider opened is gone or was replaced (another identity or incarnation) under it. */
/** Opens (and, unless `create` is false, first creates) the work store `store_key` of the migrated schema behind `db`. */
export async function openPostgresWorkProvider(db: PgDatabase, options: PgWorkOptions): Promise<WorkProvider> {
  await requireSchemaVersion(db, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS);
  await requireSchemaVersion(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS);
  const admission = await admissionOf(db);
  const key = options.store_key ?? options.goal_id;
  if (options.create !== false) {
    assertAdmitted(admission); // a store row is written only where the root's writers are admitted
    const minted = mintIdentity(POSTGRESQL_PROVIDER, options.goal_id);
    await db.query(
      `INSERT INTO work_stores (goal_key, schema, goal_id, store_identity, incarnation, created_at, cursor, provider_revision)
       VALUES ($1, $2, $3, $4, $5, $6, 0, $7) ON CONFLICT (goal_key) DO NOTHING`,
      [
        key,
        WORK_PG_SCHEMA,
        options.goal_id,
        minted.store_identity,
        minted.incarnation,
        new Date().toISOString(),
        formatProviderRevision(minted.incarnation, 0),
      ],
    );
  }
  const identity = await readIdentity(db, key, options.goal_id);
  checkIdentity(identity, options);
  return pgProvider(db, key, identity, admission);
}

/** The store's identity, checked whole: metadata, and a head that agrees with its commits (one snapshot). */
function readIdentity(db: PgDatabase, key: string, goalId: string): Promise<WorkStoreIdentity> {
  return db.transaction((q) => identityIn(q, key, goalId), { isolation: 'repeatable read', readOnly: true });
}

/** The store's identity as `q`'s transaction sees it (refused: missing, malformed, or a head its commits disagree with). */
async function identityIn(q: PgQuery, key: string, goalId: string): Promise<WorkStoreIdentity> {
  const [raw] = await q(`SELECT ${STORE_COLUMNS} FROM work_stores WHERE goal_key = $1`, [key]);
  if (!raw) throw workStoreMissing(goalId);
  if (raw.schema !== WORK_PG_SCHEMA) throw metadataInvalid(`unknown schema ${JSON.stringify(raw.schema).slice(0, 64)}`);
  let s: StoreRow;
  try {
    s = decodeStore(raw);
  } catch (e) {
    throw e instanceof RowInvalid ? metadataInvalid(`malformed ${e.field}`) : e;
  }
  if (parseStoreIdentity(s.store_identity)?.provider !== POSTGRESQL_PROVIDER)
    throw metadataInvalid('malformed store identity');
  if (!INCARNATION_PATTERN.test(s.incarnation)) throw metadataInvalid('malformed incarnation');
  const rev = parseProviderRevision(s.provider_revision);
  if (rev && rev.incarnation !== s.incarnation) throw foreignIncarnation(rev.incarnation, s.incarnation);
  const [stats] = await q(
    'SELECT count(*) AS n, coalesce(max(cursor), 0) AS max FROM work_commits WHERE goal_key = $1',
    [key],
  );
  const n = bigintColumn(stats?.n, 'count', 0);
  const max = bigintColumn(stats?.max, 'max', 0);
  if (!rev || rev.cursor !== s.cursor || n !== s.cursor || max !== s.cursor) {
    throw protocolViolation('the head and the commits disagree (a gap or a foreign head)', {
      head_cursor: s.cursor,
      commit_count: n,
      max_cursor: max,
    });
  }
  return { store_identity: s.store_identity, incarnation: s.incarnation, goal_id: s.goal_id };
}

/** Runs a read in a transaction someone else holds (a backup set's one snapshot). */
export type SnapshotRun = <T>(fn: (q: PgQuery) => Promise<T>) => Promise<T>;

/** What a retained-prefix export reads of a store. */
export type WorkSnapshotReader = Pick<WorkProvider, 'provider' | 'storeIdentity' | 'load' | 'scanCommitted'>;

/**
 * A Goal's store read through `run` only — every read in the one transaction `run` holds, so a
 * retained-prefix export of it is of one snapshot (a backup set's). Writes nothing; opening it
 * checks the store whole, as opening a provider does.
 */
export async function openPgWorkSnapshot(
  run: SnapshotRun,
  goalId: string,
  storeKey: string = goalId,
): Promise<WorkSnapshotReader> {
  const guarded = async <T>(fn: (q: PgQuery) => Promise<T>): Promise<T> => {
    try {
      return await run(fn);
    } catch (e) {
      if (e instanceof RowInvalid) throw rowsInvalid(e);
      if (isLoopxError(e)) throw e;
      throw workStoreReadFailed(e);
    }
  };
  const identity = await guarded((q) => identityIn(q, storeKey, goalId));
  const head = async (q: PgQuery): Promise<StoreRow> => {
    const [raw] = await q(`SELECT ${STORE_COLUMNS} FROM work_stores WHERE goal_key = $1`, [storeKey]);
    if (!raw) throw workStoreMissing(goalId);
    return decodeStore(raw);
  };
  return {
    provider: POSTGRESQL_PROVIDER,
    storeIdentity: async () => ({ ...identity }),
    load: () =>
      guarded(async (q) => {
        const h = await head(q);
        return {
          head: jsonOrNullColumn<JsonObject>(h.projection, 'projection'),
          provider_revision: h.provider_revision,
          cursor: h.cursor,
        };
      }),
    scanCommitted: (afterCursor, limit) => {
      assertScanArguments(afterCursor, limit);
      return guarded(async (q) => scanPage(q, storeKey, afterCursor, limit, await head(q)));
    },
  };
}

/** A Goal's head as `q` sees it (null: the Goal has no store in the schema). */
export async function pgWorkHead(
  q: PgQuery,
  goalId: string,
  storeKey: string = goalId,
): Promise<{ provider_revision: string; cursor: number } | null> {
  const [raw] = await q(`SELECT ${STORE_COLUMNS} FROM work_stores WHERE goal_key = $1`, [storeKey]);
  if (!raw) return null;
  const h = decodeStore(raw);
  return { provider_revision: h.provider_revision, cursor: h.cursor };
}

/** Thrown inside a write transaction to roll it back and answer `value` (nothing was written). */
class Decided<T> {
  constructor(readonly value: T) {}
}

type WriteFailure = { readonly status: 'failed'; readonly code: string } | { readonly status: 'ambiguous' };

/**
 * One write transaction: `body` writes and returns its answer (COMMIT), or throws `Decided` (ROLLBACK,
 * its answer). A failure before COMMIT is `failed` — nothing was written: `provider_busy` when another
 * transaction beat it, the refusal's code for a typed one, else `provider_write_failed` — and a COMMIT
 * the connection failed under is `ambiguous`.
 */
async function writeTransaction<T>(
  db: PgDatabase,
  goalId: string,
  body: (q: PgQuery) => Promise<T>,
): Promise<T | WriteFailure> {
  try {
    return await db.transaction(body);
  } catch (e) {
    if (e instanceof Decided) return e.value as T;
    if (e instanceof PgCommitAmbiguous) return { status: 'ambiguous' };
    return writeFailure(db, goalId, e);
  }
}

/** A write that provably wrote nothing, as its answer — or the installation's typed refusal, thrown. */
function writeFailure(db: PgDatabase, goalId: string, e: unknown): WriteFailure {
  // The installation refused this writer (restored, superseded, rotated since): typed, never retried.
  const refusal = installationRefusal(e, db.schema, goalId, db.reference);
  if (refusal) throw refusal;
  if (isRetryableConflict(e)) return { status: 'failed', code: 'provider_busy' };
  if (e instanceof RowInvalid) return { status: 'failed', code: rowsInvalid(e).code };
  if (isLoopxError(e)) return { status: 'failed', code: e.code };
  return { status: 'failed', code: 'provider_write_failed' };
}

/** Admits the writer at the installation, then locks the store row and checks it is still the store this provider opened (a lineage import's start; a commit does the same in `loopx_work_commit`). */
async function lockStore(
  q: PgQuery,
  key: string,
  identity: WorkStoreIdentity,
  admission: PgAdmission,
): Promise<StoreRow> {
  await admit(q, admission);
  const [raw] = await q(`SELECT ${STORE_COLUMNS} FROM work_stores WHERE goal_key = $1 FOR UPDATE`, [key]);
  const s = raw ? decodeStore(raw) : undefined;
  if (
    !s ||
    s.store_identity !== identity.store_identity ||
    s.incarnation !== identity.incarnation ||
    s.goal_id !== identity.goal_id
  ) {
    throw new Decided<WriteFailure>({ status: 'failed', code: storeReplaced(identity.goal_id).code });
  }
  return s;
}

const operationExists = async (q: PgQuery, key: string, operationId: string): Promise<boolean> =>
  (
    await q(
      `SELECT 1 FROM work_commits WHERE goal_key = $1 AND operation_id = $2
       UNION ALL SELECT 1 FROM work_lineage_commits WHERE goal_key = $1 AND operation_id = $2`,
      [key, operationId],
    )
  ).length > 0;

const COMMIT_SQL =
  'SELECT outcome, head_cursor, head_revision FROM loopx_work_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)';
const COMMIT_OUTCOMES = new Set(['writer_fenced', 'operation_id_exists', 'provider_revision_mismatch']);

/**
 * One commit as ONE autocommit statement (`loopx_work_commit`, migration 2): the installation's
 * admission, the store-row lock, the identity, fence, operation-id and revision checks, the insert
 * and the conditional head update, all in the database, in the statement's own transaction. A
 * decision not to write writes nothing; a connection lost once the statement was sent is `ambiguous`.
 */
async function commitOnce(
  db: PgDatabase,
  key: string,
  identity: WorkStoreIdentity,
  admission: PgAdmission,
  request: WorkCommitRequest,
): Promise<WorkCommitResult> {
  assertAdmitted(admission);
  const c = encodeCommit(request);
  if ('failed' in c) return { status: 'failed', code: c.failed };
  const next = fenceOf(request.next_projection);
  const fence = request.writer_fence;
  let rows: Record<string, unknown>[];
  try {
    rows = await db.autocommit(
      COMMIT_SQL,
      [
        admission.store_identity,
        admission.restore_generation,
        key,
        identity.store_identity,
        identity.incarnation,
        identity.goal_id,
        fence?.fence_id ?? null,
        fence?.epoch ?? null,
        c.operation_id,
        c.request_digest,
        c.events,
        c.receipt,
        c.expected_provider_revision,
        c.projection,
        next?.fence_id ?? null,
        next?.epoch ?? 0,
      ],
      'loopx_work_commit',
    );
  } catch (e) {
    if (e instanceof PgCommitAmbiguous) return { status: 'ambiguous' };
    return writeFailure(
      db,
      identity.goal_id,
      (e as { code?: unknown })?.code === 'LXP01' ? protocolViolation('the head moved inside a write transaction') : e,
    );
  }
  const outcome = rows[0]?.outcome;
  if (outcome === 'work_store_replaced') return { status: 'failed', code: storeReplaced(identity.goal_id).code };
  if (typeof outcome === 'string' && COMMIT_OUTCOMES.has(outcome))
    return {
      status: 'conflict',
      reason: outcome as 'writer_fenced' | 'operation_id_exists' | 'provider_revision_mismatch',
    };
  try {
    if (outcome !== 'applied') throw new RowInvalid('outcome');
    return {
      status: 'applied',
      cursor: bigintColumn(rows[0]?.head_cursor, 'cursor', 1),
      provider_revision: textColumn(rows[0]?.head_revision, 'provider_revision'),
    };
  } catch {
    return { status: 'ambiguous' }; // the statement ran but its answer does not decode: what it did is unknown here (the receipt says)
  }
}

/**
 * One lineage import: lock → the same source already imported (readback) or this store already
 * written (refused) → the lineage row and every source row, checked contiguous and of the source
 * incarnation → COMMIT. Nothing is written unless all of it is.
 */
async function importLineageOnce(
  db: PgDatabase,
  key: string,
  identity: WorkStoreIdentity,
  admission: PgAdmission,
  request: LineageImportRequest,
): Promise<LineageImportResult> {
  const l = request.lineage;
  const refuse = (reason: 'store_not_empty' | 'operation_id_exists' | 'rows_invalid') =>
    new Decided<LineageImportResult>({ status: 'conflict', reason });
  return writeTransaction(db, identity.goal_id, async (q): Promise<LineageImportResult> => {
    const s = await lockStore(q, key, identity, admission);
    const [prior] = await q(
      `SELECT ${LINEAGE_COLUMNS} FROM work_lineage WHERE goal_key = $1 AND source_store_identity = $2`,
      [key, l.source_store_identity],
    );
    if (prior) throw new Decided<LineageImportResult>({ status: 'already', lineage: decodeLineage(prior) });
    if (s.cursor !== 0) throw refuse('store_not_empty');
    const record: LineageRecord = { ...l, imported_at: new Date().toISOString() };
    await q(`INSERT INTO work_lineage (goal_key, ${LINEAGE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
      key,
      l.source_store_identity,
      l.source_incarnation,
      l.source_head_cursor,
      l.source_provider_revision,
      l.source_projection,
      l.recovery_id,
      l.content_digest,
      record.imported_at,
    ]);
    let cursor = 0;
    for (const row of request.rows) {
      if (
        row.cursor !== cursor + 1 ||
        row.provider_revision !== formatProviderRevision(l.source_incarnation, row.cursor)
      )
        throw refuse('rows_invalid');
      if (await operationExists(q, key, row.operation_id)) throw refuse('operation_id_exists');
      await q(
        `INSERT INTO work_lineage_commits (goal_key, source_store_identity, ${COMMIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          key,
          l.source_store_identity,
          row.cursor,
          row.provider_revision,
          row.operation_id,
          row.request_digest,
          row.events,
          row.receipt,
        ],
      );
      cursor = row.cursor;
    }
    if (cursor !== l.source_head_cursor) throw refuse('rows_invalid');
    return { status: 'applied', lineage: record };
  });
}

/** One snapshot-consistent page: the rows and the head they are compared with, in one read transaction. */
async function scanPage(
  q: PgQuery,
  key: string,
  afterCursor: number,
  limit: number,
  head: StoreRow,
): Promise<ScanPage> {
  const rows = await q(
    `SELECT ${COMMIT_COLUMNS} FROM work_commits WHERE goal_key = $1 AND cursor > $2 ORDER BY cursor LIMIT $3`,
    [key, afterCursor, limit + 1],
  );
  const transactions: CommittedTransaction[] = rows.slice(0, limit).map((r) => {
    const t = decodeCommit(r);
    return t.cursor === head.cursor && head.projection !== null
      ? { ...t, projection: jsonColumn<JsonObject>(head.projection, 'projection') }
      : t;
  });
  return { transactions, next_cursor: transactions.at(-1)?.cursor ?? afterCursor, has_more: rows.length > limit };
}

/** The installation's own check, in a transaction that writes nothing: a writer's refusal, typed (see the contract). */
async function admitsWriters(db: PgDatabase, goalId: string, admission: PgAdmission): Promise<void> {
  assertAdmitted(admission);
  try {
    await db.transaction((q) => admit(q, admission));
  } catch (e) {
    throw installationRefusal(e, db.schema, goalId, db.reference) ?? (isLoopxError(e) ? e : pgFailure(e, db.schema));
  }
}

/** One imported lineage's rows after `afterCursor`, as imported. */
async function scanLineagePage(
  q: PgQuery,
  key: string,
  source: string,
  afterCursor: number,
  limit: number,
): Promise<StoredCommitText[]> {
  const rows = await q(
    `SELECT ${COMMIT_COLUMNS} FROM work_lineage_commits
     WHERE goal_key = $1 AND source_store_identity = $2 AND cursor > $3 ORDER BY cursor LIMIT $4`,
    [key, source, afterCursor, limit],
  );
  return rows.map((r) => {
    const t = decodeCommit(r);
    // jsonb keeps no key order: the canonical form is the text the lineage was imported as.
    return { ...t, events: canonicalJson(t.events), receipt: canonicalJson(t.receipt) };
  });
}

function pgProvider(db: PgDatabase, key: string, identity: WorkStoreIdentity, admission: PgAdmission): WorkProvider {
  let closed = false;
  /** One read transaction (a snapshot) of this store, whose row must still be the one opened. */
  const read = async <T>(fn: (q: PgQuery, head: StoreRow) => Promise<T>): Promise<T> => {
    if (closed) throw providerClosed();
    try {
      return await db.transaction(
        async (q) => {
          const [raw] = await q(`SELECT ${STORE_COLUMNS} FROM work_stores WHERE goal_key = $1`, [key]);
          const head = raw ? decodeStore(raw) : undefined;
          if (!head || head.store_identity !== identity.store_identity || head.incarnation !== identity.incarnation)
            throw storeReplaced(identity.goal_id);
          return fn(q, head);
        },
        { isolation: 'repeatable read', readOnly: true },
      );
    } catch (e) {
      if (e instanceof RowInvalid) throw rowsInvalid(e);
      if (isLoopxError(e)) throw e;
      throw workStoreReadFailed(e);
    }
  };
  const provider = {
    provider: POSTGRESQL_PROVIDER,
    storeIdentity: async (): Promise<WorkStoreIdentity> => {
      if (closed) throw providerClosed();
      return { ...identity };
    },
    restoreGeneration: admission.restore_generation,
    admitsWriters: async (): Promise<void> => {
      if (closed) throw providerClosed();
      await admitsWriters(db, identity.goal_id, admission);
    },
    load: (): Promise<WorkLoad> =>
      read(async (_q, h) => ({
        head: jsonOrNullColumn<JsonObject>(h.projection, 'projection'),
        provider_revision: h.provider_revision,
        cursor: h.cursor,
      })),
    commit: async (request: WorkCommitRequest): Promise<WorkCommitResult> =>
      closed ? { status: 'failed', code: 'provider_closed' } : commitOnce(db, key, identity, admission, request),
    readReceipt: (operationId: string): Promise<StoredReceipt | undefined> =>
      read(async (q) => {
        const [r] = await q(
          `SELECT 0 AS src, ${COMMIT_COLUMNS} FROM work_commits WHERE goal_key = $1 AND operation_id = $2
           UNION ALL SELECT 1 AS src, ${COMMIT_COLUMNS} FROM work_lineage_commits WHERE goal_key = $1 AND operation_id = $2
           ORDER BY src LIMIT 1`,
          [key, operationId],
        );
        if (!r) return undefined;
        const t = decodeCommit(r);
        return {
          operation_id: t.operation_id,
          request_digest: t.request_digest,
          cursor: t.cursor,
          provider_revision: t.provider_revision,
          receipt: t.receipt,
        };
      }),
    async scanCommitted(afterCursor: number, limit: number): Promise<ScanPage> {
      assertScanArguments(afterCursor, limit);
      return read((q, head) => scanPage(q, key, afterCursor, limit, head));
    },
    importLineage: async (request: LineageImportRequest): Promise<LineageImportResult> =>
      closed ? { status: 'failed', code: 'provider_closed' } : importLineageOnce(db, key, identity, admission, request),
    lineage: (): Promise<LineageRecord[]> =>
      read(async (q) =>
        (await q(`SELECT ${LINEAGE_COLUMNS} FROM work_lineage WHERE goal_key = $1 ORDER BY seq`, [key])).map(
          decodeLineage,
        ),
      ),
    scanLineage: (source: string, afterCursor: number, limit: number): Promise<StoredCommitText[]> => {
      assertScanArguments(afterCursor, limit);
      return read((q) => scanLineagePage(q, key, source, afterCursor, limit));
    },
    close() {
      closed = true;
    },
  } satisfies WorkProvider;
  return provider;
}

/** The work stores of the schema behind `db` (migrated): each store's key and Goal, in key order. */
export async function listPostgresWorkStores(
  db: PgDatabase,
): Promise<{ readonly store_key: string; readonly goal_id: string }[]> {
  await requireSchemaVersion(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS);
  const rows = await db.query('SELECT goal_key, goal_id FROM work_stores ORDER BY goal_key');
  return rows.map((r) => ({
    store_key: textColumn(r.goal_key, 'goal_key'),
    goal_id: textColumn(r.goal_id, 'goal_id'),
  }));
}
