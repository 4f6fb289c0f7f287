/** Opening the owners of the runtime root for the Goal/Todo commands. */
import { withRootOwners, type RootOwners } from '../../engine/index.js';
import { goal as goalOwner, work as workOwner } from '../../owners/index.js';
import { existingRoot, type GlobalOptions } from '../context.js';

/** The root's owners; `root_not_found` (never an empty answer) when the root does not exist. */
export const withOwners = <T>(g: GlobalOptions, fn: (owners: RootOwners, root: string) => Promise<T> | T): Promise<T> => {
  const root = existingRoot(g);
  return withRootOwners(root, (owners) => fn(owners, root));
};

export async function withGoalWork<T>(g: GlobalOptions, goalId: string, fn: (work: workOwner.WorkOwner) => Promise<T> | T): Promise<T> {
  return withOwners(g, async (owners, root) => {
    if (!owners.goals.get(goalId)) throw goalOwner.goalNotFound(goalId);
    const work = workOwner.openGoalWork({ root, goal_id: goalId });
    try {
      return await fn(work);
    } finally {
      work.close();
    }
  });
}
