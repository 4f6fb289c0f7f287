/**
 * In-memory reference work provider: the contract without a disk. Its state lives in a plain
 * `MemoryWorkState` object, so a test can "restart" by opening a new provider on the same state.
 * Stores canonical JSON text (like the SQLite provider) and hands back parsed copies. Each method
 * runs to completion before it answers (no await inside), so a commit's checks and writes are one
 * atomic step however many callers have commits in flight.
 */
import { MEMORY_PROVIDER } from '../../store/index.js';
import {
  formatProviderRevision,
  type CommittedTransaction,
  type LineageImportRequest,
  type LineageImportResult,
  type LineageRecord,
  type StoredCommitText,
  type ScanPage,
  type StoredReceipt,
  type WorkCommitRequest,
  type WorkCommitResult,
  type WorkProvider,
  type WorkStoreIdentity,
} from './contract.js';
import {
  assertScanArguments,
  decodeEvents,
  decodeObject,
  encodeCommit,
  fenceHolds,
  fenceOf,
  type EncodedCommit,
} from './encoding.js';
import { checkIdentity, mintIdentity, type IdentityExpectations } from './identity.js';
import { protocolViolation, providerClosed } from './errors.js';

interface MemoryRow extends Omit<EncodedCommit, 'expected_provider_revision' | 'projection'> {
  readonly cursor: number;
  readonly provider_revision: string;
}

export interface MemoryWorkState {
  readonly identity: WorkStoreIdentity;
  cursor: number;
  provider_revision: string;
  head: string | null;
  /** commits[i] has cursor i + 1. */
  readonly commits: MemoryRow[];
  readonly byOperation: Map<string, number>;
  /** Imported lineages and their rows (lineage_import_once). */
  readonly lineage: LineageRecord[];
  readonly lineageRows: Map<string, StoredCommitText>;
}

export function createMemoryWorkState(goalId: string): MemoryWorkState {
  const identity = mintIdentity(MEMORY_PROVIDER, goalId);
  return {
    identity,
    cursor: 0,
    provider_revision: formatProviderRevision(identity.incarnation, 0),
    head: null,
    commits: [],
    byOperation: new Map(),
    lineage: [],
    lineageRows: new Map(),
  };
}

export interface MemoryWorkOptions extends IdentityExpectations {
  /** Open on an existing state (a restart); a fresh state is created otherwise. */
  readonly state?: MemoryWorkState;
}

export function memoryWorkProvider(options: MemoryWorkOptions): WorkProvider {
  const state = options.state ?? createMemoryWorkState(options.goal_id);
  checkIdentity(state.identity, options);
  let closed = false;
  const open = (): void => {
    if (closed) throw providerClosed();
  };

  const provider = {
    provider: MEMORY_PROVIDER,
    storeIdentity: async (): Promise<WorkStoreIdentity> => {
      open();
      return { ...state.identity };
    },
    async load() {
      open();
      return {
        head: state.head === null ? null : decodeObject(state.head),
        provider_revision: state.provider_revision,
        cursor: state.cursor,
      };
    },
    async commit(request): Promise<WorkCommitResult> {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      return commitTo(state, request);
    },
    readReceipt: async (operationId: string): Promise<StoredReceipt | undefined> => {
      open();
      return receiptOf(state, operationId);
    },
    async scanCommitted(afterCursor: number, limit: number): Promise<ScanPage> {
      open();
      assertScanArguments(afterCursor, limit);
      const rows = state.commits.slice(afterCursor, afterCursor + limit);
      const transactions = rows.map((row) => transactionOf(state, row));
      return {
        transactions,
        next_cursor: transactions.at(-1)?.cursor ?? afterCursor,
        has_more: afterCursor + rows.length < state.commits.length,
      };
    },
    importLineage: async (request: LineageImportRequest): Promise<LineageImportResult> =>
      closed ? { status: 'failed', code: 'provider_closed' } : importLineage(state, request),
    lineage: async (): Promise<LineageRecord[]> => {
      open();
      return state.lineage.map((l) => ({ ...l }));
    },
    scanLineage: async (source: string, afterCursor: number, limit: number): Promise<StoredCommitText[]> => {
      open();
      assertScanArguments(afterCursor, limit);
      const l = state.lineage.find((x) => x.source_store_identity === source);
      if (l === undefined) return [];
      // A lineage's rows carry its incarnation in their revisions (`<incarnation>:<cursor>`).
      return [...state.lineageRows.values()]
        .filter((r) => r.provider_revision.startsWith(`${l.source_incarnation}:`) && r.cursor > afterCursor)
        .sort((a, b) => a.cursor - b.cursor)
        .slice(0, limit)
        .map((r) => ({ ...r }));
    },
    close() {
      closed = true;
    },
  } satisfies WorkProvider;
  return provider;
}

/** One commit, its checks and writes in one step: fence, operation id, then the expected revision (contract.ts). */
function commitTo(state: MemoryWorkState, request: WorkCommitRequest): WorkCommitResult {
  const encoded = encodeCommit(request);
  if ('failed' in encoded) return { status: 'failed', code: encoded.failed };
  if (
    request.writer_fence !== undefined &&
    !fenceHolds(fenceOf(state.head === null ? null : decodeObject(state.head)), request.writer_fence)
  )
    return { status: 'conflict', reason: 'writer_fenced' };
  if (state.byOperation.has(encoded.operation_id) || state.lineageRows.has(encoded.operation_id))
    return { status: 'conflict', reason: 'operation_id_exists' };
  if (encoded.expected_provider_revision !== state.provider_revision)
    return { status: 'conflict', reason: 'provider_revision_mismatch' };
  const cursor = state.cursor + 1;
  const revision = formatProviderRevision(state.identity.incarnation, cursor);
  state.commits.push({
    cursor,
    provider_revision: revision,
    operation_id: encoded.operation_id,
    request_digest: encoded.request_digest,
    events: encoded.events,
    receipt: encoded.receipt,
  });
  state.byOperation.set(encoded.operation_id, cursor);
  state.cursor = cursor;
  state.provider_revision = revision;
  state.head = encoded.projection;
  return { status: 'applied', cursor, provider_revision: revision };
}

/** A stored commit as a committed transaction; the newest one carries the current projection. */
const transactionOf = (state: MemoryWorkState, row: MemoryRow): CommittedTransaction => ({
  cursor: row.cursor,
  provider_revision: row.provider_revision,
  operation_id: row.operation_id,
  request_digest: row.request_digest,
  events: decodeEvents(row.events),
  receipt: decodeObject(row.receipt),
  ...(row.cursor === state.cursor && state.head !== null ? { projection: decodeObject(state.head) } : {}),
});

/** One lineage import, checked in full before anything is kept (the SQLite provider's rules). */
function importLineage(state: MemoryWorkState, request: LineageImportRequest): LineageImportResult {
  const l = request.lineage;
  const prior = state.lineage.find((x) => x.source_store_identity === l.source_store_identity);
  if (prior) return { status: 'already', lineage: { ...prior } };
  if (state.cursor !== 0) return { status: 'conflict', reason: 'store_not_empty' };
  const rows: StoredCommitText[] = [];
  const seen = new Set<string>();
  for (const row of request.rows) {
    if (
      row.cursor !== rows.length + 1 ||
      row.provider_revision !== formatProviderRevision(l.source_incarnation, row.cursor)
    )
      return { status: 'conflict', reason: 'rows_invalid' };
    if (state.lineageRows.has(row.operation_id) || seen.has(row.operation_id))
      return { status: 'conflict', reason: 'operation_id_exists' };
    seen.add(row.operation_id);
    rows.push({ ...row });
  }
  if (rows.length !== l.source_head_cursor) return { status: 'conflict', reason: 'rows_invalid' };
  const record: LineageRecord = { ...l, imported_at: new Date().toISOString() };
  state.lineage.push(record);
  for (const row of rows) state.lineageRows.set(row.operation_id, row);
  return { status: 'applied', lineage: { ...record } };
}

/** The receipt stored under an operation id: this store's own, else an imported lineage's (the original, never relabelled). */
function receiptOf(state: MemoryWorkState, operationId: string): StoredReceipt | undefined {
  const cursor = state.byOperation.get(operationId);
  const imported = state.lineageRows.get(operationId);
  if (cursor === undefined && imported) {
    const { operation_id, request_digest, cursor: at, provider_revision, receipt } = imported;
    return { operation_id, request_digest, cursor: at, provider_revision, receipt: decodeObject(receipt) };
  }
  if (cursor === undefined) return undefined;
  const row = state.commits[cursor - 1];
  if (!row) throw protocolViolation('a receipt index entry points at no commit');
  return {
    operation_id: row.operation_id,
    request_digest: row.request_digest,
    cursor: row.cursor,
    provider_revision: row.provider_revision,
    receipt: decodeObject(row.receipt),
  };
}
