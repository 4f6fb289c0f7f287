/**
 * Goals and their work for the CLI and the daemon: creating a Goal with its documents, moving it
 * through its lifecycle, listing and showing it with its Todo counts, and opening one Goal's work.
 * Every change goes through the goal and work owners' APIs; an unknown Goal is the goal owner's
 * `goal_not_found` (one code, one next action, wherever it is asked).
 */
import { goal as goalOwner, work as workOwner, type RootOwners } from '../owners/index.js';
import type { LifetimeGuard } from '../engine/index.js';
import { goalLifetimeSuperseded } from '../run-authority/index.js';
import { POSTGRESQL_PROVIDER, parseStoreIdentity } from '../store/index.js';
import { withRootOwners } from './root.js';

/** The public shape of a Goal (`loopx goal … --json`). */
export const goalView = (g: goalOwner.GoalRecord) => ({
  goal_id: g.goal_id,
  goal_instance_id: g.goal_instance_id,
  title: g.title,
  lifecycle: g.lifecycle,
  docs: g.docs.map((d) => ({ name: d.name, sha256: d.sha256, bytes: d.bytes })),
});

export interface GoalDocInput {
  readonly name: string;
  readonly content: string;
}

/**
 * A new Goal (a fresh lifetime) with its documents and an empty work store — where `workProvider`
 * asks (`goal create --work-provider`), else where the root keeps Goal state. Every document name
 * and the store's readiness are checked before the Goal is created, so a refusal leaves no
 * half-made Goal (a PostgreSQL choice whose schema is not migrated stays recorded, for
 * `loopx db migrate` to find). An existing Goal's work never moves (`work_provider_change_refused`).
 */
export async function createGoal(
  root: string,
  goalId: string,
  title: string,
  docs: readonly GoalDocInput[] = [],
  options: { workProvider?: workOwner.WorkProviderRequest } = {},
): Promise<goalOwner.GoalRecord> {
  for (const d of docs) goalOwner.assertDocName(d.name);
  return withRootOwners(
    root,
    async (owners) => {
      const exists = owners.goals.get(goalId) !== undefined;
      const location = workOwner.settleGoalWorkLocation(root, goalId, options.workProvider, { exists });
      await workOwner.assertGoalWorkReady(location);
      const created = owners.goals.create(goalId, title);
      for (const d of docs) owners.goals.addDoc(goalId, d.name, d.content);
      (await workOwner.openGoalWork({ root, goal_id: goalId, create: true })).close();
      return owners.goals.get(goalId) ?? created;
    },
    { write: 'goal create' },
  );
}

export type GoalTransition = 'pause' | 'resume' | 'retire';

/** Where each transition starts from; retiring ends a Goal's lifetime from whichever state it is in. */
const TRANSITION_FROM: Record<GoalTransition, goalOwner.GoalLifecycle | null> = { pause: 'active', resume: 'paused', retire: null };

/** Pause, resume or retire a Goal, conditional on the lifecycle it was read in. */
export function transitionGoal(root: string, goalId: string, transition: GoalTransition): Promise<goalOwner.GoalRecord> {
  return withRootOwners(
    root,
    (owners) => {
      const current = owners.goals.get(goalId);
      if (!current) throw goalOwner.goalNotFound(goalId);
      const ref = { goal_id: current.goal_id, goal_instance_id: current.goal_instance_id };
      const expected = TRANSITION_FROM[transition] ?? current.lifecycle;
      if (transition === 'pause') return owners.goals.pause(ref, expected);
      if (transition === 'resume') return owners.goals.resume(ref, expected);
      return owners.goals.retire(ref, expected);
    },
    { write: `goal ${transition}` },
  );
}

export const listGoals = (root: string): Promise<goalOwner.GoalRecord[]> => withRootOwners(root, (owners) => owners.goals.list());

/** A Goal with its Todo counts, history length, handoff mode and work provider (`loopx goal show`, `GET /api/goals/:id`). */
export async function goalDetail(owners: RootOwners, root: string, goalId: string, options: { todos?: boolean } = {}) {
  const record = owners.goals.get(goalId);
  if (!record) throw goalOwner.goalNotFound(goalId);
  const work = await workOwner.openGoalWork({ root, goal_id: goalId });
  try {
    const todos = await work.listTodos();
    const counts: Record<string, number> = { open: 0, done: 0, blocked: 0, deferred: 0 };
    for (const t of todos) counts[t.status] = (counts[t.status] ?? 0) + 1;
    const view = await work.view();
    // The last committed transaction's time: the Goal's last activity (null: nothing committed yet).
    const last = view.cursor > 0 ? (await work.history(view.cursor - 1, 1)).transactions[0] : undefined;
    const last_activity = last?.receipt.committed_at ?? null;
    // Where the opened store is, read from its identity (`<provider>:<hex>`), not from what was asked.
    const work_provider: 'sqlite' | 'postgresql' = parseStoreIdentity(view.store_identity)?.provider === POSTGRESQL_PROVIDER ? 'postgresql' : 'sqlite';
    return { record, counts, committed_transactions: view.cursor, handoff_mode: view.handoff_mode, work_provider, last_activity, ...(options.todos ? { todos } : {}) };
  } finally {
    work.close();
  }
}

export const showGoal = (root: string, goalId: string, options: { todos?: boolean } = {}) => withRootOwners(root, (owners) => goalDetail(owners, root, goalId, options));

/**
 * One existing Goal's work owner for `fn`, closed after; `goal_not_found` for an unknown Goal.
 * With `write` (the writer's name) `fn` changes the work: it is admitted through the admission gate.
 */
export async function withGoalWork<T>(
  root: string,
  goalId: string,
  fn: (work: workOwner.WorkOwner) => Promise<T> | T,
  options: { write?: string; guard?: LifetimeGuard } = {},
): Promise<T> {
  return withRootOwners(
    root,
    async (owners) => {
      const goal = owners.goals.get(goalId);
      if (!goal) throw goalOwner.goalNotFound(goalId);
      if ((await options.guard?.lifetimeSupersession(goal.goal_instance_id)) !== undefined) throw goalLifetimeSuperseded(goalId);
      const work = await workOwner.openGoalWork({ root, goal_id: goalId });
      try {
        return await fn(work);
      } finally {
        work.close();
      }
    },
    options.write === undefined ? {} : { write: options.write },
  );
}
