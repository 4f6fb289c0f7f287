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
  type ScanPage,
  type StoredReceipt,
  type WorkCommitResult,
  type WorkProvider,
  type WorkStoreIdentity,
} from './contract.js';
import { assertScanArguments, decodeEvents, decodeObject, encodeCommit, type EncodedCommit } from './encoding.js';
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
}

export function createMemoryWorkState(goalId: string): MemoryWorkState {
  const identity = mintIdentity(MEMORY_PROVIDER, goalId);
  return { identity, cursor: 0, provider_revision: formatProviderRevision(identity.incarnation, 0), head: null, commits: [], byOperation: new Map() };
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
  const toTransaction = (row: MemoryRow): CommittedTransaction => ({
    cursor: row.cursor,
    provider_revision: row.provider_revision,
    operation_id: row.operation_id,
    request_digest: row.request_digest,
    events: decodeEvents(row.events),
    receipt: decodeObject(row.receipt),
    ...(row.cursor === state.cursor && state.head !== null ? { projection: decodeObject(state.head) } : {}),
  });

  const provider = {
    provider: MEMORY_PROVIDER,
    storeIdentity: async (): Promise<WorkStoreIdentity> => {
      open();
      return { ...state.identity };
    },
    async load() {
      open();
      return { head: state.head === null ? null : decodeObject(state.head), provider_revision: state.provider_revision, cursor: state.cursor };
    },
    async commit(request): Promise<WorkCommitResult> {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      const encoded = encodeCommit(request);
      if ('failed' in encoded) return { status: 'failed', code: encoded.failed };
      if (state.byOperation.has(encoded.operation_id)) return { status: 'conflict', reason: 'operation_id_exists' };
      if (encoded.expected_provider_revision !== state.provider_revision) return { status: 'conflict', reason: 'provider_revision_mismatch' };
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
    },
    async readReceipt(operationId: string): Promise<StoredReceipt | undefined> {
      open();
      const cursor = state.byOperation.get(operationId);
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
    },
    async scanCommitted(afterCursor: number, limit: number): Promise<ScanPage> {
      open();
      assertScanArguments(afterCursor, limit);
      const rows = state.commits.slice(afterCursor, afterCursor + limit);
      const transactions = rows.map(toTransaction);
      return {
        transactions,
        next_cursor: transactions.at(-1)?.cursor ?? afterCursor,
        has_more: afterCursor + rows.length < state.commits.length,
      };
    },
    close() {
      closed = true;
    },
  } satisfies WorkProvider;
  return provider;
}
