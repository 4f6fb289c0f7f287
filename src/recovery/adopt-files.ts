/**
 * Where a destination root keeps its recovery's files. Imports nothing: the recovery guard
 * (adopt-guard.ts) and the phase journal name these paths without loading the planner.
 */

/** The directory of a destination root that holds the plan and the phase journal. */
export const RECOVERY_DIR = 'recovery';
export const PLAN_FILE = 'plan.json';
