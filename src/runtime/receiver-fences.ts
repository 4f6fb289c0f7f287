/**
 * After the store a Goal's work is written through changes — a PostgreSQL installation rotated
 * (`db rotate`), the Goal's work moved to another provider (`goal move-work`) — each receiver the
 * Goal delivered to has its fence for the Goal's lineage raised to the Goal's delivery fence on
 * the new store (owners/goal/fence.ts), for the Goal's lifetime: a process still writing through
 * the store left behind (an old primary started again, a process that held the moved store open)
 * is refused there from then on, even before the new store's first delivery. A receiver that does
 * not answer clearly is reported, not waited for: the new store's first delivery raises it too.
 */
import { effect as effectOwner, goal as goalOwner, work as workOwner } from '../owners/index.js';
import { withRootOwners } from './root.js';

/**
 * A receiver's fence as raised: `raised` (it refuses the store left behind from now on), `unknown`
 * (it did not answer clearly), `refused` (it follows a later lifetime of the Goal already),
 * `conflict` (another lifetime of the Goal holds that fence there).
 */
export interface RaisedFence {
  readonly goal_id: string;
  /** The receiver as the effect journal names it (`webhook:<host>:<port>`; never its path or query). */
  readonly target: string;
  readonly fence: number;
  readonly result: 'raised' | 'unknown' | 'refused' | 'conflict';
}

/** How long each receiver is given to raise its fence. */
const RECEIVER_FENCE_MS = 5_000;

export async function raiseReceiverFences(root: string, goalIds: readonly string[]): Promise<RaisedFence[]> {
  if (goalIds.length === 0) return [];
  return withRootOwners(root, async (owners) => {
    const raised: RaisedFence[] = [];
    for (const goalId of goalIds) {
      const goal = owners.goals.get(goalId);
      if (goal === undefined) continue;
      const work = await workOwner.openGoalWork({ root, goal_id: goalId });
      const incarnation = (await work.view().finally(() => work.close())).delivery_incarnation;
      const lineage = goalOwner.lineageOf(goal);
      const fence = goalOwner.deliveryFence(lineage, incarnation);
      for (const url of await effectOwner.goalReceivers(owners.effects, goalId, lineage.lineage_id)) {
        const r = await effectOwner.advanceReceiverFence(url, lineage.lineage_id, fence, {
          lifetime: goal.goal_instance_id,
          timeoutMs: RECEIVER_FENCE_MS,
        });
        const result = r.status === 'advanced' || r.status === 'already' ? 'raised' : r.status;
        raised.push({ goal_id: goalId, target: effectOwner.webhookTarget(url), fence, result });
      }
    }
    return raised;
  });
}
