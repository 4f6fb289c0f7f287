/**
 * The `loopx.goal-work.v1` tool plan: the tools of a Goal work run, whose calls act on the Goal's
 * owners and nothing else. The orchestration that admits a run to a Goal (session, fence, hard
 * leases) is the runtime's (src/runtime/goal-work.ts); this file is what a run may call.
 *
 * - The plan is static; each call finds its context from the run id: the session bound to the run
 *   in this root, its fence token (read back from the work owner's receipt) and its execution
 *   generation. A run with no session here (e.g. imported from another root) gets a
 *   `goal_work_unbound` error result: it never acts on a Goal it was not admitted to. (The turn
 *   loop refuses such a run's turns with the same code before its first model call —
 *   goal-turns.ts — so this answer is the last line, for a binding lost mid-turn.)
 * - Both mutating tools describe their effect to the engine, which journals it in the effect owner
 *   under the call's operation id (intent before dispatch, outcome after — src/engine/mutations.ts),
 *   scoped to the Goal. A refusal before acting is a typed error (the engine settles it rejected);
 *   an outcome that is not known is the effect owner's typed `effect_outcome_unknown`.
 * - `todo.update` changes canonical work through the work owner, under that fence and a hard lease
 *   on the Todo, with the operation id as the work owner's (a repeat returns its receipt).
 * - `webhook.deliver` sends the journalled intent once, with an Idempotency-Key header; an unknown
 *   outcome stays unknown, never repeated. Its idempotency key is the LOGICAL operation's — the
 *   Goal's lineage and the delivered body — stable across retries and across the Goal's lifetimes,
 *   so a receiver stores a delivery once however often it is attempted. A delivery whose logical
 *   operation the journal already holds committed (in this lifetime, or recovered from an earlier
 *   one, "committed after capture" included) is not sent again: the call settles as that
 *   operation's duplicate. One whose earlier attempt is uncertain is refused until that attempt is
 *   reconciled. Each delivery carries the Goal's lineage, its lifetime's generation as a fence and
 *   the lifetime itself (`X-Loopx-Goal-Lineage`, `X-Loopx-Fence`, `X-Loopx-Goal-Lifetime`): the
 *   receiver refuses an older generation, and another lifetime at the same one.
 * - Every call first asks the run authority whether the Goal's lifetime was superseded by a
 *   recovery into another root (`goal_lifetime_superseded`): an old lifetime's run never writes,
 *   spends or delivers for the Goal again.
 *
 * It never writes an owner's files itself.
 */
import { canonicalJson, internal, rejected, sha256Hex } from '../core/index.js';
import { LOOPX_VERSION } from '../core/index.js';
import {
  effect as effectOwner,
  goal as goalOwner,
  openRootOwners,
  work as workOwner,
  type RootOwners,
} from '../owners/index.js';
import { goalLifetimeSuperseded } from '../run-authority/index.js';
import type { ComponentIdentity } from '../snapshot/index.js';
import { observeGoalWork, refuseSupersededLifetime, type LifetimeGuard } from './goal-guard.js';
import { sourceIdentityOf } from './identity.js';
import {
  effectOutput,
  type EffectIntent,
  type JsonValue,
  type Tool,
  type ToolContext,
  type ToolPlan,
} from './tools.js';

export const GOAL_WORK_TOOL_PLAN = 'loopx.goal-work.v1';
/** Machine-configuration namespace holding the external system's deliveries endpoint. */
export const EFFECTS_NAMESPACE = effectOwner.EFFECTS_CONFIG_NAMESPACE;

export type { LifetimeGuard } from './goal-guard.js';
const LEASE_TTL_MS = 10 * 60 * 1000;

let cachedSource: string | undefined;
const identity = (name: string): ComponentIdentity => ({
  kind: 'static_tool',
  name,
  module: 'loopx/engine/goal-work',
  version: LOOPX_VERSION,
  sourceSha256: (cachedSource ??= sourceIdentityOf(import.meta.url)),
});

/** A run no session of this root is bound to: it may not act on, or take turns for, Goal work here. */
export const goalWorkUnbound = () =>
  rejected(
    'goal_work_unbound',
    'This run is not bound to a Goal session in this root; it may not act on Goal work here.',
    {
      nextAction: 'start Goal work with loopx work run',
    },
  );

/** A receiver has seen this Goal deliver through a later installation of its store than the one this process writes through. */
const installationLeftBehind = (goalId: string) =>
  rejected(
    'goal_work_installation_superseded',
    `A receiver has seen Goal ${goalId} deliver through a rotated installation of its database; this process still writes through the one the root left behind.`,
    {
      nextAction: `stop this process and start the work again: loopx work run --goal ${goalId} --agent FILE`,
      details: { goal_id: goalId },
    },
  );

/** The work owner operation that engages a session's writer fence; its receipt holds the fence. */
export const goalWorkFenceOperation = (sessionId: string) => `session:${sessionId}:fence`;

interface CallContext {
  readonly goalId: string;
  readonly lineage: goalOwner.GoalLineage;
  /** The fence this call's deliveries carry: the lifetime's generation and the work store's installation (fence.ts). */
  readonly deliveryFence: number;
  /** The Goal's current lifetime (its `goal_instance_id`): the one that writes at the lineage's generation. */
  readonly lifetimeId: string;
  readonly work: workOwner.WorkOwner;
  readonly owners: RootOwners;
  readonly fence: workOwner.FenceToken;
  readonly leaseOwner: string;
  readonly executionKey: string;
}

/** Resolve the Goal context of a call from its run, run `fn`, and close what was opened. */
async function withCallContext<T>(
  root: string,
  guard: LifetimeGuard | undefined,
  ctx: ToolContext,
  fn: (c: CallContext) => Promise<T> | T,
): Promise<T> {
  const owners = openRootOwners(root);
  try {
    const session = (await owners.sessions.listSessions()).find((s) => s.run_id === ctx.runId && s.status === 'active');
    if (!session) throw goalWorkUnbound();
    await refuseSupersededLifetime(guard, session.goal_id, session.goal_instance_id);
    const goal = owners.goals.get(session.goal_id);
    if (goal?.goal_instance_id !== session.goal_instance_id) throw goalWorkUnbound();
    // The authority was asked above (for the session's lifetime, which is this one); the root's own record is asked here.
    if (goal.superseded !== undefined) throw goalLifetimeSuperseded(goal.goal_id);
    const work = await workOwner.openGoalWork({ root, goal_id: session.goal_id });
    try {
      await observeGoalWork(guard, goal, work);
      // A store the Goal's work moved out of delivers nothing more either (its writes are refused by the owner).
      const head = await work.view();
      if (head.moved_to !== undefined) throw workOwner.workStoreMoved(goal.goal_id, head.moved_to);
      const fence = (await work.readReceipt(goalWorkFenceOperation(session.session_id)))?.receipt.fence;
      if (!fence)
        throw rejected('goal_work_unfenced', 'The session holds no writer fence on the Goal work store.', {
          nextAction: 'start Goal work with loopx work run',
        });
      const out = await fn({
        goalId: session.goal_id,
        lineage: goalOwner.lineageOf(goal),
        deliveryFence: goalOwner.deliveryFence(goalOwner.lineageOf(goal), head.delivery_incarnation),
        lifetimeId: goal.goal_instance_id,
        work,
        owners,
        fence,
        leaseOwner: `session:${session.session_id}`,
        executionKey: `exec:${session.session_id}:${session.execution_generation}`,
      });
      // The mark follows what this call committed (a crash before this line is healed at the next open).
      await observeGoalWork(guard, goal, work);
      return out;
    } finally {
      work.close();
    }
  } finally {
    owners.close();
  }
}

/** The external system's deliveries endpoint, from the machine configuration. */
function webhookUrl(c: CallContext): string {
  const ns = c.owners.config.read().value.namespaces[EFFECTS_NAMESPACE] as { webhook_url?: string } | undefined;
  if (!ns?.webhook_url) {
    throw rejected('webhook_not_configured', 'No external system is configured for Goal work in this root.', {
      nextAction: 'pass --sink URL to loopx work run',
    });
  }
  return ns.webhook_url;
}

/** The effect record the engine journalled for this call (intent and dispatch durable). */
export function journalled(ctx: ToolContext): effectOwner.EffectRecord {
  if (!ctx.effect) throw internal('effect_not_journalled', 'A mutating call ran without its effect journalled.');
  return ctx.effect;
}

/** A send's receipt as an unknown outcome's reason code. */
export const unknownReason = (receipt: JsonValue): string => {
  const r = receipt as { reason?: unknown; http_status?: unknown } | null;
  return typeof r?.reason === 'string'
    ? r.reason
    : typeof r?.http_status === 'number'
      ? `http_${r.http_status}`
      : 'outcome_unknown';
};

const todoView = (t: workOwner.Todo) => ({
  todo_id: t.todo_id,
  title: t.title,
  status: t.status,
  note: t.note ?? null,
});

/**
 * `todo.update` for one call: a hard lease on the Todo for this session's execution, then the
 * update under it. A refusal of the work owner (a stale fence, a held lease) is typed: nothing was
 * applied.
 */
async function updateUnderLease(c: CallContext, ctx: ToolContext, args: Record<string, JsonValue>) {
  const op = ctx.operationId;
  const todoId = args.todo_id as string;
  const current = await c.work.leaseStatus(todoId);
  const held =
    current.lease &&
    current.authorization === 'active' &&
    current.lease.owner === c.leaseOwner &&
    current.lease.execution_key === c.executionKey;
  const lease = held
    ? current.lease!
    : (
        await c.work.acquireLease({
          operation_id: `${op}:lease`,
          fence: c.fence,
          todo_id: todoId,
          owner: c.leaseOwner,
          execution_key: c.executionKey,
          ttl_ms: LEASE_TTL_MS,
          expected_version: current.lease?.version ?? 0,
        })
      ).receipt.lease!;
  const result = await c.work.updateTodo({
    operation_id: op,
    fence: c.fence,
    todo_id: todoId,
    ...(args.status !== undefined ? { status: args.status as workOwner.TodoStatus } : {}),
    ...(args.note !== undefined ? { note: args.note as string } : {}),
    lease: { owner: lease.owner, execution_key: lease.execution_key, lease_epoch: lease.lease_epoch },
  });
  const output = {
    result: result.result,
    cursor: result.cursor,
    todo: todoView((await c.work.getTodo(todoId))!),
  } as JsonValue;
  return effectOutput(output, { work_cursor: result.cursor, work_result: result.result });
}

/** The idempotency key of a delivery's logical operation: the Goal's lineage and the body, never the call. */
const deliveryKey = (lineage: goalOwner.GoalLineage, body: JsonValue): string =>
  `dlv-${sha256Hex(canonicalJson({ lineage: lineage.lineage_id, kind: effectOwner.WEBHOOK_KIND, body })).slice(0, 48)}`;

/** A delivery's effect: its logical key, its fence, or — when the logical operation is known — what that means for this call (see the header). */
async function describeDelivery(c: CallContext, ctx: ToolContext, message: string): Promise<EffectIntent> {
  const url = webhookUrl(c);
  const body = { goal_id: c.goalId, message };
  const key = deliveryKey(c.lineage, body);
  const base = { goal_id: c.goalId, kind: effectOwner.WEBHOOK_KIND, target: effectOwner.webhookTarget(url) };
  const send = (idempotency_key: string): EffectIntent => ({
    ...base,
    idempotency_key,
    intent: effectOwner.webhookIntent(url, body, {
      goal_lineage: c.lineage.lineage_id,
      fence: c.deliveryFence,
      lifetime: c.lifetimeId,
    }),
  });
  // A receiver the operator retired for this Goal (it will never answer again) is sent nothing more.
  if (await effectOwner.targetRetirement(c.owners.effects, c.goalId, base.target))
    throw effectOwner.receiverGone(c.goalId, base.target);
  const prior = await c.owners.effects.getByIdempotencyKey(key);
  if (prior === undefined) return send(key);
  if (prior.outcome === 'committed')
    return { ...base, idempotency_key: `${key}:dup:${ctx.operationId}`, intent: { duplicate_of: prior.operation_id } };
  if (effectOwner.isUncertain(prior) || prior.outcome === 'pending') {
    throw rejected(
      'delivery_outcome_unknown',
      `An earlier attempt of this delivery (${prior.operation_id}) has an unknown outcome; it is not sent again until that is settled.`,
      {
        nextAction:
          'settle the earlier attempt under its own operation id first: loopx run resolve RUN CALL (--committed RESULT | --absent | --abandon)',
      },
    );
  }
  // The logical operation never landed (absent, rejected, superseded): this call makes it, under its own key.
  return send(`${key}:${ctx.operationId}`);
}

/**
 * A receiver that refused this lifetime's delivery `fence_stale` with a fence of a later lifetime
 * of its own lineage has seen that lifetime deliver: evidence that this one was superseded, also
 * when the run authority cannot tell (restored from before the recovery). The root records it in
 * its goal owner — from then on the lifetime admits no writer — and the call ends superseded.
 * A newer fence of this same lifetime was sent through a later installation of the Goal's store (a
 * rotated PostgreSQL server): this process writes through one the root has left behind. Nothing
 * is recorded against the lifetime, which lives on there; the call ends `goal_work_installation_superseded`.
 */
function supersededByReceiver(c: CallContext, receipt: unknown): void {
  const r = receipt as { reason?: unknown; newest_fence?: unknown };
  if (r.reason !== 'fence_stale' || typeof r.newest_fence !== 'number' || !(r.newest_fence > c.deliveryFence)) return;
  if (goalOwner.fenceGeneration(r.newest_fence) <= c.lineage.generation) throw installationLeftBehind(c.goalId);
  c.owners.goals.recordSuperseded(
    { goal_id: c.goalId, goal_instance_id: c.lifetimeId },
    { evidence: 'receiver_fence_stale', newest_fence: r.newest_fence },
  );
  throw goalLifetimeSuperseded(c.goalId);
}

/**
 * `webhook.deliver` for one call: the delivery its effect journalled, sent once — or, when its
 * logical operation is already committed, not sent and settled as that operation's duplicate.
 */
async function deliverJournalled(c: CallContext, ctx: ToolContext) {
  const effect = journalled(ctx);
  const duplicateOf = (JSON.parse(effect.intent) as { duplicate_of?: string }).duplicate_of;
  // The logical operation is already committed: nothing is sent (the receiver would count a duplicate).
  if (duplicateOf !== undefined)
    return effectOutput(
      { delivered: true, already: true, operation_id: duplicateOf },
      { sent: false, duplicate_of: duplicateOf },
    );
  const sent = await effectOwner.sendWebhook(effect);
  if (sent.outcome === 'committed')
    return effectOutput({ delivered: true, operation_id: effect.operation_id }, sent.receipt as JsonValue);
  if (sent.outcome === 'rejected') {
    supersededByReceiver(c, sent.receipt);
    throw rejected('webhook_rejected', 'The external system refused the delivery.', {
      details: { http_status: (sent.receipt as { http_status: number }).http_status },
    });
  }
  // Unknown: recorded as uncertain; it is reconciled under its operation id, never repeated.
  throw effectOwner.outcomeUnknown(effect.operation_id, unknownReason(sent.receipt as JsonValue));
}

/** The static tool plan of Goal work runs in a runtime root. */
export function goalWorkToolPlan(root: string, guard?: LifetimeGuard): ToolPlan {
  const tools: Tool[] = [
    {
      definition: {
        name: 'todo.list',
        description: "List the Goal's Todos with their status.",
        inputSchema: { type: 'object', additionalProperties: false, properties: {} },
        mutating: false,
      },
      identity: identity('todo.list'),
      execute: (_args, ctx) =>
        withCallContext(
          root,
          guard,
          ctx,
          async (c) => ({ todos: (await c.work.listTodos()).map(todoView) }) as JsonValue,
        ),
    },
    {
      definition: {
        name: 'todo.update',
        description: 'Update a Todo of the Goal: its status (open, done, blocked, deferred) and/or a note.',
        inputSchema: {
          type: 'object',
          additionalProperties: false,
          required: ['todo_id'],
          properties: {
            todo_id: { type: 'string', minLength: 1, maxLength: 128 },
            status: { enum: ['open', 'done', 'blocked', 'deferred'] },
            note: { type: 'string', maxLength: 4096 },
          },
        },
        mutating: true,
      },
      identity: identity('todo.update'),
      describeEffect: (args, ctx) =>
        withCallContext(root, guard, ctx, (c): EffectIntent => ({
          goal_id: c.goalId,
          kind: 'work.todo_update',
          target: `work:${c.goalId}`,
          intent: { todo_id: args.todo_id as string, status: args.status ?? null, note: args.note ?? null },
        })),
      execute: (args, ctx) => withCallContext(root, guard, ctx, (c) => updateUnderLease(c, ctx, args)),
    },
    {
      definition: {
        name: 'webhook.deliver',
        description: 'Deliver a message to the external system (an effect: recorded before dispatch, never repeated).',
        inputSchema: {
          type: 'object',
          additionalProperties: false,
          required: ['message'],
          properties: { message: { type: 'string', maxLength: 8192 } },
        },
        mutating: true,
      },
      identity: identity('webhook.deliver'),
      describeEffect: (args, ctx) =>
        withCallContext(root, guard, ctx, (c) => describeDelivery(c, ctx, args.message as string)),
      execute: (_args, ctx) => withCallContext(root, guard, ctx, (c) => deliverJournalled(c, ctx)),
    },
  ];
  return { id: GOAL_WORK_TOOL_PLAN, tools };
}
