/**
 * The turn loop: driving an active run, whose lock the caller holds, from one committed step to
 * the next — a model call, then each of its tool calls in order (executed by tool-calls.ts) —
 * until the run suspends, finishes, or must wait for a person (an interaction) or an operator (an
 * uncertain call).
 *
 * Rules it keeps:
 * - Every step is committed before the next one starts; a crash loses at most the step in flight,
 *   and the next driver continues from the last commit under the same ids (a model call that was
 *   interrupted is made again, without a second TurnStarted).
 * - A mutating tool call goes through the effect owner, which decides its outcome (mutations.ts):
 *   intent durable before dispatch, outcome after. An intent found without an outcome by a later
 *   driver means the earlier driver died mid-call: the effect owner's outcome is taken if it has
 *   one, else the call becomes *uncertain* and waits for `resolve`; it is never re-run.
 * - Suspension happens only at a completed turn boundary; a request made during a turn (from any
 *   process) takes effect when that turn completes.
 * - A run continues only under the tool plan and PlanIdentity it started with (`checkPlan`).
 * - Message, model-call and tool-call ids derive from (run id, turn, index).
 * - A Goal work run's turns go through its session's Turn journal and the quota ledger
 *   (goal-turns.ts): the Turn is begun before the model call, its phases recorded as they happen,
 *   and it is debited and settled at the next boundary, before anything else happens there. A
 *   refusal of those owners (a stale execution generation) stops the run: it fails with the
 *   owner's code and never continues.
 */
import { canonicalJson, internal, isLoopxError, rejected, type LoopxError } from '../core/index.js';
import type { effect as effectOwner } from '../owners/index.js';
import type { Message, ToolCallPart, ToolResultPart, ToolResultStatus } from '../snapshot/index.js';
import type { AgentDefinition } from './agent.js';
import type { Application } from './application.js';
import { deliveryOfEffect, UNKNOWN_DELIVERY } from './deliveries.js';
import type { NewEvent } from './events.js';
import { isTurnRefusal, type GoalTurnAccess, type RunTurns } from './goal-turns.js';
import { messageId, modelCallId, toolCallId } from './messages.js';
import { operationIdOf, takenOutcome, type EffectAccess } from './mutations.js';
import { callModel, type ModelCallResult } from './model-call.js';
import { apiKeyEnvOf } from './providers/catalog.js';
import type { ModelProvider, ModelResponse } from './providers/provider.js';
import { budgetRefusal, failureOf, turnUsageOf, usageData, withTurnUsage } from './usage.js';
import type { MutationRecord, MutationState, RunCommit, RunHead, RunStore } from './run-store/contract.js';
import { commitRun, headOf, toolMessage } from './runs.js';
import { callTool, deliveryFields, type CallAccess, type EventData } from './tool-calls.js';
import type { JsonValue, ToolPlanLease } from './tools.js';

export { FAULT_AFTER_EFFECT_SETTLED, FAULT_AFTER_MUTATION_INTENT } from './tool-calls.js';

/** The assistant message of a model response: its text, then its tool calls under ids derived from (run, turn, index). */
function assistantMessageOf(runId: string, turn: number, response: ModelResponse): Message {
  const parts: Array<{ type: 'text'; text: string } | ToolCallPart> = [];
  if (response.text) parts.push({ type: 'text', text: response.text });
  response.toolCalls.forEach((c, i) => {
    let argumentsJson: string;
    try {
      argumentsJson = canonicalJson(c.arguments);
    } catch {
      // Not representable as JSON: recorded as null, which no tool accepts (see tool-calls.ts), so
      // nothing executes with arguments the model did not send.
      argumentsJson = 'null';
    }
    parts.push({ type: 'tool_call', callId: toolCallId(runId, turn, i), toolName: c.toolName, argumentsJson });
  });
  return { id: messageId(runId, turn, 0), role: 'assistant', parts };
}

export class TurnDriver {
  readonly #application: Application;
  readonly #store: () => RunStore;
  readonly #effects: EffectAccess;
  readonly #goalTurns: GoalTurnAccess;
  /** What a tool call of a turn needs of this driver (tool-calls.ts). */
  readonly #calls: CallAccess;

  constructor(options: {
    readonly application: Application;
    readonly store: () => RunStore;
    readonly effects: EffectAccess;
    readonly goalTurns: GoalTurnAccess;
  }) {
    this.#application = options.application;
    this.#store = options.store;
    this.#effects = options.effects;
    this.#goalTurns = options.goalTurns;
    this.#calls = { commit: (h, c) => this.#commit(h, c), effects: this.#effects };
  }

  /**
   * Before a run is resumed: a Goal work run of a lifetime a recovery superseded is refused there
   * (`goal_lifetime_superseded`), and nothing of the run changes — it stays as it was, as evidence.
   */
  async refuseSupersededLifetime(head: RunHead): Promise<void> {
    try {
      await this.#goalTurns.forRun(head, await this.checkPlan(head));
    } catch (e) {
      if (isLoopxError(e) && e.code === 'goal_lifetime_superseded') throw e;
    }
  }

  /** Drive the run (whose lock the caller holds) until it suspends, finishes, or must wait. */
  async drive(runId: string): Promise<void> {
    const first = await this.#head(runId);
    if (first.lifecycle !== 'active') return;
    const def = await this.checkPlan(first);
    const provider = this.#application.providerFor(def);
    // The plan's servers are launched (and checked against their declarations) before anything is committed.
    const servers = await this.#application.launchTools(def);
    const lease = this.#application.toolPlans.lease(this.#application.toolPlanIdFor(def));
    try {
      await this.settleOpenCalls(runId);
      let turns: RunTurns | undefined;
      if (
        !(await this.#turnStep(runId, async () => (turns = await this.#goalTurns.forRun(await this.#head(runId), def))))
      )
        return;
      for (;;) {
        const head = await this.#head(runId);
        // The boundary's Turn (debit, settlement) is closed before anything else happens here.
        if (turns && !(await this.#turnStep(runId, () => turns!.closeAt(head, () => this.#store().messages(runId)))))
          return;
        if (head.lifecycle !== 'active' || head.pendingInteraction) return;
        if (head.turnInProgress) {
          if ((await this.#continueTurn(head, lease, turns)) === 'waiting') return;
          continue;
        }
        if (
          (await this.#store().suspendRequested(runId)) ||
          (head.suspendAtTurn !== null && head.completedTurns >= head.suspendAtTurn)
        ) {
          await this.suspendAtBoundary(head);
          return;
        }
        const overBudget = budgetRefusal(def, head);
        if (overBudget) {
          await this.terminate(
            head,
            'failed',
            { type: 'Failed', data: { code: overBudget.code, completed_turns: head.completedTurns } },
            failureOf(overBudget),
          );
          return;
        }
        if (head.completedTurns >= head.turnLimit) {
          await this.terminate(
            head,
            'failed',
            { type: 'Failed', data: { code: 'turn_limit_reached', completed_turns: head.completedTurns } },
            { code: 'turn_limit_reached', message: `The run used all ${head.turnLimit} turns without a final answer.` },
          );
          return;
        }
        await this.#modelStep(head, def, provider, lease, turns);
      }
    } finally {
      lease.release();
      servers.release();
    }
  }

  /**
   * One step of a Goal work run's Turn through the session and quota owners. Their refusal stops
   * an active run — failed with the owner's code, never continued — and leaves a finished run's
   * open Turn to the session's current executor. Returns false when it refused.
   */
  async #turnStep(runId: string, step: () => Promise<unknown>): Promise<boolean> {
    try {
      await step();
      return true;
    } catch (e) {
      if (!isTurnRefusal(e)) throw e;
      const head = await this.#head(runId);
      if (head.lifecycle === 'active') await this.#refuse(head, e);
      return false;
    }
  }

  #refuse(head: RunHead, e: LoopxError): Promise<void> {
    const data: NewEvent['data'] = head.turnInProgress
      ? { code: e.code, turn: head.completedTurns + 1 }
      : { code: e.code, completed_turns: head.completedTurns };
    return this.terminate(head, 'failed', { type: 'Failed', data }, { code: e.code, message: e.message });
  }

  /** Close the open Turn of a run that finished outside the turn loop (cancelled, or found finished by resume). */
  async closeFinishedTurn(runId: string): Promise<void> {
    const head = await this.#head(runId);
    const def = await this.#store().getDefinition(head.definition);
    if (!def) return;
    let turns: RunTurns | undefined;
    if (!(await this.#turnStep(runId, async () => (turns = await this.#goalTurns.forRun(head, def))))) return;
    if (turns) await this.#turnStep(runId, () => turns!.closeAt(head, () => this.#store().messages(runId)));
  }

  async suspendAtBoundary(head: RunHead): Promise<void> {
    await this.#commit(head, {
      head: { ...head, lifecycle: 'suspended', suspendAtTurn: null },
      events: [{ type: 'Suspended', data: { completed_turns: head.completedTurns } }],
      clearSuspendRequest: true,
    });
  }

  /**
   * The run's definition, provided this application still has its tool plan and the same
   * PlanIdentity. Commands that continue a run call it before their first commit, so a refusal
   * (`plan_identity_changed`, `tool_plan_missing`) leaves the run exactly as it was.
   */
  async checkPlan(head: RunHead): Promise<AgentDefinition> {
    const def = await this.#store().getDefinition(head.definition);
    if (!def) throw internal('definition_missing', `The definition of run ${head.runId} is missing from this root.`);
    const expected = this.#application.planIdentityFor(def);
    if (expected.fingerprint !== head.planIdentity.fingerprint) {
      throw rejected(
        'plan_identity_changed',
        `The tools or components of run ${head.runId} changed since it started; it will not continue under different code.`,
        {
          nextAction:
            'continue it with the same build of loopx that started it (component identities hash the built source)',
        },
      );
    }
    // The provider's credentials too: a run that cannot call its model is not continued.
    this.#application.providerFor(def);
    return def;
  }

  /** The turn after the last committed one: its model call, committed with its response, or the run failed with its error. */
  async #modelStep(
    head: RunHead,
    def: AgentDefinition,
    provider: ModelProvider,
    lease: ToolPlanLease,
    turns: RunTurns | undefined,
  ): Promise<void> {
    const turn = head.completedTurns + 1;
    const runId = head.runId;
    // A turn whose model call was interrupted is retried under the same ids, without a second TurnStarted.
    if (!head.turnInProgress)
      await this.#commit(head, {
        head: { ...head, turnInProgress: true },
        events: [{ type: 'TurnStarted', data: { turn } }],
      });
    // The session's Turn before the model call: a fenced run makes no call.
    if (turns && !(await this.#turnStep(runId, () => turns.begin()))) return;
    const callId = modelCallId(runId, turn, 0);
    const called = await this.#callModel(runId, turn, callId, def, provider, lease);
    if (!called.ok) {
      const e = called.error;
      await this.terminate(
        await this.#head(runId),
        'failed',
        { type: 'Failed', data: { code: e.code, turn } },
        failureOf(e),
      );
      return;
    }
    await this.#commitResponse(runId, turn, callId, called.response, called.pending);
    // The response is durable: the host executed and its result is typed.
    if (turns)
      await this.#turnStep(runId, () => turns.through('typed_result', { host_execute: operationIdOf(callId) }));
  }

  /** Call the model with the run's messages and the plan's tools; streamed text and retries are recorded on the run. */
  async #callModel(
    runId: string,
    turn: number,
    callId: string,
    def: AgentDefinition,
    provider: ModelProvider,
    lease: ToolPlanLease,
  ): Promise<ModelCallResult> {
    return callModel({
      provider,
      request: {
        runId,
        turn,
        modelCallId: callId,
        model: def.model,
        messages: await this.#store().messages(runId),
        tools: lease.plan.tools.map((t) => t.definition),
      },
      retry: this.#application.modelRetry,
      keyEnv: apiKeyEnvOf(def.model),
      // Streamed text and retries are recorded on the run's current head (the driver holds its lock).
      record: async (events) => {
        const current = await this.#head(runId);
        await this.#commit(current, { head: current, events });
      },
    });
  }

  /** Commit the model's response as the assistant message with `ModelResponded`; a final answer also completes the run. */
  async #commitResponse(
    runId: string,
    turn: number,
    callId: string,
    response: ModelResponse,
    pending: NewEvent[],
  ): Promise<void> {
    const assistant = assistantMessageOf(runId, turn, response);
    const toolCalls = assistant.parts.filter((p): p is ToolCallPart => p.type === 'tool_call');
    const usage = turnUsageOf(turn, response, assistant);
    const events: NewEvent[] = [
      ...pending,
      {
        type: 'ModelResponded',
        data: {
          turn,
          model_call_id: callId,
          text: response.text,
          tool_calls: toolCalls.map((c) => ({ call_id: c.callId, tool_name: c.toolName })),
          usage: usageData(usage),
        },
      },
    ];
    const current = await this.#head(runId);
    const next: RunHead = { ...current, messageCount: current.messageCount + 1, ...withTurnUsage(current, usage) };
    if (toolCalls.length === 0) {
      // A final answer completes the turn and the run.
      events.push({ type: 'TurnCompleted', data: { turn } }, { type: 'Completed', data: { completed_turns: turn } });
      await this.#commit(current, {
        head: { ...next, turnInProgress: false, completedTurns: turn, lifecycle: 'completed' },
        messages: [{ index: current.messageCount, message: assistant }],
        events,
        clearSuspendRequest: true,
      });
    } else {
      await this.#commit(current, {
        head: next,
        messages: [{ index: current.messageCount, message: assistant }],
        events,
      });
    }
  }

  /** Work through the current turn's tool calls in order; complete the turn when all are settled. */
  async #continueTurn(head: RunHead, lease: ToolPlanLease, turns: RunTurns | undefined): Promise<'done' | 'waiting'> {
    const runId = head.runId;
    const turn = head.completedTurns + 1;
    const messages = await this.#store().messages(runId);
    const assistantIndex = messages.findIndex((m) => m.id === messageId(runId, turn, 0));
    if (assistantIndex < 0) {
      // The driver died between TurnStarted and ModelResponded: nothing of the turn is recorded, so
      // the model call is simply made again under the same ids.
      const def = (await this.#store().getDefinition(head.definition))!;
      await this.#modelStep(head, def, this.#application.providerFor(def), lease, turns);
      return 'done';
    }
    const calls = messages[assistantIndex]!.parts.filter((p): p is ToolCallPart => p.type === 'tool_call');
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      const index = assistantIndex + 1 + i;
      const existing = messages[index];
      const status = existing ? (existing.parts[0] as ToolResultPart).status : undefined;
      if (status === 'ok' || status === 'error') continue;
      if (status === 'interaction_pending' || status === 'mutation_uncertain') return 'waiting';
      const outcome = await callTool(this.#calls, await this.#head(runId), lease, call, i, index, turn);
      if (outcome === 'waiting') return 'waiting';
    }
    // Every call was validated against the plan and has a definite result.
    if (turns && !(await this.#turnStep(runId, () => turns.through('validation')))) return 'done';
    const current = await this.#head(runId);
    await this.#commit(current, {
      head: { ...current, turnInProgress: false, completedTurns: turn },
      events: [{ type: 'TurnCompleted', data: { turn } }],
    });
    return 'done';
  }

  /**
   * Open mutating calls found by a driver holding the lock. One whose effect the effect owner has
   * settled takes that outcome (readback); an intent without one was left by a dead driver and
   * becomes uncertain. Returns the calls whose outcome was taken from the effect owner.
   */
  async settleOpenCalls(runId: string): Promise<Set<string>> {
    const taken = new Set<string>();
    const open = (await this.#store().mutations(runId)).filter((m) => m.state === 'intent' || m.state === 'uncertain');
    if (open.length === 0) return taken;
    let head = await this.#head(runId);
    for (const m of open) {
      const effect = await this.#effects.effectOf(m.callId);
      const outcome = effect && takenOutcome(effect);
      if (outcome) {
        head = await this.settleCall(
          head,
          m,
          outcome.state,
          outcome.status,
          outcome.result,
          { settled_by: 'effect_owner' },
          effect ?? null,
        );
        taken.add(m.callId);
      } else if (m.state === 'intent') {
        const result = {
          error: 'mutation_uncertain',
          message: `The process running ${m.toolName} stopped before its outcome was recorded. It will not be re-run.`,
        };
        head = await this.settleCall(head, m, 'uncertain', 'mutation_uncertain', result, {}, effect ?? null);
      }
    }
    return taken;
  }

  /**
   * Commit a mutating call's result: its tool message, its mutation row and `ToolResulted` — with
   * what a delivery's receiver did, from its effect as the effect owner holds it now (read here
   * unless given; null: the call has none).
   */
  async settleCall(
    head: RunHead,
    m: MutationRecord,
    state: MutationState,
    status: ToolResultStatus,
    result: JsonValue,
    data: EventData = {},
    effect?: effectOwner.EffectRecord | null,
  ): Promise<RunHead> {
    const runId = head.runId;
    const settled = effect === undefined ? await this.#effects.effectOf(m.callId) : (effect ?? undefined);
    const assistantIndex = (await this.#store().messages(runId)).findIndex(
      (msg) => msg.id === messageId(runId, m.turn, 0),
    );
    if (assistantIndex < 0)
      throw internal('uncertain_call_without_message', `Mutating call ${m.callId} has no model message.`);
    const callIndex = Number(m.callId.slice(m.callId.lastIndexOf('/k') + 2));
    const index = assistantIndex + 1 + callIndex;
    return this.#commit(head, {
      head: { ...head, messageCount: Math.max(head.messageCount, index + 1) },
      messages: [
        { index, message: toolMessage(messageId(runId, m.turn, callIndex + 1), m.callId, m.toolName, status, result) },
      ],
      mutations: [{ ...m, state, resultJson: canonicalJson(result) }],
      events: [
        {
          type: 'ToolResulted',
          data: {
            call_id: m.callId,
            tool_name: m.toolName,
            status,
            ...data,
            ...deliveryFields(settled, settled ? deliveryOfEffect(settled) : UNKNOWN_DELIVERY),
          },
        },
      ],
    });
  }

  /** End a run; open tool calls of an interrupted turn are settled as errors so the history stays matched. */
  async terminate(
    head: RunHead,
    lifecycle: 'failed' | 'cancelled',
    event: NewEvent,
    failure: RunHead['failure'],
  ): Promise<void> {
    const runId = head.runId;
    const messages = await this.#store().messages(runId);
    const upserts: Array<{ index: number; message: Message }> = [];
    let messageCount = head.messageCount;
    if (head.turnInProgress) {
      const turn = head.completedTurns + 1;
      const assistantIndex = messages.findIndex((m) => m.id === messageId(runId, turn, 0));
      if (assistantIndex >= 0) {
        const calls = messages[assistantIndex]!.parts.filter((p): p is ToolCallPart => p.type === 'tool_call');
        calls.forEach((call, i) => {
          const index = assistantIndex + 1 + i;
          const status = messages[index] ? (messages[index]!.parts[0] as ToolResultPart).status : undefined;
          if (status === 'ok' || status === 'error' || status === 'mutation_uncertain') return;
          upserts.push({
            index,
            message: toolMessage(messageId(runId, turn, i + 1), call.callId, call.toolName, 'error', {
              error: `run_${lifecycle}`,
              message: `The run was ${lifecycle} before this call finished.`,
            }),
          });
          messageCount = Math.max(messageCount, index + 1);
        });
      }
    }
    await this.#commit(head, {
      head: {
        ...head,
        lifecycle,
        failure,
        pendingInteraction: null,
        messageCount,
        turnInProgress: head.turnInProgress,
      },
      messages: upserts,
      events: [event],
      clearSuspendRequest: true,
    });
  }

  #commit(head: RunHead, c: Omit<RunCommit, 'expectedSequence'>): Promise<RunHead> {
    return commitRun(this.#store(), head, c);
  }

  #head(runId: string): Promise<RunHead> {
    return headOf(this.#store(), runId);
  }
}
