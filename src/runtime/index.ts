/**
 * Public API of the runtime: the one layer the CLI and the daemon call. It composes what is below
 * it — opening a root's owners and engine for one operation, the admission gate of quiescent
 * backups (every writer admitted, closed and drained by a backup), Goal-work orchestration, Goals and
 * Todos with their lease discipline, reading a recovery workspace back, the sample root — and
 * passes through, by name, the parts of the layers below that the CLI and daemon use as they are
 * (backup, verification, snapshots, the run authority, agent definitions). Nothing else of those
 * layers is reachable from cli/ or daemon/ (the map lint, eslint.config.js).
 */
export {
  withAuthority,
  withGoalWriter,
  withRootEngine,
  withRootOwners,
  withVerifyingEngine,
  initRoot,
  type GoalWriterGuard,
  type RootAccess,
} from './root.js';
export {
  admit,
  admissionState,
  closeAdmission,
  isAdmissionClosed,
  withAdmission,
  ADMISSION_CLOSED,
  type AdmissionState,
  type AdmissionTicket,
  type ClosedAdmission,
  type CloseAdmissionOptions,
} from './admission.js';
export { goalWorkAgents, newRunId, runGoalWork, type GoalWorkRunOptions, type GoalWorkRunResult } from './goal-work.js';
export {
  goalActivity,
  goalHistory,
  goalProgress,
  HISTORY_PAGE_MAX,
  type GoalActivity,
  type GoalProgress,
  type HistoryPage,
} from './goal-activity.js';
export {
  createGoal,
  goalDetail,
  goalSupersession,
  goalView,
  listGoals,
  showGoal,
  transitionGoal,
  withGoalWork,
  type GoalDocInput,
  type GoalTransition,
} from './goals.js';
export {
  addTodo,
  listTodos,
  MAX_TODOS_PER_UPDATE,
  operatorOperationId,
  TODO_STATUSES,
  todoView,
  updateTodo,
  updateTodos,
  type AddTodoInput,
  type UpdateTodoInput,
  type UpdateTodosInput,
} from './todos.js';
export {
  listWorkspace,
  showWorkspaceGoal,
  readWorkspaceContents,
  type WorkspaceListing,
  type WorkspaceGoalDetail,
  type WorkspaceContents,
  type WorkspaceGoalContents,
  type WorkspaceEffect,
} from './workspace.js';
export {
  planRecovery,
  applyRecovery,
  recoveryStatusOf,
  resolveRecoveryHold,
  abortRecovery,
  recoveryActivation,
  setRecoveryActivation,
  type RecoverAccess,
} from './recover.js';
export {
  publicPlan,
  settlementFrom,
  type AdoptionPlan,
  type HoldSettlement,
  type RecoveryStatus,
} from '../recovery/index.js';
export { seedSample } from './sample.js';
export {
  runRecoveryDrill,
  renderReceipt,
  DRILL_SCHEMA,
  DRILL_TARGETS,
  type DrillMode,
  type DrillReceipt,
} from './drill/index.js';

// Passed through as they are.
export {
  GOAL_WORK_TOOL_PLAN,
  loadAgentFile,
  parseAgentDefinition,
  runSummary,
  type AgentDefinition,
  type CallEvidence,
  type Engine,
  type EventsOptions,
  type Resolution,
  type RunEvent,
  type RunView,
} from '../engine/index.js';
export { assertRuntimeRoot, closeRootPools, LAYOUT, ownerDescriptions, type RootOwners } from '../owners/index.js';
export {
  defaultAuthorityDir,
  goalLifetimeSuperseded,
  recordNextAction,
  ROOT_IS_COPY,
  type LocalRunAuthority,
} from '../run-authority/index.js';
export {
  claimInvalid,
  decodeEnvelope,
  ENVELOPE_MAX_BYTES,
  envelopeOversized,
  type RunSnapshotState,
} from '../snapshot/index.js';
export {
  BACKUP_ID,
  CAPTURE_FACTS,
  create as createBackup,
  describePlan,
  parseProfile,
  plan as planBackup,
  type BackupFormat,
  type BackupProgress,
  type BackupResult,
  type CaptureProfile,
  type PlanSummary,
  type RecoverySetCapture,
} from '../backup/index.js';
export {
  backupPlacement,
  createBackupWithProfile,
  DEFAULT_QUIESCE_TIMEOUT_MS,
  ELSEWHERE_ACTION,
  placementWarning,
  userBackupsDir,
  type BackupPlacement,
  type ProfiledCreateOptions,
} from './backup.js';
export {
  backupToRepository,
  changeRepositoryKeys,
  checkRepository,
  forgetInRepository,
  initRepository,
  listRepository,
  newRepositoryKey,
  pruneRepository,
  repositoryLabel,
  verifyFromRepository,
  type RepositoryBackup,
  type RepositoryListing,
} from './repository.js';
export {
  REPO_CODES,
  type BackupEntry,
  type ForgetReport,
  type KeyChangeReport,
  type PruneReport,
  type RepositoryCheck,
  type RetentionPolicy,
} from '../repository/index.js';
export {
  executeVerify,
  executeVerifyIsolated,
  planVerify,
  publicSummary,
  RECOVERY_LIMITS,
  SETTLED_BY_RECOVERY,
  showAudit,
  verifyFailed,
  type PublicAuditSummary,
  type RecoveryAudit,
  type VerifyPlan,
  type VerifyProgress,
} from '../recovery/index.js';
export {
  DEV_RECEIVER_PORT,
  devReceiverPort,
  devReceiverUsed,
  openDevReceiver,
  startWebhookSink,
  type DevReceiver,
} from '../dev/index.js';
export {
  dbStatus,
  planRotation,
  rotateStore,
  ROTATION_PLAN_SCHEMA,
  type DbStatus,
  type OriginalFence,
  type RotationPlan,
  type RotationResult,
} from './store-rotation.js';
export {
  applyWorkMove,
  planWorkMove,
  WORK_MOVE_PLAN_SCHEMA,
  type WorkMovePlan,
  type WorkMoveResult,
} from './work-move.js';
export type { RaisedFence } from './receiver-fences.js';
export type { ActivationSetting } from '../run-authority/index.js';
export {
  chooseStore,
  describeStore,
  isServiceStore,
  keepsFilesInRoot,
  migrateRootStore,
  PG_COMPONENTS,
  readStoreConfig,
  storeChoices,
  STORE_NAMESPACE,
  takesServiceOptions,
  withRootPostgres,
  type MigrateResult,
  type StoreConfig,
} from './store-config.js';
export { clusterStatus, type ClusterStatus } from './cluster-status.js';
export {
  CLUSTER_ROTATION_PLAN_SCHEMA,
  planClusterRotation,
  rotateCluster,
  type ClusterRotation,
  type ClusterRotationPlan,
} from './cluster-rotation.js';
export {
  ClusterNode,
  CLUSTER_COMPONENTS,
  DEFAULT_CLUSTER_SCHEMA,
  drainClusterInstance,
  initCluster,
  submitClusterRun,
  type ClusterAccess,
  type ClusterNodeOptions,
} from './cluster.js';
export {
  cancelClusterRun,
  clusterRunEvents,
  resolveClusterRun,
  showClusterRun,
  type ClusterResolveOptions,
} from './cluster-runs.js';
