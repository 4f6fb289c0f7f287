/**
 * Goals and their work for the CLI and the daemon: creating a Goal with its documents, moving it
 * through its lifecycle, listing and showing it with its Todo counts — and, for a lifetime a
 * recovery superseded, where it continues, as the run authority records it — and opening one
 * Goal's work. Every change goes through the goal and work owners' APIs; an unknown Goal is the goal owner's
 * `goal_not_found` (one code, one next action, wherever it is asked).
 */
import { DEFAULT_STORE_PROVIDER, goal as goalOwner, work as workOwner, type RootOwners } from '../owners/index.js';
import { conflict, isLoopxError } from '../core/index.js';
import {
  askReceiversForNewerLifetime,
  assertLifetimeLive,
  withGuardedGoalWork,
  type LifetimeGuard,
} from '../engine/index.js';
import type { GoalWriterGuard, RootAccess } from './root.js';
import { parseStoreIdentity } from '../store/index.js';
import { withAuthority, withRootOwners } from './root.js';

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
 *
 * With the run authority as `guard` (the CLI and the daemon): an alias whose lifetime in this root
 * a recovery superseded is never created here again (`goal_alias_superseded`) — also after its
 * directory was removed by hand — and a retired alias's new lifetime never adopts the retired
 * one's work store: that store is set aside first.
 */
export async function createGoal(
  root: string,
  goalId: string,
  title: string,
  docs: readonly GoalDocInput[] = [],
  options: { workProvider?: workOwner.WorkProviderRequest; guard?: GoalWriterGuard } = {},
): Promise<goalOwner.GoalRecord> {
  for (const d of docs) goalOwner.assertDocName(d.name);
  return withRootOwners(
    root,
    async (owners) => {
      const existing = owners.goals.get(goalId);
      const superseded = (await options.guard?.supersededHere(goalId)) ?? [];
      if (superseded.length > 0) throw goalAliasSuperseded(goalId, superseded[superseded.length - 1]!.successor_root);
      if (existing?.superseded !== undefined) throw goalAliasSuperseded(goalId, null);
      if (existing !== undefined && existing.lifecycle !== 'retired') await assertLifetimeLive(options.guard, existing);
      const location = workOwner.settleGoalWorkLocation(root, goalId, options.workProvider, {
        exists: existing !== undefined,
      });
      await workOwner.assertGoalWorkReady(location);
      if (existing?.lifecycle === 'retired') workOwner.setAsideRetiredWork(root, goalId, existing.goal_instance_id);
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
const TRANSITION_FROM: Record<GoalTransition, goalOwner.GoalLifecycle | null> = {
  pause: 'active',
  resume: 'paused',
  retire: null,
};

/**
 * Pause, resume or retire a Goal, conditional on the lifecycle it was read in. A lifetime a
 * recovery superseded (in the run authority `guard`, or recorded by this root) changes no more:
 * `goal_lifetime_superseded`.
 */
export function transitionGoal(
  root: string,
  goalId: string,
  transition: GoalTransition,
  guard?: LifetimeGuard,
): Promise<goalOwner.GoalRecord> {
  return withRootOwners(
    root,
    async (owners) => {
      const current = owners.goals.get(goalId);
      if (!current) throw goalOwner.goalNotFound(goalId);
      await assertLifetimeLive(guard, current);
      await askReceiversForNewerLifetime(owners, current);
      const ref = { goal_id: current.goal_id, goal_instance_id: current.goal_instance_id };
      const expected = TRANSITION_FROM[transition] ?? current.lifecycle;
      if (transition === 'pause') return owners.goals.pause(ref, expected);
      if (transition === 'resume') return owners.goals.resume(ref, expected);
      return owners.goals.retire(ref, expected);
    },
    { write: `goal ${transition}` },
  );
}

/** An alias whose lifetime in this root a recovery superseded: the Goal lives on in the recovered root. */
const goalAliasSuperseded = (goalId: string, successorRoot: string | null) =>
  conflict(
    'goal_alias_superseded',
    `Goal ${goalId} of this root was recovered into another root${successorRoot === null ? '' : ` (root id ${successorRoot})`}; this root does not create it again.`,
    {
      nextAction: `choose another alias, or continue in the recovered root: loopx goal show ${goalId} --root <recovered-root>`,
      details: { goal_id: goalId, successor_root: successorRoot },
    },
  );

export const listGoals = (root: string): Promise<goalOwner.GoalRecord[]> =>
  withRootOwners(root, (owners) => owners.goals.list());

/**
 * A Goal with its Todo counts, history length, handoff mode and work provider (`loopx goal show`,
 * `GET /api/goals/:id`) — with `authority` (where the run authority is), also `superseded_by`:
 * where a recovery took its lifetime (goalSupersession), or null.
 */
export async function goalDetail(
  owners: RootOwners,
  root: string,
  goalId: string,
  options: { todos?: boolean; authority?: Pick<RootAccess, 'authorityDir'> } = {},
) {
  const record = owners.goals.get(goalId);
  if (!record) throw goalOwner.goalNotFound(goalId);
  const superseded_by =
    options.authority === undefined ? undefined : await goalSupersession(options.authority, record.goal_instance_id);
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
    const work_provider: string = parseStoreIdentity(view.store_identity)?.provider ?? DEFAULT_STORE_PROVIDER;
    return {
      record,
      counts,
      committed_transactions: view.cursor,
      handoff_mode: view.handoff_mode,
      work_provider,
      last_activity,
      ...(options.todos ? { todos } : {}),
      ...(superseded_by !== undefined ? { superseded_by } : {}),
    };
  } finally {
    work.close();
  }
}

export const showGoal = (
  root: string,
  goalId: string,
  options: { todos?: boolean; authority?: Pick<RootAccess, 'authorityDir'> } = {},
) => withRootOwners(root, (owners) => goalDetail(owners, root, goalId, options));

/** Where a recovery took a Goal's lifetime, as the run authority records it. */
export interface GoalSupersession {
  /** The new lifetime, in the root the recovery made. */
  readonly goal_instance_id: string;
  /** That root's id (the authority's binding). */
  readonly root_id: string;
  readonly recovery_id: string;
  readonly recorded_at: string;
  /**
   * That root's directory while the authority finds it there, else undefined. Absolute: a caller
   * renders it — the CLI relative to the working directory, the daemon by the name it serves it
   * under — and never prints it as it is.
   */
  readonly directory: string | undefined;
}

/**
 * The supersession the run authority records of `goalInstanceId`, or null. A read: the authority is
 * never created (one that does not exist records nothing), and a record it cannot read is its
 * refusal (`authority_rolled_back`, `authority_lifetime_corrupt`), never "not superseded".
 */
export async function goalSupersession(
  a: Pick<RootAccess, 'authorityDir'>,
  goalInstanceId: string,
): Promise<GoalSupersession | null> {
  try {
    return await withAuthority(
      a,
      async (authority) => {
        const s = await authority.lifetimeSupersession(goalInstanceId);
        if (s === undefined) return null;
        const directory = await authority.rootDirectory(s.successor_root).catch(() => undefined);
        return {
          goal_instance_id: s.successor_instance_id,
          root_id: s.successor_root,
          recovery_id: s.recovery_id,
          recorded_at: s.recorded_at,
          directory,
        };
      },
      { create: false },
    );
  } catch (e) {
    if (isLoopxError(e) && e.code === 'authority_missing') return null;
    throw e;
  }
}

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
      const open = () => workOwner.openGoalWork({ root, goal_id: goalId });
      // A writer's lifetime and work store are checked (and the store's mark moved) through the guard; a reader opens as it is.
      if (options.write !== undefined) return withGuardedGoalWork(options.guard, goal, open, fn);
      const work = await open();
      try {
        return await fn(work);
      } finally {
        work.close();
      }
    },
    options.write === undefined ? {} : { write: options.write },
  );
}
