/**
 * Refusals about a Goal's identity and lifecycle, built only here: every layer that finds a Goal
 * missing (the goal store, the work owner, the engine, the CLI and the daemon) refuses with these.
 */
import { conflict, notFound, type LoopxError } from '../../core/index.js';

/** No Goal with this id in the root: not found (exit 3, HTTP 404). */
export const goalNotFound = (goalId: string): LoopxError =>
  notFound('goal_not_found', `No Goal ${goalId} in this root.`, {
    nextAction: 'list Goals: loopx goal list',
    details: { goal_id: goalId },
  });

/** A retired lifetime is final: no lifecycle change, no new document. */
export const goalRetired = (goalId: string): LoopxError =>
  conflict('goal_retired', `Goal ${goalId} is retired; a retired lifetime is final.`, {
    nextAction: 'create the Goal again for a new lifetime',
  });
