/**
 * The work provider contract: durable storage for the canonical work of ONE Goal (domain notes §2,
 * the `AuthorityStore` seam). Storage only — a provider never interprets events, projections or
 * receipts (it reads one member of the head projection, its writer `fence`, for fenced_commit); the
 * work owner (`work.ts`) decides what they mean. No driver type crosses this file.
 *
 * Guarantees every provider gives (the conformance suite checks each one):
 *
 * - atomic_event_projection_receipt_commit: `commit` lands the events, the next projection and the
 *   receipt together under the next cursor, or nothing at all.
 * - conditional_provider_revision: `commit` applies only when `expected_provider_revision` equals
 *   the current revision; otherwise `conflict/provider_revision_mismatch` and nothing is written.
 *   Of commits racing on the same expected revision (in flight together, over one connection or
 *   several) exactly one applies; every other is that conflict, or `operation_id_exists` when it
 *   carries the winner's operation id.
 * - fenced_commit: a commit carrying `writer_fence` applies only while the stored head's writer
 *   fence (its projection's `fence`: id and epoch) is that token — checked inside the commit's own
 *   transaction, before anything else — otherwise `conflict/writer_fenced` and nothing is written.
 *   A stale writer is refused by the store, whatever its memory says.
 * - durable_same_key_readback: an operation id commits at most once per store. A second commit
 *   with it is `conflict/operation_id_exists` (checked before the revision, so a racing duplicate
 *   is reported as such), and `readReceipt` returns the original receipt, request digest, cursor
 *   and revision — after a restart too.
 * - explicit_ambiguous_commit: when the commit point itself failed and the provider cannot prove
 *   whether the transaction landed, it answers `ambiguous` — never `applied`, never `failed`. The
 *   caller resolves it with `readReceipt(operation_id)` and retries only under the SAME id.
 * - `failed` means provably nothing was written (`code` says why); retrying the same id is safe.
 * - ordered_cursor_scan: cursors are positive, contiguous integers from 1 in commit order, and the
 *   provider revision names (incarnation, cursor). A reader that observes a gap reports
 *   `provider_protocol_violation`; a provider never creates one.
 * - stable_store_lineage: `storeIdentity()` is fixed for the life of a store. A provider opened on
 *   a database of another Goal, another incarnation than expected, or an unknown schema version
 *   refuses to open (fail closed) instead of serving it.
 * - retain_all_v0: nothing committed is pruned or rewritten; every receipt stays readable.
 * - lineage_import_once: `importLineage` stores another store's committed rows — a recovered
 *   Goal's earlier lifetime — as read-only history, byte for byte, in one transaction and only
 *   while this store has no commit of its own (`store_not_empty` otherwise). The same source again
 *   is a readback (`already`). Imported operation ids count as this store's: a commit under one is
 *   `operation_id_exists`, and `readReceipt` returns the ORIGINAL receipt (its store identity and
 *   revision are the source's, never relabelled).
 *
 * "Not found" is `undefined` from `readReceipt` and an empty page from `scanCommitted`, never an
 * error. Reads reject with a typed LoopxError only for a closed provider, an unreadable store or
 * bad scan arguments; `commit` never rejects — its outcome is data. `load()` and each
 * `scanCommitted()` call are snapshot-consistent.
 *
 * Every method but `close()` is Promise-based, so a provider whose driver is async by nature
 * (PostgreSQL) implements this contract as it is; opening a provider (and failing closed on a
 * foreign store) is the provider's own constructor and may be synchronous or async.
 */

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

/** `retain_all_v0`: full history, no pruning. The only retention this contract knows. */
export const WORK_RETENTION = 'retain_all_v0';

/** Upper bound of one `scanCommitted` page. */
export const MAX_SCAN_LIMIT = 1000;

export const INCARNATION_PATTERN = /^[0-9a-f]{32}$/;

export interface WorkStoreIdentity {
  /** `<provider>:<32 hex>` of a registered storage provider (`isStoreIdentity`): the store lineage that cursors and receipts belong to. */
  readonly store_identity: string;
  /** 32 hex: this physical database. A revision is incarnation + cursor. */
  readonly incarnation: string;
  readonly goal_id: string;
}

export interface WorkLoad {
  /** The head projection, `null` before the first commit. */
  readonly head: JsonObject | null;
  /** Opaque CAS token; `<incarnation>:<cursor>`. */
  readonly provider_revision: string;
  /** Cursor of the last commit, 0 before the first. */
  readonly cursor: number;
}

export interface WorkCommitRequest {
  readonly expected_provider_revision: string;
  readonly operation_id: string;
  /** Lowercase hex SHA-256 of the semantic request (computed by the owner, stored verbatim). */
  readonly request_digest: string;
  readonly events: readonly JsonObject[];
  readonly next_projection: JsonObject;
  readonly receipt: JsonObject;
  /** The fence token the writer writes under, if any (fenced_commit). */
  readonly writer_fence?: WriterFence;
}

/** A writer fence as the store holds it: the head projection's `fence` (id and epoch). */
export interface WriterFence {
  readonly fence_id: string;
  readonly epoch: number;
}

export type WorkCommitConflictReason = 'provider_revision_mismatch' | 'operation_id_exists' | 'writer_fenced';

export type WorkCommitResult =
  | { readonly status: 'applied'; readonly cursor: number; readonly provider_revision: string }
  | { readonly status: 'conflict'; readonly reason: WorkCommitConflictReason }
  | { readonly status: 'ambiguous' }
  | { readonly status: 'failed'; readonly code: string };

export interface StoredReceipt {
  readonly operation_id: string;
  readonly request_digest: string;
  readonly cursor: number;
  readonly provider_revision: string;
  readonly receipt: JsonObject;
}

export interface CommittedTransaction {
  readonly cursor: number;
  readonly provider_revision: string;
  readonly operation_id: string;
  readonly request_digest: string;
  readonly events: readonly JsonObject[];
  readonly receipt: JsonObject;
  /** Present only on the transaction at the head cursor (the head projection). Earlier projections are not retained: events are the deltas. */
  readonly projection?: JsonObject;
}

export interface ScanPage {
  readonly transactions: readonly CommittedTransaction[];
  /** The last cursor returned, or `after_cursor` when the page is empty. */
  readonly next_cursor: number;
  readonly has_more: boolean;
}

/** A committed row as a provider stores it: events and receipt are canonical JSON text. */
export interface StoredCommitText {
  readonly cursor: number;
  readonly provider_revision: string;
  readonly operation_id: string;
  readonly request_digest: string;
  readonly events: string;
  readonly receipt: string;
}

/** Another store's history held by this one, as `importLineage` recorded it. */
export interface LineageRecord {
  readonly source_store_identity: string;
  readonly source_incarnation: string;
  readonly source_head_cursor: number;
  readonly source_provider_revision: string;
  /** The source head projection (canonical JSON text), null when the source had no commit. */
  readonly source_projection: string | null;
  /** The recovery that imported it. */
  readonly recovery_id: string;
  /** The digest the rows were checked against before import (the source component's content digest). */
  readonly content_digest: string;
  readonly imported_at: string;
}

export interface LineageImportRequest {
  readonly lineage: Omit<LineageRecord, 'imported_at'>;
  /** The source's committed rows in cursor order, 1..source_head_cursor. */
  readonly rows: Iterable<StoredCommitText>;
}

export type LineageImportResult =
  | { readonly status: 'applied' | 'already'; readonly lineage: LineageRecord }
  | { readonly status: 'conflict'; readonly reason: 'store_not_empty' | 'operation_id_exists' | 'rows_invalid' }
  /** The commit point failed unprovably: call again with the same request (a landed import is then `already`). */
  | { readonly status: 'ambiguous' }
  | { readonly status: 'failed'; readonly code: string };

export interface WorkProvider {
  /** The registered storage provider this implementation belongs to (`registerStoreProvider`). */
  readonly provider: string;
  storeIdentity(): Promise<WorkStoreIdentity>;
  /**
   * Throws the typed refusal a write would get from where the store lives (a database schema that
   * is a restored copy, superseded, or rotated since this process was admitted), writing nothing;
   * absent, the store always admits its writers. Asked before a writer's other checks, so the
   * refusal names what the operator must do about the store first.
   */
  admitsWriters?(): Promise<void>;
  /**
   * The restore generation of the installation this store's writers were admitted under (one more
   * for each rotation of a PostgreSQL installation); absent for a store without one (0). A Goal's
   * delivery fence counts it, so a process left on a superseded installation is refused by receivers.
   */
  readonly restoreGeneration?: number;
  load(): Promise<WorkLoad>;
  commit(request: WorkCommitRequest): Promise<WorkCommitResult>;
  readReceipt(operationId: string): Promise<StoredReceipt | undefined>;
  /** Transactions with cursor > afterCursor in cursor order, at most `limit` (1..MAX_SCAN_LIMIT). */
  scanCommitted(afterCursor: number, limit: number): Promise<ScanPage>;
  /** Imports another store's history, once, before this store's first commit (lineage_import_once). */
  importLineage(request: LineageImportRequest): Promise<LineageImportResult>;
  /** The imported lineages, in import order. */
  lineage(): Promise<LineageRecord[]>;
  /**
   * One imported lineage's rows with cursor > afterCursor, in cursor order, at most `limit`
   * (1..MAX_SCAN_LIMIT), as stored (events and receipt as canonical JSON): what a move of the
   * Goal's work to another store carries on. An unknown lineage has no rows.
   */
  scanLineage(sourceStoreIdentity: string, afterCursor: number, limit: number): Promise<StoredCommitText[]>;
  /** Releases the store; later reads reject and commits fail with `provider_closed`. Idempotent. */
  close(): void;
}

export const formatProviderRevision = (incarnation: string, cursor: number): string => `${incarnation}:${cursor}`;

/** Splits a provider revision into its parts; `undefined` when it is not of this contract's form. */
export function parseProviderRevision(revision: string): { incarnation: string; cursor: number } | undefined {
  const m = /^([0-9a-f]{32}):(0|[1-9][0-9]{0,15})$/.exec(revision);
  if (!m) return undefined;
  return { incarnation: m[1]!, cursor: Number(m[2]) };
}
