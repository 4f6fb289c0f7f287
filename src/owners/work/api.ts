/**
 * The work owner's live API: its requests, results and the `WorkOwner` interface (what each
 * operation guarantees is in work.ts's header). Types only.
 */
import type { LineageRecord, StoredCommitText, WorkProvider, WorkStoreIdentity } from './contract.js';
import type {
  FenceToken,
  HandoffMode,
  Lease,
  LeaseAuthorization,
  MovedTo,
  Todo,
  TodoStatus,
  WorkEvent,
  WorkReceipt,
} from './model.js';
import type { RetainedPrefixExport } from './retained-prefix.js';

export interface WriteOptions {
  /** Idempotency key: 1–200 characters of A–Z a–z 0–9 . _ : @ / + = -, starting with a letter or digit. */
  readonly operation_id: string;
  /** The writer's fence token; a token that is not the current one is refused (`writer_fenced`). */
  readonly fence?: FenceToken;
  /** Precondition on the Goal's authority revision (`authority_revision_mismatch`). */
  readonly expected_authority_revision?: number;
}

/** Proof that the caller holds a Todo's active lease. */
export interface LeaseProof {
  readonly owner: string;
  readonly execution_key: string;
  readonly lease_epoch: number;
}

export interface AddTodoRequest extends WriteOptions {
  /** Generated as `t<n>` when absent. */
  readonly todo_id?: string;
  readonly title: string;
  readonly text?: string;
  /** `open` (default), `blocked` or `deferred`. */
  readonly status?: TodoStatus;
  readonly priority?: number;
  readonly note?: string | null;
}

export interface UpdateTodoRequest extends WriteOptions {
  readonly todo_id: string;
  readonly title?: string;
  readonly text?: string;
  readonly status?: TodoStatus;
  readonly priority?: number;
  readonly note?: string | null;
  readonly expected_todo_revision?: number;
  /** Required in hard_lease mode to complete (`done`) or supersede (`deferred`); checked whenever given. */
  readonly lease?: LeaseProof;
}

/** One Todo's change in a batch: an update request's fields without the write options. */
export type TodoUpdate = Omit<UpdateTodoRequest, keyof WriteOptions>;

export interface UpdateTodosRequest extends WriteOptions {
  /** 1–100 updates, each to a different Todo, decided in order and committed as one transaction: all or none. */
  readonly updates: readonly TodoUpdate[];
}

export interface ClaimRequest extends WriteOptions {
  readonly todo_id: string;
  readonly agent: string;
  /** Required in hard_lease mode, where a claim change needs the active lease. */
  readonly lease?: LeaseProof;
}

export interface AcquireLeaseRequest extends WriteOptions {
  readonly todo_id: string;
  readonly owner: string;
  readonly execution_key: string;
  readonly ttl_ms: number;
  /** The lease version the caller last saw (0 when the Todo never had a lease). */
  readonly expected_version: number;
}

export interface RenewLeaseRequest extends WriteOptions {
  readonly todo_id: string;
  readonly owner: string;
  readonly execution_key: string;
  readonly lease_epoch: number;
  readonly expected_version: number;
  readonly ttl_ms: number;
}

export interface TransferLeaseRequest extends RenewLeaseRequest {
  readonly to_owner: string;
  readonly to_execution_key: string;
}

export interface ReleaseLeaseRequest extends WriteOptions {
  readonly todo_id: string;
  readonly owner: string;
  readonly execution_key: string;
  readonly lease_epoch: number;
  readonly expected_version: number;
}

export interface SetHandoffModeRequest extends WriteOptions {
  readonly handoff_mode: HandoffMode;
}

export type EngageFenceRequest = WriteOptions;

/** `revokeAuthority`: every active lease released and, when the Goal has a writer fence, a new one engaged — why, in `reason`. */
export interface RevokeAuthorityRequest extends WriteOptions {
  readonly reason: 'store_rotation';
}

/**
 * `moveOut`: the last transaction of this store, whose Goal work continues in `to` (a move between
 * providers): every active lease released, the writer fence replaced, and the store marked moved —
 * from then on every write is refused `work_store_moved`; receipts and history stay readable.
 */
export interface MoveOutRequest extends WriteOptions {
  readonly move_id: string;
  readonly to: { readonly provider: string; readonly store_identity: string };
}

/**
 * `importLineage`: the recovered history to import, and what the audit binds it to: the recovery workspace's copy of the source work.db with its
 * export's header line, or — for a Goal captured from a database service — the component's
 * retained-prefix export records alone (its whole state).
 */
export type ImportLineageRequest = {
  readonly recovery_id: string;
  /** The component's content digest from the audit (the export seal's SHA-256). */
  readonly content_digest: string;
} & (
  | {
      /** The recovery workspace's copy of the source work.db (read once, privately; never written). */
      readonly copy_path: string;
      /** The component export's header line, as the backup archived it. */
      readonly export_header_line: string;
    }
  | {
      /** The retained-prefix export's records (`loopx_work_retained_prefix_v0`), as the backup archived them. */
      readonly export_records: readonly unknown[];
    }
);

export interface AdoptStateRequest {
  /** The recovery's idempotency key for this action. */
  readonly operation_id: string;
  readonly recovery_id: string;
  /** A move's only (`importMovedWork`): the installations the lifetime's work went through before this store. */
  readonly installation_base?: number;
}

/**
 * `importMovedWork`: the Goal's work of `source` — a store its move marked moved out to this one
 * (`moveOut`, the same `move_id`) — as this new store's: every lineage the source holds and the
 * source's own history imported as read-only history (receipts read back as the originals), then
 * its head's Todos as this store's first transaction, under `operation_id`.
 */
export interface ImportMovedWorkRequest {
  readonly operation_id: string;
  readonly move_id: string;
  readonly source: WorkOwner;
}

export interface WorkOperationResult {
  /** `already_applied`: this operation id committed earlier; `receipt` is the original, field for field. */
  readonly result: 'applied' | 'already_applied';
  readonly receipt: WorkReceipt;
  readonly cursor: number;
  readonly provider_revision: string;
  /** Current observation, separate from the receipt. */
  readonly observed_authority_revision: number;
  /** Lease operations only: what the receipt's lease is worth now. A historical receipt never grants authority. */
  readonly authorization_status?: 'active' | 'expired' | 'released' | 'superseded';
}

export interface WorkView {
  readonly goal_id: string;
  readonly store_identity: string;
  readonly incarnation: string;
  readonly authority_revision: number;
  readonly cursor: number;
  readonly provider_revision: string;
  readonly handoff_mode: HandoffMode;
  /** The fence epoch (the token itself is only ever returned to its engager). */
  readonly fence_epoch: number | null;
  readonly todos: readonly Todo[];
  /** Present once the Goal's work moved to another store: this one takes no write. */
  readonly moved_to?: MovedTo;
  /**
   * The installation count a delivery fence takes for this store (owners/goal/fence.ts): the
   * provider's restore generation plus the installations the lifetime's work went through before
   * this store (a move's `installation_base`).
   */
  readonly delivery_incarnation: number;
}

export interface LeaseStatus {
  readonly todo_id: string;
  readonly lease: Lease | null;
  readonly authorization: LeaseAuthorization;
  readonly observed_at: string;
}

export interface WorkTransaction {
  readonly cursor: number;
  readonly provider_revision: string;
  readonly operation_id: string;
  readonly request_digest: string;
  readonly events: readonly WorkEvent[];
  readonly receipt: WorkReceipt;
}

export interface WorkHistoryPage {
  readonly transactions: readonly WorkTransaction[];
  readonly next_cursor: number;
  readonly has_more: boolean;
}

export interface ReceiptReadback {
  readonly receipt: WorkReceipt;
  readonly cursor: number;
  readonly provider_revision: string;
}

/**
 * A Goal's work owner: every read and write answers through a Promise (the storage port is
 * Promise-based); `close()` is synchronous. A write's refusal is a rejection with a typed LoopxError.
 */
export interface WorkOwner {
  readonly goal_id: string;
  storeIdentity(): Promise<WorkStoreIdentity>;
  /** The provider's `admitsWriters` (see contract.ts): a writer's first question. */
  assertWritable(): Promise<void>;
  view(): Promise<WorkView>;
  listTodos(): Promise<Todo[]>;
  getTodo(todoId: string): Promise<Todo | undefined>;
  leaseStatus(todoId: string): Promise<LeaseStatus>;
  addTodo(request: AddTodoRequest): Promise<WorkOperationResult>;
  updateTodo(request: UpdateTodoRequest): Promise<WorkOperationResult>;
  /** Several Todo updates as one operation and one transaction (all or none); the receipt's `todos` are their post-images in request order. */
  updateTodos(request: UpdateTodosRequest): Promise<WorkOperationResult>;
  claimTodo(request: ClaimRequest): Promise<WorkOperationResult>;
  unclaimTodo(request: ClaimRequest): Promise<WorkOperationResult>;
  acquireLease(request: AcquireLeaseRequest): Promise<WorkOperationResult>;
  renewLease(request: RenewLeaseRequest): Promise<WorkOperationResult>;
  transferLease(request: TransferLeaseRequest): Promise<WorkOperationResult>;
  releaseLease(request: ReleaseLeaseRequest): Promise<WorkOperationResult>;
  setHandoffMode(request: SetHandoffModeRequest): Promise<WorkOperationResult>;
  /** Engages (or rotates) the writer fence; the receipt's `fence` is the new token. Older tokens are refused from then on. */
  engageFence(request: EngageFenceRequest): Promise<WorkOperationResult>;
  /**
   * Revokes every authority the store's state grants a writer — each active lease (released, its
   * claim cleared) and the writer fence (a new one engaged, so no older token commits) — as one
   * transaction. Refused with `work_nothing_to_revoke` when there is none.
   */
  revokeAuthority(request: RevokeAuthorityRequest): Promise<WorkOperationResult>;
  /** See `MoveOutRequest`. The same request again is a readback. */
  moveOut(request: MoveOutRequest): Promise<WorkOperationResult>;
  readReceipt(operationId: string): Promise<ReceiptReadback | undefined>;
  /** Committed transactions with cursor > afterCursor, contiguous, at most `limit` (1..1000). */
  history(afterCursor: number, limit: number): Promise<WorkHistoryPage>;
  /** Every committed transaction after `afterCursor`, paged (streaming; never truncated). */
  iterateHistory(afterCursor?: number, pageSize?: number): AsyncGenerator<WorkTransaction, void, undefined>;
  /** Committed transactions so far (= head cursor). */
  transactionCount(): Promise<number>;
  exportRetainedPrefix(): Promise<RetainedPrefixExport>;
  /** Adoption (`import_inert`): a recovered source's history, checked against the audit, imported once before the first commit. */
  importLineage(
    request: ImportLineageRequest,
  ): Promise<{ readonly result: 'applied' | 'already'; readonly lineage: LineageRecord }>;
  /** Adoption (`rebind`): the recovered Todos as this store's first transaction, its receipt naming the recovery. */
  adoptRecoveredState(request: AdoptStateRequest): Promise<WorkOperationResult>;
  /** The histories this store holds from earlier lifetimes or stores. */
  lineage(): Promise<LineageRecord[]>;
  /** One held lineage's rows, as imported, in cursor order (streaming). */
  lineageRows(sourceStoreIdentity: string): AsyncGenerator<StoredCommitText, void, undefined>;
  /** See `ImportMovedWorkRequest`. The same request again is its readback. */
  importMovedWork(request: ImportMovedWorkRequest): Promise<WorkOperationResult>;
  close(): void;
}

export interface WorkOwnerOptions {
  readonly provider: WorkProvider;
  /** Injectable clock (tests, lease expiry). Defaults to the system clock. */
  readonly clock?: () => Date;
}
