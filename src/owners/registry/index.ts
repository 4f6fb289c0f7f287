/** Public API of the registry owner: projects and Goal routes of a runtime root. */
export {
  REGISTRY_SCHEMA,
  type GoalStatus,
  type GoalStatusUpdate,
  type RegisterGoalInput,
  type Registry,
  type RegistryDocument,
  type RegistryExactRead,
  type RegistryFinding,
  type RegistryFindingCode,
  type RegistryGoal,
  type RegistryHistoricalRead,
  type RegistryProject,
  type RegistryRead,
} from './contract.js';
export {
  decodeRegistry,
  validateRegistryGoal,
  projectNotFound,
  EMPTY_REGISTRY,
  GOAL_INSTANCE_ID,
  goalRoute,
  PROJECT_ID,
  REGISTRY_MAX_BYTES,
  registryRevision,
} from './codec.js';
export { openFileRegistry } from './file.js';
export { memoryRegistry } from './memory.js';
export { recovery } from './recovery.js';
