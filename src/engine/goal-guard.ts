/**
 * The checks every writer of a Goal's work makes before it acts, in one place (the CLI's and the
 * daemon's Todo writers, `work run`, and each call of a Goal work run):
 *
 * - the lifetime is live: neither superseded in the run authority (a recovery replaced it) nor
 *   recorded as superseded by this root itself (a receiver answered `fence_stale` with a newer
 *   fence of its own lineage) — else `goal_lifetime_superseded`;
 * - the work store is the lifetime's own and not behind what its writers committed: the
 *   authority's work mark (run-authority/work-marks.ts) — else `goal_identity_mismatch` or
 *   `root_rolled_back`. Asked again after the writer committed, so the mark follows the store.
 *
 * A guard without work marks (an embedding's own, or a test's) checks the lifetime only.
 */
import { operatorPath, type LoopxError } from '../core/index.js';
import { goalLifetimeSuperseded, type WorkHead } from '../run-authority/index.js';
import { effect as effectOwner, goal as goalOwner, type work as workOwner } from '../owners/index.js';

/** Where a Goal work writer learns whether its lifetime was superseded, and marks its work store (the run authority). */
export interface LifetimeGuard {
  lifetimeSupersession(goalInstanceId: string): Promise<unknown>;
  observeWorkHead?(head: WorkHead): Promise<unknown>;
  /** The directory a root id is bound to, while it is there (the run authority's binding): where a refusal points. */
  rootDirectory?(rootId: string): Promise<string | undefined>;
}

/**
 * `goal_lifetime_superseded` for a lifetime the authority records as superseded: its next action
 * names the root the recovery made, as the operator types it from here, when the authority still
 * finds that root's directory; else it shows the Goal here.
 */
export async function supersededRefusal(
  guard: LifetimeGuard | undefined,
  goalId: string,
  supersession: unknown,
): Promise<LoopxError> {
  const rootId = (supersession as { successor_root?: unknown } | undefined)?.successor_root;
  const dir = typeof rootId === 'string' ? await guard?.rootDirectory?.(rootId).catch(() => undefined) : undefined;
  return goalLifetimeSuperseded(goalId, dir === undefined ? undefined : operatorPath(dir));
}

/** Refused (`supersededRefusal`) when the authority records `goalInstanceId` as superseded. */
export async function refuseSupersededLifetime(
  guard: LifetimeGuard | undefined,
  goalId: string,
  goalInstanceId: string,
): Promise<void> {
  const s = await guard?.lifetimeSupersession(goalInstanceId);
  if (s !== undefined) throw await supersededRefusal(guard, goalId, s);
}

/** `goal_lifetime_superseded` unless the Goal's lifetime is live (see the header). */
export async function assertLifetimeLive(guard: LifetimeGuard | undefined, goal: goalOwner.GoalRecord): Promise<void> {
  if (goal.superseded !== undefined) throw goalLifetimeSuperseded(goal.goal_id);
  await refuseSupersededLifetime(guard, goal.goal_id, goal.goal_instance_id);
}

/** The work store's head checked against the authority's mark of it, and the mark moved to it. */
export async function observeGoalWork(
  guard: LifetimeGuard | undefined,
  goal: goalOwner.GoalRecord,
  work: workOwner.WorkOwner,
): Promise<void> {
  if (guard?.observeWorkHead === undefined) return;
  // Where the store lives refuses first (a restored database names its own next action).
  await work.assertWritable();
  const view = await work.view();
  await guard.observeWorkHead({
    goal_id: goal.goal_id,
    goal_instance_id: goal.goal_instance_id,
    store_identity: view.store_identity,
    cursor: view.cursor,
    provider_revision: view.provider_revision,
  });
}

/** Open a Goal's work for a writer: the lifetime checked, the store's mark checked; `fn`, then the mark moved. */
export async function withGuardedGoalWork<T>(
  guard: LifetimeGuard | undefined,
  goal: goalOwner.GoalRecord,
  open: () => Promise<workOwner.WorkOwner>,
  fn: (work: workOwner.WorkOwner) => Promise<T> | T,
): Promise<T> {
  await assertLifetimeLive(guard, goal);
  const work = await open();
  try {
    await observeGoalWork(guard, goal, work);
    const out = await fn(work);
    await observeGoalWork(guard, goal, work);
    return out;
  } finally {
    work.close();
  }
}

/** How long a root waits for each receiver's answer about its Goal's lineage (an unreachable one answers nothing). */
export const RECEIVER_FENCE_QUESTION_MS = 5_000;

/**
 * Before a work run or a lifecycle change: ask each receiver the Goal delivered to for its lineage's
 * newest fence (`GET <base>/fences?goal_lineage=L`). A receiver holding a fence of a later
 * generation than this lifetime's (owners/goal/fence.ts) has seen a later lifetime of the Goal deliver — recovered elsewhere, with an
 * authority this root never saw: the root records its own supersession (once; the lifetime admits no
 * writer from then on) and the writer is refused `goal_lifetime_superseded` before it writes
 * anything. A receiver that does not answer clearly decides nothing here: the fence at the receiver
 * still refuses this lifetime's deliveries, and the first refusal records the same supersession.
 * Local writes made before the question is asked (by a build that does not ask) are a stated limit.
 */
export async function askReceiversForNewerLifetime(
  owners: { readonly goals: goalOwner.GoalStore; readonly effects: effectOwner.EffectJournal },
  goal: goalOwner.GoalRecord,
  options: { readonly timeoutMs?: number } = {},
): Promise<void> {
  if (goal.superseded !== undefined) throw goalLifetimeSuperseded(goal.goal_id);
  const lineage = goalOwner.lineageOf(goal);
  const receivers = await effectOwner.goalReceivers(owners.effects, goal.goal_id, lineage.lineage_id);
  const answers = await Promise.all(
    receivers.map((url) =>
      effectOwner.receiverNewestFence(url, lineage.lineage_id, {
        timeoutMs: options.timeoutMs ?? RECEIVER_FENCE_QUESTION_MS,
      }),
    ),
  );
  const newer = answers
    .map((a) => (a.status === 'answered' && a.newest_fence !== null ? a.newest_fence : 0))
    .reduce((m, f) => Math.max(m, f), 0);
  // A newer fence of this same lifetime (a rotated installation's) says nothing of supersession: only a later generation's does.
  if (goalOwner.fenceGeneration(newer) <= lineage.generation) return;
  owners.goals.recordSuperseded(
    { goal_id: goal.goal_id, goal_instance_id: goal.goal_instance_id },
    { evidence: 'receiver_fence_stale', newest_fence: newer },
  );
  throw goalLifetimeSuperseded(goal.goal_id);
}
