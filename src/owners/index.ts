/** Public API of the owners of a runtime root. Each owner is also importable from its own folder. */
export { LAYOUT, GOAL_ID, assertGoalId } from './layout.js';
