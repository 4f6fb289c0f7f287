/**
 * Public API of the owners of a runtime root. Each owner is a namespace (their recovery-contract
 * functions share names such as readHistorical); each is also importable from its own folder.
 */
export { LAYOUT, GOAL_ID, ROOT_MARKERS, assertGoalId, assertRuntimeRoot } from './layout.js';
export * as registry from './registry/index.js';
export * as config from './config/index.js';
export * as goal from './goal/index.js';
export * as work from './work/index.js';
export * as session from './session/index.js';
export * as effect from './effect/index.js';
export * as quota from './quota/index.js';
export * as scheduler from './scheduler/index.js';
