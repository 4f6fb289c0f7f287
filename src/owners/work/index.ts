/**
 * Public API of the work owner: a Goal's canonical work — Todos, leases, writer fence, operation
 * receipts and committed history — its provider contract (SQLite per Goal, in-memory reference),
 * the retained-prefix export and its verifier, and the recovery read side for copied databases.
 */
export {
  formatProviderRevision,
  parseProviderRevision,
  INCARNATION_PATTERN,
  MAX_SCAN_LIMIT,
  WORK_RETENTION,
  type CommittedTransaction,
  type JsonObject,
  type LineageRecord,
  type StoredCommitText,
  type JsonValue,
  type ScanPage,
  type StoredReceipt,
  type WorkCommitConflictReason,
  type WorkCommitRequest,
  type WorkCommitResult,
  type WorkLoad,
  type WorkProvider,
  type WorkStoreIdentity,
  type WriterFence,
} from './contract.js';
export { memoryWorkProvider, createMemoryWorkState, type MemoryWorkOptions, type MemoryWorkState } from './memory.js';
export {
  openSqliteWorkProvider,
  WORK_DB_SCHEMA,
  WORK_DB_VERSION,
  MAX_WORK_DB_COPY_BYTES,
  type SqliteWorkOptions,
} from './sqlite.js';
export { openPostgresWorkProvider, WORK_PG_SCHEMA, type PgWorkOptions } from './postgres.js';
export { WORK_DB_MIGRATIONS, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS, WORK_SQL } from './sql.js';
export type { IdentityExpectations } from './identity.js';
export {
  applyTransaction,
  initialProjection,
  isTerminal,
  leaseAuthorization,
  leaseExpired,
  projectionDigest,
  DEFAULT_HANDOFF_MODE,
  HANDOFF_MODES,
  HEAD_SCHEMA,
  RECEIPT_SCHEMA,
  TODO_STATUSES,
  WORK_OPERATIONS,
  type FenceRecord,
  type FenceToken,
  type HandoffMode,
  type Lease,
  type LeaseAuthorization,
  type Todo,
  type TodoChange,
  type TodoStatus,
  type WorkEvent,
  type WorkOperation,
  type WorkProjection,
  type WorkReceipt,
  type RecoveredFrom,
} from './model.js';
export {
  assertGoalWorkReady,
  openWork,
  goalWorkLocation,
  openGoalWork,
  openWorkAt,
  moveDestination,
  setAsideForMove,
  recordMovedWork,
  setAsideRetiredWork,
  settleGoalWorkLocation,
  type OpenGoalWorkOptions,
  type WorkProviderRequest,
} from './work.js';
export {
  mintStoreKey,
  readWorkLocation,
  rebindWorkLocation,
  recordedWorkLocations,
  WORK_LOCATION_SCHEMA,
  type GoalWorkLocation,
} from './location.js';
export { MIN_LEASE_TTL_MS, MAX_LEASE_TTL_MS, MAX_BATCH as MAX_TODO_UPDATES } from './inputs.js';
export { checkTodoUpdates } from './todos.js';
export type {
  AcquireLeaseRequest,
  AddTodoRequest,
  AdoptStateRequest,
  ImportLineageRequest,
  ClaimRequest,
  EngageFenceRequest,
  LeaseProof,
  LeaseStatus,
  ReceiptReadback,
  MoveOutRequest,
  ReleaseLeaseRequest,
  RenewLeaseRequest,
  SetHandoffModeRequest,
  TransferLeaseRequest,
  UpdateTodoRequest,
  UpdateTodosRequest,
  TodoUpdate,
  WorkHistoryPage,
  WorkOperationResult,
  WorkOwner,
  WorkOwnerOptions,
  WorkTransaction,
  WorkView,
  WriteOptions,
} from './api.js';
export {
  exportRetainedPrefix,
  verifyRetainedPrefix,
  retainedPrefixNdjson,
  parseRetainedPrefixNdjson,
  MAX_RETAINED_TRANSACTIONS,
  RETAINED_PREFIX_SCHEMA,
  type RetainedPrefixExport,
  type RetainedPrefixHeader,
  type RetainedPrefixRecord,
  type RetainedPrefixSeal,
  type RetainedPrefixTransaction,
  type RetainedPrefixVerification,
} from './retained-prefix.js';
export { type HistoricalWork, type ReadHistoricalOptions } from './historical.js';
export { recovery } from './recovery.js';
export {
  grantedAuthority,
  laterWork,
  revokeGrantedAuthority,
  workStoreHeads,
  type GrantedAuthority,
  type LaterWork,
  type WorkStoreHead,
} from './rotation.js';
export { hasErrors as workFindingsHaveErrors, type WorkFinding, type WorkFindingCode } from './findings.js';
export { adoptionSteps } from './adopt-steps.js';
export { dropLineageCommit, markWorkStoreNewer } from './drill-faults.js';
export { workStoreMoved } from './errors.js';
