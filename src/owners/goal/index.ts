/** Public API of the goal owner: Goal identity (alias and lifetime), lifecycle and documents. */
export {
  GOAL_SCHEMA,
  type AdoptLifetimeRequest,
  type BindingMatch,
  type GoalLineage,
  type CreateGoalOptions,
  type GoalDoc,
  type GoalFinding,
  type GoalFindingCode,
  type GoalHistoricalRead,
  type GoalLifecycle,
  type GoalRecord,
  type GoalRef,
  type GoalStore,
  type GoalSupersededHere,
} from './contract.js';
export {
  assertDocName,
  assertGoalRef,
  decodeGoal,
  DOC_NAME,
  GOAL_DOC_MAX_BYTES,
  GOAL_MAX_DOCS,
  goalRef,
  isGoalRef,
  lineageOf,
  mintGoalInstanceId,
  sameGoalRef,
} from './codec.js';
export { deliveryFence, fenceGeneration, lifetimeFence } from './fence.js';
export { DEFAULT_PROJECT, type GoalStoreOptions } from './store.js';
export { goalNotFound, goalRetired } from './errors.js';
export { openFileGoalStore } from './file.js';
export { memoryGoalStore } from './memory.js';
export { goalOfSubject, recovery } from './recovery.js';
export { adoptionSteps } from './adopt.js';
