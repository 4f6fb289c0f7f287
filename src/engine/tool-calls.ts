/**
 * One tool call of a turn, from its recorded arguments to its committed result; the turn loop
 * (turns.ts) calls it for each open call in order, holding the run's lock.
 *
 * Rules it keeps:
 * - Arguments the plan does not accept, or an unknown tool, settle the call as an error; nothing
 *   executes with arguments the model did not send.
 * - A mutating call goes through the effect owner (mutations.ts): intent durable before dispatch,
 *   outcome after; a call the effect owner already journalled is never run again.
 * - A call asking for a person commits its pending interaction and the run waits; an interaction
 *   id is used once per run.
 * - It commits only the call's own rows (result, intent, pending interaction), on the head given.
 */
import { canonicalJson, faultPoint, isLoopxError } from '../core/index.js';
import type { effect as effectOwner } from '../owners/index.js';
import type { ToolCallPart, ToolResultStatus } from '../snapshot/index.js';
import { deliveryOfEffect, isDelivery, type Delivery } from './deliveries.js';
import type { NewEvent } from './events.js';
import { messageId } from './messages.js';
import {
  beginEffect,
  operationIdOf,
  outcomeOfOutput,
  outcomeOfThrow,
  settleEffect,
  takenOutcome,
  toJsonResult,
  toolError,
  undispatchedOutcome,
  type Begun,
  type CallOutcome,
  type EffectAccess,
} from './mutations.js';
import type { MutationRecord, MutationState, RunCommit, RunHead } from './run-store/contract.js';
import { toolMessage } from './runs.js';
import {
  isInteractionRequest,
  toolArgumentsInvalid,
  type InteractionRequest,
  type JsonValue,
  type Tool,
  type ToolContext,
  type ToolPlanLease,
} from './tools.js';

/** Fault points (tests only) around the durable steps of a mutating call. */
export const FAULT_AFTER_MUTATION_INTENT = 'engine.mutation.after-intent';
export const FAULT_AFTER_EFFECT_SETTLED = 'engine.mutation.after-effect-settled';

export type EventData = { readonly [k: string]: JsonValue };
type Settle = (
  h: RunHead,
  status: ToolResultStatus,
  result: JsonValue,
  extra?: NewEvent[],
  mutation?: MutationRecord,
  data?: EventData,
) => Promise<RunHead>;
type Arguments = { [k: string]: JsonValue };

/** What a call needs of the driver holding the run's lock: a commit to the run, and the effect owner. */
export interface CallAccess {
  readonly commit: (head: RunHead, c: Omit<RunCommit, 'expectedSequence'>) => Promise<RunHead>;
  readonly effects: EffectAccess;
}

/**
 * The delivery fields of a mutating call's `ToolResulted`: present, both, when its effect is a
 * webhook delivery (null when not known — see deliveries.ts); absent for any other call.
 */
export const deliveryFields = (effect: effectOwner.EffectRecord | undefined, delivery: Delivery): EventData =>
  isDelivery(effect) ? { delivery_result: delivery.delivery_result, duplicate_of: delivery.duplicate_of } : {};

/** Execute call `callIndex` of the turn (tool message at `index`) and commit its result, or its wait. */
export async function callTool(
  access: CallAccess,
  head: RunHead,
  lease: ToolPlanLease,
  call: ToolCallPart,
  callIndex: number,
  index: number,
  turn: number,
): Promise<'done' | 'waiting'> {
  const id = messageId(head.runId, turn, callIndex + 1);
  const settle = settlerOf(access, call, id, index);
  const calledEvent: NewEvent = { type: 'ToolCalled', data: { call_id: call.callId, tool_name: call.toolName } };

  const tool = lease.tool(call.toolName);
  let args: Arguments;
  try {
    args = argumentsOf(lease, call);
  } catch (e) {
    await settle(head, 'error', toolError(e), [calledEvent]);
    return 'done';
  }
  if (!tool) {
    await settle(head, 'error', { error: 'tool_unknown', message: `No tool named ${call.toolName}.` }, [calledEvent]);
    return 'done';
  }
  const ctx = toolContextOf(head.runId, call, turn);

  if (tool.definition.mutating) return callMutating(access, head, tool, call, args, ctx, settle, calledEvent);

  let output: unknown;
  try {
    output = await tool.execute(args, ctx);
  } catch (e) {
    await settle(head, 'error', toolError(e), [calledEvent]);
    return 'done';
  }
  if (isInteractionRequest(output)) {
    const iid = output.interactionId;
    if (head.usedInteractionIds.includes(iid)) {
      await settle(
        head,
        'error',
        {
          error: 'interaction_id_reused',
          message: `Interaction id ${iid} was already used in this run; ids are used once.`,
        },
        [calledEvent],
      );
      return 'done';
    }
    await requestInteraction(access, head, call, id, index, output, calledEvent);
    return 'waiting';
  }
  const result = toJsonResult(output);
  await settle(head, result.ok ? 'ok' : 'error', result.value, [calledEvent]);
  return 'done';
}

/** How this call's result is committed: its tool message at `index`, a mutation row if any, and `ToolResulted`. */
function settlerOf(access: CallAccess, call: ToolCallPart, id: string, index: number): Settle {
  return (h, status, result, extra = [], mutation, data = {}) => {
    const grows = index >= h.messageCount;
    return access.commit(h, {
      head: { ...h, messageCount: grows ? index + 1 : h.messageCount },
      messages: [{ index, message: toolMessage(id, call.callId, call.toolName, status, result) }],
      ...(mutation ? { mutations: [mutation] } : {}),
      events: [
        ...extra,
        { type: 'ToolResulted', data: { call_id: call.callId, tool_name: call.toolName, status, ...data } },
      ],
    });
  };
}

/** The call's recorded arguments, parsed and checked against the plan; throws what the call is settled with. */
function argumentsOf(lease: ToolPlanLease, call: ToolCallPart): Arguments {
  const args = JSON.parse(call.argumentsJson) as Arguments;
  lease.validateArguments(call.toolName, args);
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw toolArgumentsInvalid(call.toolName, 'they are not a JSON object');
  }
  return args;
}

/** The context a tool executes in: the call's ids and turn, and the way to ask a person. */
const toolContextOf = (runId: string, call: ToolCallPart, turn: number): ToolContext => ({
  runId,
  callId: call.callId,
  operationId: operationIdOf(call.callId),
  turn,
  requestInteraction: (interactionId: string, prompt: string): InteractionRequest => ({
    kind: 'interaction_request',
    interactionId,
    prompt,
  }),
});

/** Commit the call's pending interaction: its tool message, the run's pending interaction and `InteractionRequested`. */
async function requestInteraction(
  access: CallAccess,
  head: RunHead,
  call: ToolCallPart,
  id: string,
  index: number,
  request: InteractionRequest,
  calledEvent: NewEvent,
): Promise<void> {
  const iid = request.interactionId;
  const grows = index >= head.messageCount;
  await access.commit(head, {
    head: {
      ...head,
      messageCount: grows ? index + 1 : head.messageCount,
      pendingInteraction: { interactionId: iid, callId: call.callId, prompt: request.prompt },
    },
    messages: [
      {
        index,
        message: toolMessage(id, call.callId, call.toolName, 'interaction_pending', {
          interaction_id: iid,
          prompt: request.prompt,
        }),
      },
    ],
    events: [
      calledEvent,
      { type: 'InteractionRequested', data: { interaction_id: iid, call_id: call.callId, prompt: request.prompt } },
    ],
  });
}

/** A mutating call through the effect owner: begun (or found journalled), dispatched once, settled there first. */
async function callMutating(
  access: CallAccess,
  head: RunHead,
  tool: Tool,
  call: ToolCallPart,
  args: Arguments,
  ctx: ToolContext,
  settle: Settle,
  calledEvent: NewEvent,
): Promise<'done' | 'waiting'> {
  const intent: MutationRecord = {
    runId: head.runId,
    callId: call.callId,
    turn: ctx.turn,
    toolName: call.toolName,
    argumentsJson: call.argumentsJson,
    state: 'intent',
    resultJson: null,
  };
  const record = async (
    h: RunHead,
    state: MutationState,
    status: ToolResultStatus,
    result: JsonValue,
    extra: NewEvent[] = [],
    data: EventData = {},
  ): Promise<'done' | 'waiting'> => {
    await settle(h, status, result, extra, { ...intent, state, resultJson: canonicalJson(result) }, data);
    return state === 'uncertain' ? 'waiting' : 'done';
  };
  const journal = access.effects.forWrite();
  let begun: Begun;
  try {
    begun = await beginEffect(journal, tool, args, ctx);
  } catch (e) {
    // Refused before any dispatch (its description, or its intent by the effect owner): a definite failure.
    // Anything else (the journal failed) stops the driver; the next one finds the call as the effect owner has it.
    if (!isLoopxError(e) || e.kind === 'internal') throw e;
    return record(head, 'failed', 'error', toolError(e), [calledEvent]);
  }
  if (begun.kind !== 'dispatch') {
    // Journalled by a driver that died before recording it here: its outcome is taken, or it stays uncertain; never run again.
    const known = takenOutcome(begun.effect) ?? undispatchedOutcome(call.toolName);
    return record(
      head,
      known.state,
      known.status,
      known.result,
      [calledEvent],
      deliveryFields(begun.effect, deliveryOfEffect(begun.effect)),
    );
  }
  // Durable intent before dispatch — the effect owner's, then the engine's: from here on a crash leaves an intent without an outcome.
  const afterIntent = await access.commit(head, { head, mutations: [intent], events: [calledEvent] });
  faultPoint(FAULT_AFTER_MUTATION_INTENT);
  let outcome: CallOutcome;
  try {
    outcome = outcomeOfOutput(await tool.execute(args, { ...ctx, effect: begun.effect }));
  } catch (e) {
    outcome = outcomeOfThrow(call.toolName, e);
  }
  // The effect owner's outcome first; one settled there meanwhile (a reconciliation) stands.
  const settledElsewhere = await settleEffect(journal, ctx.operationId, outcome);
  faultPoint(FAULT_AFTER_EFFECT_SETTLED);
  const taken = settledElsewhere && takenOutcome(settledElsewhere);
  if (taken)
    return record(
      afterIntent,
      taken.state,
      taken.status,
      taken.result,
      [],
      deliveryFields(settledElsewhere, deliveryOfEffect(settledElsewhere)),
    );
  // What the receiver did, from the receipt as the tool returned it (the effect owner keeps it bounded).
  return record(
    afterIntent,
    outcome.state,
    outcome.status,
    outcome.result,
    [],
    deliveryFields(begun.effect, outcome.delivery),
  );
}
