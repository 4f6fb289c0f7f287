/**
 * SQLite work provider: `goals/<goal_id>/work.db`, one database per Goal, so each Goal's work is
 * its own revision domain and commit point. Tables:
 *
 *   metadata  one row: schema, goal_id, store_identity, incarnation, created_at
 *   head      one row: cursor, provider_revision, projection (canonical JSON, NULL before the first commit)
 *   commits   one row per committed transaction: cursor (1, 2, …), provider_revision, operation_id
 *             (UNIQUE — the receipt index), request_digest, events, receipt; also the projection outbox
 *   lineage, lineage_commits   (version 2) the history of an earlier lifetime this store was
 *             recovered from: one row per imported source store, and its committed rows exactly as
 *             that store held them (read-only: written once by `importLineage`, never changed)
 *
 * A commit is BEGIN IMMEDIATE → checks → insert + head update → COMMIT, one synchronous step on the
 * connection behind the port's Promise; only a failing COMMIT is `ambiguous`. Opening (synchronous:
 * it opens a file) fails closed on an unknown `user_version`, foreign tables, metadata of another
 * Goal, or a head whose revision names a foreign incarnation. `openWorkDbCopy` reads a
 * copied database once and queries a private image of it, so a recovery read never writes to the
 * copy, never creates sidecars beside it and holds no lock on it.
 */
import { existsSync, lstatSync } from 'node:fs';
import { hasCode, isLoopxError, rejected, type LoopxError } from '../../core/index.js';
import {
  SQLITE_COPY_TOO_LARGE,
  SQLITE_COPY_UNREADABLE,
  SQLITE_PROVIDER,
  isOutOfSpace,
  isSqliteFile,
  openSqliteCopy,
  openSqlite,
  parseStoreIdentity,
  setup,
  type SqliteCopy,
  type SqliteDatabase,
  type SqliteStatement,
} from '../../store/index.js';
import {
  INCARNATION_PATTERN,
  formatProviderRevision,
  parseProviderRevision,
  type CommittedTransaction,
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
import { assertScanArguments, decodeEvents, decodeObject, encodeCommit, fenceHolds, fenceOf } from './encoding.js';
import { checkIdentity, foreignIncarnation, mintIdentity, type IdentityExpectations } from './identity.js';
import {
  metadataInvalid,
  protocolViolation,
  providerClosed,
  workDbTooLarge,
  workDbUnreadable,
  workStoreMissing,
  workStoreReadFailed,
} from './errors.js';
import { immediateTransaction, transactionStatements, type TransactionDecision } from '../sqlite-port.js';
import { WORK_DB_MIGRATIONS } from './sql.js';

export const WORK_DB_SCHEMA = 'loopx_work_sqlite_v0';

export const WORK_DB_VERSION = WORK_DB_MIGRATIONS.length;

export interface SqliteWorkOptions extends IdentityExpectations {
  /** Create the database when it does not exist (default true). */
  readonly create?: boolean;
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

interface HeadRow {
  cursor: number;
  provider_revision: string;
  projection: string | null;
}
interface MetadataRow {
  schema: string;
  goal_id: string;
  store_identity: string;
  incarnation: string;
  created_at: string;
}
export interface RawCommitRow {
  cursor: number;
  provider_revision: string;
  operation_id: string;
  request_digest: string;
  events: string;
  receipt: string;
}

const SCAN_SQL =
  'SELECT cursor, provider_revision, operation_id, request_digest, events, receipt FROM commits WHERE cursor > ? ORDER BY cursor LIMIT ?';

/** Rows of SCAN_SQL fetched as arrays and made objects here: a third cheaper than better-sqlite3's own row objects. */
const commitRows = (raw: unknown[][]): RawCommitRow[] =>
  raw.map((r) => ({
    cursor: r[0] as number,
    provider_revision: r[1] as string,
    operation_id: r[2] as string,
    request_digest: r[3] as string,
    events: r[4] as string,
    receipt: r[5] as string,
  }));

export function openSqliteWorkProvider(path: string, options: SqliteWorkOptions): WorkProvider {
  if (options.create === false && !existsSync(path)) {
    throw workStoreMissing(options.goal_id);
  }
  const db = openSqlite(path, options.synchronous ? { synchronous: options.synchronous } : {});
  let identity: WorkStoreIdentity;
  try {
    refuseUnknownSchema(db);
    setup(db, WORK_DB_MIGRATIONS);
    initialize(db, options.goal_id);
    identity = readIdentity(db);
    checkIdentity(identity, options);
  } catch (e) {
    db.close();
    throw e;
  }
  return sqliteProvider(db, identity);
}

function refuseUnknownSchema(db: SqliteDatabase): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > WORK_DB_VERSION) {
    throw rejected(
      'work_store_schema_unknown',
      `The work database has schema version ${version}; this loopx knows ${WORK_DB_VERSION}.`,
      {
        nextAction: 'open it with the loopx version that wrote it',
        details: { user_version: version, supported_version: WORK_DB_VERSION },
      },
    );
  }
  if (version === 0) {
    const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number };
    if (tables.n > 0) {
      throw rejected('work_store_unrecognized', 'The file is an SQLite database but not a loopx work database.', {
        nextAction: 'check the Goal directory; do not reuse another database as work.db',
      });
    }
  }
}

function initialize(db: SqliteDatabase, goalId: string): void {
  const tx = db.transaction(() => {
    if (db.prepare('SELECT 1 FROM metadata').get() !== undefined) return;
    const stray = db.prepare('SELECT (SELECT count(*) FROM head) + (SELECT count(*) FROM commits) AS n').get() as {
      n: number;
    };
    if (stray.n > 0) throw metadataInvalid('metadata is missing beside existing work');
    const id = mintIdentity(SQLITE_PROVIDER, goalId);
    db.prepare(
      'INSERT INTO metadata (singleton, schema, goal_id, store_identity, incarnation, created_at) VALUES (1, ?, ?, ?, ?, ?)',
    ).run(WORK_DB_SCHEMA, goalId, id.store_identity, id.incarnation, new Date().toISOString());
    db.prepare('INSERT INTO head (singleton, cursor, provider_revision, projection) VALUES (1, 0, ?, NULL)').run(
      formatProviderRevision(id.incarnation, 0),
    );
  });
  tx.immediate();
}

function readIdentity(db: SqliteDatabase): WorkStoreIdentity {
  return db.transaction(() => {
    const meta = db
      .prepare('SELECT schema, goal_id, store_identity, incarnation, created_at FROM metadata WHERE singleton = 1')
      .get() as MetadataRow | undefined;
    if (!meta) throw metadataInvalid('no metadata row');
    if (meta.schema !== WORK_DB_SCHEMA)
      throw metadataInvalid(`unknown schema ${JSON.stringify(meta.schema).slice(0, 64)}`);
    if (parseStoreIdentity(meta.store_identity)?.provider !== SQLITE_PROVIDER)
      throw metadataInvalid('malformed store identity');
    if (!INCARNATION_PATTERN.test(meta.incarnation)) throw metadataInvalid('malformed incarnation');
    const head = db.prepare('SELECT cursor, provider_revision, projection FROM head WHERE singleton = 1').get() as
      HeadRow | undefined;
    if (!head) throw metadataInvalid('no head row');
    const rev = parseProviderRevision(head.provider_revision);
    if (rev && rev.incarnation !== meta.incarnation) throw foreignIncarnation(rev.incarnation, meta.incarnation);
    const stats = db.prepare('SELECT count(*) AS n, coalesce(max(cursor), 0) AS max FROM commits').get() as {
      n: number;
      max: number;
    };
    if (!rev || rev.cursor !== head.cursor || stats.n !== head.cursor || stats.max !== head.cursor) {
      throw protocolViolation('the head and the commits disagree (a gap or a foreign head)', {
        head_cursor: head.cursor,
        commit_count: stats.n,
        max_cursor: stats.max,
      });
    }
    return { store_identity: meta.store_identity, incarnation: meta.incarnation, goal_id: meta.goal_id };
  })();
}

type Queries = ReturnType<typeof prepare>;

function prepare(db: SqliteDatabase) {
  return {
    tx: transactionStatements(db),
    head: db.prepare('SELECT cursor, provider_revision, projection FROM head WHERE singleton = 1'),
    opExists: db.prepare(
      'SELECT 1 FROM commits WHERE operation_id = ? UNION ALL SELECT 1 FROM lineage_commits WHERE operation_id = ?',
    ),
    lineageReceipt: db.prepare(
      'SELECT cursor, provider_revision, operation_id, request_digest, receipt FROM lineage_commits WHERE operation_id = ?',
    ),
    lineage: db.prepare('SELECT * FROM lineage ORDER BY rowid'),
    lineageRows: db.prepare(
      'SELECT cursor, provider_revision, operation_id, request_digest, events, receipt FROM lineage_commits WHERE source_store_identity = ? AND cursor > ? ORDER BY cursor LIMIT ?',
    ),
    lineageOf: db.prepare('SELECT * FROM lineage WHERE source_store_identity = ?'),
    insertLineage: db.prepare(
      'INSERT INTO lineage (source_store_identity, source_incarnation, source_head_cursor, source_provider_revision, source_projection, recovery_id, content_digest, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    insertLineageRow: db.prepare(
      'INSERT INTO lineage_commits (source_store_identity, cursor, provider_revision, operation_id, request_digest, events, receipt) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    insert: db.prepare(
      'INSERT INTO commits (cursor, provider_revision, operation_id, request_digest, events, receipt) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    updateHead: db.prepare(
      'UPDATE head SET cursor = ?, provider_revision = ?, projection = ? WHERE singleton = 1 AND provider_revision = ?',
    ),
    receipt: db.prepare(
      'SELECT cursor, provider_revision, operation_id, request_digest, receipt FROM commits WHERE operation_id = ?',
    ),
    scan: db.prepare(SCAN_SQL).raw(true),
  };
}

const headRow = (q: Queries): HeadRow => {
  const row = q.head.get() as HeadRow | undefined;
  if (!row) throw protocolViolation('the database lost its head row');
  return row;
};

/**
 * One commit: BEGIN IMMEDIATE → checks → insert + head update → COMMIT, all synchronous on this
 * connection (nothing else runs on it in between). Only a failing COMMIT is `ambiguous`.
 */
function commitOnce(db: SqliteDatabase, q: Queries, incarnation: string, request: WorkCommitRequest): WorkCommitResult {
  const c = encodeCommit(request);
  if ('failed' in c) return { status: 'failed', code: c.failed };
  return immediateTransaction(q.tx, (): TransactionDecision<WorkCommitResult> => {
    const head = headRow(q);
    if (
      request.writer_fence !== undefined &&
      !fenceHolds(fenceOf(head.projection === null ? null : decodeObject(head.projection)), request.writer_fence)
    ) {
      return { commit: false, value: { status: 'conflict', reason: 'writer_fenced' } };
    }
    if (q.opExists.get(c.operation_id, c.operation_id) !== undefined)
      return { commit: false, value: { status: 'conflict', reason: 'operation_id_exists' } };
    if (head.provider_revision !== c.expected_provider_revision)
      return { commit: false, value: { status: 'conflict', reason: 'provider_revision_mismatch' } };
    const cursor = head.cursor + 1;
    const revision = formatProviderRevision(incarnation, cursor);
    q.insert.run(cursor, revision, c.operation_id, c.request_digest, c.events, c.receipt);
    const updated = q.updateHead.run(cursor, revision, c.projection, head.provider_revision);
    if (updated.changes !== 1) throw protocolViolation('the head moved inside a write transaction');
    return { commit: true, value: { status: 'applied', cursor, provider_revision: revision } };
  });
}

/** One snapshot-consistent page: the rows and the head they are compared with, in one read transaction. */
function scanPage(db: SqliteDatabase, q: Queries, afterCursor: number, limit: number): ScanPage {
  return db.transaction((): ScanPage => {
    const rows = commitRows(q.scan.all(afterCursor, limit + 1) as unknown[][]);
    const head = headRow(q);
    const transactions: CommittedTransaction[] = rows.slice(0, limit).map((r) => ({
      cursor: r.cursor,
      provider_revision: r.provider_revision,
      operation_id: r.operation_id,
      request_digest: r.request_digest,
      events: decodeEvents(r.events),
      receipt: decodeObject(r.receipt),
      ...(r.cursor === head.cursor && head.projection !== null ? { projection: decodeObject(head.projection) } : {}),
    }));
    return { transactions, next_cursor: transactions.at(-1)?.cursor ?? afterCursor, has_more: rows.length > limit };
  })();
}

/**
 * One lineage import: BEGIN IMMEDIATE → the same source already imported (readback) or this store
 * already written (refused) → the lineage row and every source row, checked contiguous and of the
 * source incarnation → COMMIT. Nothing is written unless all of it is.
 */
function importLineageOnce(q: Queries, request: LineageImportRequest): LineageImportResult {
  const l = request.lineage;
  return immediateTransaction(q.tx, (): TransactionDecision<LineageImportResult> => {
    const prior = q.lineageOf.get(l.source_store_identity) as LineageRecord | undefined;
    if (prior) return { commit: false, value: { status: 'already', lineage: prior } };
    if (headRow(q).cursor !== 0) return { commit: false, value: { status: 'conflict', reason: 'store_not_empty' } };
    const record: LineageRecord = { ...l, imported_at: new Date().toISOString() };
    q.insertLineage.run(
      l.source_store_identity,
      l.source_incarnation,
      l.source_head_cursor,
      l.source_provider_revision,
      l.source_projection,
      l.recovery_id,
      l.content_digest,
      record.imported_at,
    );
    let cursor = 0;
    for (const row of request.rows) {
      if (
        row.cursor !== cursor + 1 ||
        row.provider_revision !== formatProviderRevision(l.source_incarnation, row.cursor)
      ) {
        return { commit: false, value: { status: 'conflict', reason: 'rows_invalid' } };
      }
      if (q.opExists.get(row.operation_id, row.operation_id) !== undefined)
        return { commit: false, value: { status: 'conflict', reason: 'operation_id_exists' } };
      q.insertLineageRow.run(
        l.source_store_identity,
        row.cursor,
        row.provider_revision,
        row.operation_id,
        row.request_digest,
        row.events,
        row.receipt,
      );
      cursor = row.cursor;
    }
    if (cursor !== l.source_head_cursor)
      return { commit: false, value: { status: 'conflict', reason: 'rows_invalid' } };
    return { commit: true, value: { status: 'applied', lineage: record } };
  });
}

function sqliteProvider(db: SqliteDatabase, identity: WorkStoreIdentity): WorkProvider {
  let closed = false;
  const q = prepare(db);
  // better-sqlite3 answers synchronously; each method is one synchronous step behind its Promise.
  const read = async <T>(fn: () => T): Promise<T> => {
    if (closed) throw providerClosed();
    try {
      return fn();
    } catch (e) {
      if (isLoopxError(e)) throw e;
      throw workStoreReadFailed(e);
    }
  };
  const provider = {
    provider: SQLITE_PROVIDER,
    storeIdentity: (): Promise<WorkStoreIdentity> => read(() => ({ ...identity })),
    load: (): Promise<WorkLoad> =>
      read(() => {
        const h = headRow(q);
        return {
          head: h.projection === null ? null : decodeObject(h.projection),
          provider_revision: h.provider_revision,
          cursor: h.cursor,
        };
      }),
    commit: async (request: WorkCommitRequest): Promise<WorkCommitResult> =>
      closed ? { status: 'failed', code: 'provider_closed' } : commitOnce(db, q, identity.incarnation, request),
    readReceipt: (operationId: string): Promise<StoredReceipt | undefined> =>
      read(() => {
        const r = (q.receipt.get(operationId) ?? q.lineageReceipt.get(operationId)) as
          Omit<RawCommitRow, 'events'> | undefined;
        if (!r) return undefined;
        return {
          operation_id: r.operation_id,
          request_digest: r.request_digest,
          cursor: r.cursor,
          provider_revision: r.provider_revision,
          receipt: decodeObject(r.receipt),
        };
      }),
    async scanCommitted(afterCursor: number, limit: number): Promise<ScanPage> {
      assertScanArguments(afterCursor, limit);
      return read(() => scanPage(db, q, afterCursor, limit));
    },
    importLineage: async (request: LineageImportRequest): Promise<LineageImportResult> =>
      closed ? { status: 'failed', code: 'provider_closed' } : importLineageOnce(q, request),
    lineage: (): Promise<LineageRecord[]> => read(() => q.lineage.all() as LineageRecord[]),
    async scanLineage(source: string, afterCursor: number, limit: number): Promise<StoredCommitText[]> {
      assertScanArguments(afterCursor, limit);
      return read(() =>
        (q.lineageRows.all(source, afterCursor, limit) as RawCommitRow[]).map((r) => ({
          ...r,
          events: String(r.events),
          receipt: String(r.receipt),
        })),
      );
    },
    close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  } satisfies WorkProvider;
  return provider;
}

// ---------------------------------------------------------------------------------------------
// Copies (recovery read side)

/** A copied work database larger than this is not loaded for readback. */
export const MAX_WORK_DB_COPY_BYTES = 1024 * 1024 * 1024;

/** Raw, unvalidated readback of a copied work database; the caller turns what it sees into findings. */
export interface WorkDbCopy {
  readonly user_version: number;
  readonly byte_size: number;
  metadata(): MetadataRow | undefined;
  head(): HeadRow | undefined;
  commitStats(): { count: number; min: number; max: number };
  /** Rows with cursor > after, in cursor order, at most `limit`. */
  scanRows(after: number, limit: number): RawCommitRow[];
  /** `PRAGMA quick_check` lines; `['ok']` when sound. */
  quickCheck(): string[];
  /** `PRAGMA integrity_check` lines (quick_check plus index consistency); `['ok']` when sound. */
  integrityCheck(): string[];
  close(): void;
}

/** Refuses, before anything is read, a copy that is not a readable regular file or is too large to load. */
function checkCopyFile(path: string): void {
  let size: number;
  try {
    const st = lstatSync(path); // a link is not a copy: refused like any other non-regular file
    if (!st.isFile()) throw workDbUnreadable('it is not a regular file');
    size = st.size;
  } catch (e) {
    if (isLoopxError(e)) throw e;
    throw workDbUnreadable('reading its file failed', e);
  }
  if (size > MAX_WORK_DB_COPY_BYTES) {
    throw workDbTooLarge(MAX_WORK_DB_COPY_BYTES, { byte_size: size });
  }
}

/**
 * The copy's private read-only image and its `user_version`; an open that fails is the copy's
 * typed refusal (too large, not SQLite, unreadable), a full scratch disk thrown as it is.
 */
function openPrivateImage(path: string, inPlace: boolean): { copy: SqliteCopy; userVersion: number } {
  // The private copy is made by a file copy (the database never passes through this process's
  // memory) and, in the copy only, a WAL-mode header (format bytes 2/2) — which would make even a
  // read-only open create -wal/-shm — is marked rollback-journal. Sidecar WAL content is not part
  // of a copy and is reported by the caller. The size is checked again on the copy itself.
  let copy: SqliteCopy | undefined;
  try {
    copy = openSqliteCopy(path, {
      scratchPrefix: 'loopx-work-read-',
      fileName: 'work.db',
      rollbackJournal: true,
      maxBytes: MAX_WORK_DB_COPY_BYTES,
      inPlace,
    });
    return { copy, userVersion: copy.db.pragma('user_version', { simple: true }) as number };
  } catch (e) {
    copy?.close();
    if (isOutOfSpace(e)) throw e; // a full scratch disk is not a damaged database
    if (hasCode(e, SQLITE_COPY_TOO_LARGE)) {
      throw workDbTooLarge(MAX_WORK_DB_COPY_BYTES, (e as LoopxError).details);
    }
    if (hasCode(e, SQLITE_COPY_UNREADABLE) && !isSqliteFile(path)) {
      throw rejected('work_db_not_sqlite', 'The work database copy is not an SQLite database.', {
        nextAction: 'check that the copy is complete',
      });
    }
    const cause = hasCode(e, SQLITE_COPY_UNREADABLE) ? (e as Error).cause : e;
    throw workDbUnreadable('it cannot be opened', cause);
  }
}

/** A read of the opened image: a failure is `work_db_unreadable`, a full scratch disk thrown as it is. */
function guard<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isOutOfSpace(e)) throw e;
    throw workDbUnreadable('reading it failed', e);
  }
}

/**
 * Opens a COPY of a work database for reading only. The file is read once (a plain read, no SQLite
 * lock) into a private owner-only scratch image that is opened read-only and removed on `close()`,
 * so the copy itself is never written, gets no -wal/-shm sidecars and holds no lock. `inPlace`:
 * the path is the caller's own fresh rollback-journal snapshot, opened read-only where it lies
 * (a WAL-mode file is still copied); see store/copy.ts.
 * Throws `work_db_unreadable` / `work_db_not_sqlite` / `work_db_too_large` (rejected); a scratch
 * file system out of space is thrown as it is (`isOutOfSpace`), never as a verdict on the file.
 */
export function openWorkDbCopy(path: string, options: { readonly inPlace?: boolean } = {}): WorkDbCopy {
  checkCopyFile(path);
  const { copy: opened, userVersion } = openPrivateImage(path, options.inPlace === true);
  const handle: SqliteDatabase = opened.db;
  const hasTable = (name: string): boolean =>
    guard(
      () => handle.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined,
    );
  let scan: SqliteStatement | undefined;
  return {
    user_version: userVersion,
    byte_size: opened.byteSize,
    metadata: () =>
      hasTable('metadata')
        ? guard(
            () =>
              handle
                .prepare(
                  'SELECT schema, goal_id, store_identity, incarnation, created_at FROM metadata WHERE singleton = 1',
                )
                .get() as MetadataRow | undefined,
          )
        : undefined,
    head: () =>
      hasTable('head')
        ? guard(
            () =>
              handle.prepare('SELECT cursor, provider_revision, projection FROM head WHERE singleton = 1').get() as
                HeadRow | undefined,
          )
        : undefined,
    commitStats: () =>
      hasTable('commits')
        ? guard(
            () =>
              handle
                .prepare(
                  'SELECT count(*) AS count, coalesce(min(cursor), 0) AS min, coalesce(max(cursor), 0) AS max FROM commits',
                )
                .get() as {
                count: number;
                min: number;
                max: number;
              },
          )
        : { count: 0, min: 0, max: 0 },
    scanRows: (after, limit) => {
      const statement = (scan ??= hasTable('commits') ? guard(() => handle.prepare(SCAN_SQL).raw(true)) : undefined);
      return statement === undefined ? [] : guard(() => commitRows(statement.all(after, limit) as unknown[][]));
    },
    quickCheck: () =>
      guard(() => (handle.pragma('quick_check') as Array<{ quick_check: string }>).map((r) => r.quick_check)),
    integrityCheck: () =>
      guard(() =>
        (handle.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check),
      ),
    close: () => opened.close(),
  };
}
