/**
 * Goal work runs (`loopx work run`, the daemon's sample): admitting an engine run to one Goal and
 * driving it. The tools the run may call are the engine's `loopx.goal-work.v1` plan
 * (src/engine/goal-tools.ts); this is the orchestration around them.
 *
 * - The root's identity is checked first: a byte copy of a root (`root_is_copy`) opens no session,
 *   fence or lease.
 * - Only an active Goal takes work (`goal_not_active`, with the command that resumes it).
 * - A session is opened on the Goal, the Goal work store's writer fence is engaged for it, the
 *   Goal switches to hard leases, and a fresh run id is bound to the session before the first turn
 *   runs — so every call of the run finds its session. The run then suspends, exports and resumes
 *   like any other.
 *
 * It never writes an owner's files itself: every change goes through an owner's API. It is a
 * writer of the root: admitted through the admission gate (admission.ts) before the root's
 * identity is checked, holding its ticket until the run returns (already admitted by the
 * caller's `withRootEngine`, it rides on that ticket).
 */
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { rejected } from '../core/index.js';
import {
  askReceiversForNewerLifetime,
  assertLifetimeLive,
  EFFECTS_NAMESPACE,
  GOAL_WORK_TOOL_PLAN,
  goalWorkFenceOperation,
  loadAgentFile,
  observeGoalWork,
  type AgentDefinition,
  type Engine,
  type RunView,
} from '../engine/index.js';
import { goal as goalOwner, openRootOwners, work as workOwner, type session as sessionOwner } from '../owners/index.js';
import { withAdmission } from './admission.js';

export interface GoalWorkRunOptions {
  readonly root: string;
  readonly goalId: string;
  readonly agent: AgentDefinition;
  readonly turns?: number;
  readonly webhookUrl?: string;
  readonly input?: string;
  /** The run id to bind (default: a fresh one); a caller that answers before the run ends names it first (the daemon). */
  readonly runId?: string;
  /** Called once every admission check passed and the run is bound, just before its first turn. */
  readonly onStarting?: (runId: string) => void;
  /** The engine of the root (the CLI's has the run authority). */
  readonly engine: Engine;
}

export interface GoalWorkRunResult {
  readonly run: RunView;
  readonly goal: { readonly goal_id: string; readonly goal_instance_id: string };
  readonly session: {
    readonly session_id: string;
    readonly session_generation: number;
    readonly execution_generation: number;
  };
}

/** The Goal work agents in a directory (its `*.json` agent files whose tool plan is Goal work; others and unreadable files are left out). */
export function goalWorkAgents(dir: string): AgentDefinition[] {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((n) => n.endsWith('.json'))
      .sort();
  } catch {
    return [];
  }
  const agents: AgentDefinition[] = [];
  for (const n of names) {
    try {
      const a = loadAgentFile(join(dir, n));
      if (a.toolPlan === GOAL_WORK_TOOL_PLAN) agents.push(a);
    } catch {
      // not an agent file: not offered
    }
  }
  return agents;
}

/** A fresh run id for a Goal work run. */
export const newRunId = (): string => `run_${randomBytes(10).toString('hex')}`;

/**
 * `loopx work run`: open a session on the active Goal, fence the Goal's work store for it,
 * switch the Goal to hard leases, bind a fresh run to the session and drive it — as an admitted
 * writer (`admission_closed` while a backup holds the root closed).
 */
export const runGoalWork = (options: GoalWorkRunOptions): Promise<GoalWorkRunResult> =>
  withAdmission(options.root, 'work run', () => driveGoalWork(options));

async function driveGoalWork(options: GoalWorkRunOptions): Promise<GoalWorkRunResult> {
  // The root's identity first: a byte copy of a root (root_is_copy) opens no session, fence or lease.
  await options.engine.rootId();
  const owners = openRootOwners(options.root);
  let bound: sessionOwner.Session;
  let ref: { goal_id: string; goal_instance_id: string };
  let title: string;
  const runId = options.runId ?? newRunId();
  try {
    const goal = owners.goals.get(options.goalId);
    if (!goal) throw goalOwner.goalNotFound(options.goalId);
    if (goal.lifecycle !== 'active') {
      throw rejected(
        'goal_not_active',
        `Goal ${options.goalId} is ${goal.lifecycle}; only an active Goal takes work.`,
        {
          nextAction: `resume it: loopx goal resume ${options.goalId}`,
        },
      );
    }
    // A lifetime a recovery superseded (recorded in the run authority, outside any root) takes no new work.
    await assertLifetimeLive(options.engine.authority, goal);
    // …nor one a receiver says a later lifetime of the Goal (recovered elsewhere) has delivered under.
    await askReceiversForNewerLifetime(owners, goal);
    ref = { goal_id: goal.goal_id, goal_instance_id: goal.goal_instance_id };
    title = goal.title;
    if (options.webhookUrl !== undefined) {
      const current = owners.config.read();
      owners.config.apply({
        expectedRevision: current.revision,
        transactionId: `effects-${randomBytes(8).toString('hex')}`,
        changes: {
          [EFFECTS_NAMESPACE]: { schema_version: 'loopx_effects_config_v0', webhook_url: options.webhookUrl },
        },
      });
    }
    const work = await workOwner.openGoalWork({ root: options.root, goal_id: goal.goal_id });
    try {
      // The store is this lifetime's and not behind what it committed (goal_identity_mismatch, root_rolled_back).
      await observeGoalWork(options.engine.authority, goal, work);
      const session = await owners.sessions.openSession(ref);
      const fence = (await work.engageFence({ operation_id: goalWorkFenceOperation(session.session_id) })).receipt
        .fence!;
      if ((await work.view()).handoff_mode !== 'hard_lease') {
        await work.setHandoffMode({
          operation_id: `session:${session.session_id}:hard-lease`,
          fence,
          handoff_mode: 'hard_lease',
        });
      }
      // Bound before the first turn runs, so every call of the run finds its session.
      bound = await owners.sessions.bindRun(session.session_id, runId, session.execution_generation);
      await observeGoalWork(options.engine.authority, goal, work);
    } finally {
      work.close();
    }
  } finally {
    owners.close();
  }
  options.onStarting?.(runId);
  const input = options.input ?? `Work on Goal ${ref.goal_id}: ${title}. Use todo.list to see the open Todos.`;
  const run = await options.engine.start(options.agent, {
    input,
    runId,
    ...(options.turns !== undefined ? { suspendAfterTurns: options.turns } : {}),
  });
  return {
    run,
    goal: ref,
    session: {
      session_id: bound.session_id,
      session_generation: bound.session_generation,
      execution_generation: bound.execution_generation,
    },
  };
}
