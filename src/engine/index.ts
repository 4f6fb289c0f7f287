/** Public API of the run engine. */
export { openRunReader, type RunReader } from './run-reader.js';
export {
  Engine,
  openEngine,
  openReadOnlyEngine,
  runSummary,
  FAULT_AFTER_EFFECT_SETTLED,
  FAULT_AFTER_MUTATION_INTENT,
  FAULT_AFTER_QUOTA_DEBIT,
  FAULT_BEFORE_TURN_SETTLED,
  TURN_DEBIT_UNIT,
  turnTokens,
  FAULT_IMPORT_AFTER_KERNEL_COMMIT,
  type EngineOptions,
  type EventsOptions,
  type ExportedSnapshot,
  type ReadOnlyEngineOptions,
  type SignedExport,
  type SnapshotVerification,
  type CallEvidence,
  type Resolution,
  type RunView,
  type StartOptions,
  type UncertainEffect,
} from './engine.js';
export {
  defineAgent,
  definitionBody,
  loadAgentFile,
  parseAgentDefinition,
  agentDefinitionToFile,
  AGENT_FILE_SCHEMA,
  type AgentDefinition,
  type ScriptStep,
} from './agent.js';
export { defineApplication, convenienceApplication, type Application, type ApplicationSpec } from './application.js';
export {
  clusterApplication,
  clusterToolPlan,
  CLUSTER_TOOL_PLAN,
  CLUSTER_COMPATIBILITY,
  type ClusterToolOptions,
} from './cluster-tools.js';
export {
  builtinApplication,
  builtinToolPlan,
  BUILTIN_TOOL_PLAN,
  BUILTIN_COMPATIBILITY,
  FAULT_AFTER_MUTATING_DISPATCH,
} from './builtin.js';
export {
  computePlanIdentity,
  sourceIdentityOf,
  type ComponentIdentity,
  type ComponentKind,
  type PlanIdentity,
} from './identity.js';
export { messageId, modelCallId, toolCallId, type Message, type Part, type Role } from './messages.js';
export { EVENT_TYPES, type EventType, type NewEvent, type RunEvent } from './events.js';
export {
  ToolPlanHost,
  isInteractionRequest,
  type Tool,
  type ToolContext,
  type ToolDefinition,
  type ToolPlan,
  type ToolPlanLease,
  type JsonValue,
  type InteractionRequest,
} from './tools.js';
export type { ModelProvider, ModelRequest, ModelResponse, ModelToolCall } from './providers/provider.js';
export { scriptedProvider, SCRIPTED_PROVIDER } from './providers/scripted.js';
export { aiSdkProvider } from './providers/ai-sdk.js';
export type { RunStore, RunHead, MutationRecord, MutationState } from './run-store/contract.js';
export { memoryRunStore } from './run-store/memory.js';
export { openSqliteRunStore } from './run-store/sqlite.js';
export {
  openPgRunStore,
  RUNS_COMPONENT,
  RUNS_PG_MIGRATIONS,
  type PgRunStoreOptions,
  type RunFence,
} from './run-store/postgres.js';
export {
  goalWorkToolPlan,
  goalWorkFenceOperation,
  GOAL_WORK_TOOL_PLAN,
  EFFECTS_NAMESPACE,
  type LifetimeGuard,
} from './goal-tools.js';
export {
  askReceiversForNewerLifetime,
  assertLifetimeLive,
  observeGoalWork,
  withGuardedGoalWork,
} from './goal-guard.js';
export { callOfOperation, operationIdOf } from './mutations.js';
export { readHistoricalRootId, readHistoricalRuns, type HistoricalRun } from './run-store/historical.js';
export * as mcp from './mcp/index.js';
export { deliveryOfEffect, isDelivery, type Delivery, type DeliveryResult } from './deliveries.js';
