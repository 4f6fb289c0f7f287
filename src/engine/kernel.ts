/**
 * The run kernel: every command that changes a run in this root — start, suspend, resume, answer
 * an interaction, resolve an uncertain call, cancel — each under the run's exclusive lock and the
 * run's authority record (ownership.ts), handing the turns themselves to the driver (turns.ts).
 * It holds no keys, and it never decides an effect's outcome by guessing.
 *
 * Rules it keeps:
 * - One driver per run: driving needs the run's exclusive lock (the authority's, shared by every
 *   root of the user), so a second process — or a second call in this one — gets `run_busy`
 *   instead of a duplicate turn; a run another root owns is `run_moved`.
 * - A command checks before its first commit (ownership, plan identity, the interaction it
 *   answers), so a refusal leaves the run exactly as it was.
 * - Resume writes the authority's ACTIVE (killing the last export's claim) before the kernel
 *   resumes; cancel writes the tombstone before the kernel's Cancelled, so a crash in between
 *   leaves a run that can no longer move — never a cancelled run whose snapshot still imports.
 * - An uncertain call is settled under its original call id and operation id, effect owner first;
 *   it is never re-run.
 * - A run id is used once, in this root and in the authority.
 * - A Goal work run's open Turn (goal-turns.ts) is closed by `cancel` (stopped, or committed when
 *   its engine turn had completed) and by a `resume` that finds the run finished — a crash at its
 *   last boundary — which settles it and still refuses with `run_terminal`.
 */
import { randomBytes } from 'node:crypto';
import { conflict, notFound, rejected } from '../core/index.js';
import type { Message, ToolResultPart } from '../snapshot/index.js';
import { defineAgent, type AgentDefinition } from './agent.js';
import type { Application, ToolsHold } from './application.js';
import { messageId } from './messages.js';
import { agrees, operatorOutcome, settleByOperator, type EffectAccess, type Resolution } from './mutations.js';
import type { RunOwnership } from './ownership.js';
import type { RunReads, RunView } from './reads.js';
import type { RunCommit, RunHead, RunStore } from './run-store/contract.js';
import { commitRun, compareStrings, RUN_ID, terminalError, toolMessage } from './runs.js';
import { importIncomplete } from './transfer.js';
import type { TurnDriver } from './turns.js';
import { effect as effectOwner } from '../owners/index.js';
import { runIdInvalid } from '../run-authority/index.js';

export interface StartOptions {
  readonly input?: string;
  /** Suspend at the boundary after this many completed turns. */
  readonly suspendAfterTurns?: number;
  readonly runId?: string;
}

export interface ResolveOptions {
  /** Continue the run after settling (default); `false` leaves it, active, to another driver. */
  readonly drive?: boolean;
}

export interface KernelParts {
  readonly application: Application;
  readonly store: () => RunStore;
  readonly effects: EffectAccess;
  readonly reads: RunReads;
  readonly ownership: RunOwnership;
  readonly turns: TurnDriver;
}

/** The run's opening messages: the definition's system prompt, then the caller's input, each when given. */
function openingMessages(runId: string, def: AgentDefinition, input: string | undefined): Message[] {
  const messages: Message[] = [];
  if (def.system)
    messages.push({
      id: messageId(runId, 0, messages.length),
      role: 'system',
      parts: [{ type: 'text', text: def.system }],
    });
  if (input !== undefined)
    messages.push({
      id: messageId(runId, 0, messages.length),
      role: 'user',
      parts: [{ type: 'text', text: input }],
    });
  return messages;
}

/** The first commit of a new run: its initial head, its opening messages and `RunStarted`. */
function startCommit(
  runId: string,
  def: AgentDefinition,
  planIdentity: RunHead['planIdentity'],
  options: StartOptions,
): RunCommit {
  const messages = openingMessages(runId, def, options.input);
  const head: RunHead = {
    runId,
    definition: { id: def.id, version: def.version },
    model: { provider: def.model.provider, modelId: def.model.modelId },
    turnLimit: def.turnLimit,
    completedTurns: 0,
    lifecycle: 'active',
    planIdentity,
    usedInteractionIds: [],
    lastSequence: 0,
    messageCount: messages.length,
    turnInProgress: false,
    suspendAtTurn: options.suspendAfterTurns ?? null,
    pendingInteraction: null,
    failure: null,
    createdAt: '',
    updatedAt: '',
  };
  return {
    head,
    expectedSequence: 0,
    messages: messages.map((message, index) => ({ index, message })),
    events: [
      {
        type: 'RunStarted',
        data: {
          definition_id: def.id,
          definition_version: def.version,
          model_provider: def.model.provider,
          model_id: def.model.modelId,
          turn_limit: def.turnLimit,
          plan_fingerprint: planIdentity.fingerprint,
        },
      },
    ],
  };
}

export class RunKernel {
  readonly #application: Application;
  readonly #store: () => RunStore;
  readonly #effects: EffectAccess;
  readonly #reads: RunReads;
  readonly #own: RunOwnership;
  readonly #turns: TurnDriver;

  constructor(parts: KernelParts) {
    this.#application = parts.application;
    this.#store = parts.store;
    this.#effects = parts.effects;
    this.#reads = parts.reads;
    this.#own = parts.ownership;
    this.#turns = parts.turns;
  }

  /** Start a new run under a fresh (or the given) id and drive it until it suspends, finishes or must wait. */
  async start(agent: AgentDefinition, options: StartOptions = {}): Promise<RunView> {
    const def = defineAgent(agent);
    // The root's identity before anything is stored: a byte copy (root_is_copy) keeps no definition.
    await this.#own.rootId();
    const runId = options.runId ?? `run_${randomBytes(10).toString('hex')}`;
    if (!RUN_ID.test(runId)) throw runIdInvalid();
    if (
      options.suspendAfterTurns !== undefined &&
      !(Number.isInteger(options.suspendAfterTurns) && options.suspendAfterTurns >= 0)
    ) {
      throw rejected('suspend_after_turns_invalid', '--suspend-after-turns must be a whole number ≥ 0.');
    }
    const planIdentity = this.#application.planIdentityFor(def);
    // A provider that cannot be called (no credentials) or tools that do not launch are refused before anything is stored.
    this.#application.providerFor(def);
    const lock = await this.#own.lock(runId);
    let tools: ToolsHold | undefined;
    try {
      tools = await this.#application.launchTools(def);
      if (await this.#store().get(runId)) throw conflict('run_exists', `Run ${runId} already exists.`);
      if (await this.#own.authority.readRecord(runId)) {
        throw conflict('run_known', `The run authority already knows run ${runId}; a run id is used once.`, {
          nextAction: 'start the run under a new id',
        });
      }
      await this.#store().putDefinition(def);
      await this.#own.writeRecord(lock, {
        runId,
        state: 'ACTIVE',
        transitionGeneration: 1,
        ownerRoot: await this.#own.rootId(),
        updatedAt: '',
      });
      await this.#store().commit(startCommit(runId, def, planIdentity, options));
      await this.#turns.drive(runId);
    } finally {
      await this.#own.release(lock, runId);
      tools?.release();
    }
    return this.#reads.show(runId);
  }

  /** Suspend at the next completed turn boundary — now, if the run is idle at one. */
  async suspend(runId: string): Promise<RunView> {
    const head = await this.#reads.head(runId);
    await this.#own.ownedRecord(runId);
    if (head.lifecycle === 'suspended') return this.#reads.view(head);
    if (head.lifecycle !== 'active') throw terminalError(head);
    await this.#store().requestSuspend(runId);
    const lock = await this.#own.tryLock(runId);
    if (!lock) return this.#reads.show(runId); // the driver honours the request at its next boundary
    try {
      // Idle at a boundary: suspend now. Suspending runs no code, so no plan check or lease is needed.
      const idle = await this.#reads.head(runId);
      if (idle.lifecycle === 'active' && !idle.turnInProgress && !idle.pendingInteraction)
        await this.#turns.suspendAtBoundary(idle);
    } finally {
      await lock.release();
    }
    return this.#reads.show(runId);
  }

  /** Resume a suspended run (optionally for `turns` turns), or continue an interrupted active one. */
  async resume(runId: string, options: { turns?: number } = {}): Promise<RunView> {
    if (options.turns !== undefined && !(Number.isInteger(options.turns) && options.turns >= 1))
      throw rejected('turns_invalid', '--turns must be a whole number ≥ 1.');
    const lock = await this.#own.lock(runId);
    let tools: ToolsHold | undefined;
    try {
      if (!(await this.#store().get(runId))) {
        // An import into this root consumed the snapshot and died before its kernel commit.
        const record = await this.#own.authority.readRecord(runId);
        if (record?.state === 'IMPORTING' && record.ownerRoot === (await this.#own.rootId()))
          throw importIncomplete(runId);
      }
      const head = await this.#reads.head(runId);
      if (head.lifecycle === 'suspended' || head.lifecycle === 'active')
        await this.#turns.refuseSupersededLifetime(head);
      if (head.lifecycle === 'suspended') {
        // Static compatibility first, then the plan's servers: a refusal of either leaves the run suspended.
        const def = await this.#turns.checkPlan(head);
        tools = await this.#application.launchTools(def);
        await this.#own.activateRecord(lock, runId);
        await commitRun(this.#store(), head, {
          head: {
            ...head,
            lifecycle: 'active',
            suspendAtTurn: options.turns !== undefined ? head.completedTurns + options.turns : null,
          },
          events: [{ type: 'Resumed', data: { completed_turns: head.completedTurns } }],
          clearSuspendRequest: true,
        });
      } else if (head.lifecycle !== 'active') {
        // A crash at the finished run's last boundary may have left its Turn open: settle it, then refuse.
        await this.#turns.closeFinishedTurn(runId);
        throw terminalError(head);
      } else {
        await this.#own.activeRecord(runId);
      }
      await this.#turns.drive(runId);
    } finally {
      await this.#own.release(lock, runId);
      tools?.release();
    }
    return this.#reads.show(runId);
  }

  async answer(runId: string, interactionId: string, text: string): Promise<RunView> {
    const lock = await this.#own.lock(runId);
    try {
      await this.#own.ownedRecord(runId);
      const head = await this.#reads.head(runId);
      const pending = head.pendingInteraction;
      if (!pending || pending.interactionId !== interactionId) {
        if (head.usedInteractionIds.includes(interactionId)) {
          throw rejected(
            'interaction_id_reused',
            `Interaction ${interactionId} was already answered; an interaction id is used once.`,
          );
        }
        throw rejected('interaction_not_pending', `Run ${runId} is not waiting for interaction ${interactionId}.`, {
          nextAction: `see what the run waits for: loopx run show ${runId}`,
        });
      }
      await this.#own.activeRecord(runId);
      await this.#turns.checkPlan(head);
      const messages = await this.#store().messages(runId);
      const index = messages.findIndex(
        (m) => m.role === 'tool' && m.parts.some((p) => p.type === 'tool_result' && p.callId === pending.callId),
      );
      const toolName = (messages[index]!.parts[0] as ToolResultPart).toolName;
      await commitRun(this.#store(), head, {
        head: {
          ...head,
          pendingInteraction: null,
          usedInteractionIds: [...head.usedInteractionIds, interactionId].sort(compareStrings),
        },
        messages: [
          { index, message: toolMessage(messages[index]!.id, pending.callId, toolName, 'ok', { answer: text }) },
        ],
        events: [
          { type: 'InteractionAnswered', data: { interaction_id: interactionId, call_id: pending.callId } },
          { type: 'ToolResulted', data: { call_id: pending.callId, tool_name: toolName, status: 'ok' } },
        ],
      });
      await this.#turns.drive(runId);
    } finally {
      await this.#own.release(lock, runId);
    }
    return this.#reads.show(runId);
  }

  /**
   * Settle an uncertain mutating call under its original call id; never re-runs it. The effect
   * owner settles it first, under the call's original operation id and from the exact state it was
   * read in; an outcome it already has (from reconciliation) is taken instead, and a resolution
   * that contradicts it is refused (`effect_already_settled`) once the run has taken it.
   * `drive: false` settles and stops there: another driver continues the run (a cluster's daemons).
   */
  async resolve(runId: string, callId: string, resolution: Resolution, options: ResolveOptions = {}): Promise<RunView> {
    const drive = options.drive !== false;
    const lock = await this.#own.lock(runId);
    try {
      await this.#own.ownedRecord(runId);
      const takenNow = await this.#turns.settleOpenCalls(runId);
      const found = (await this.#store().mutations(runId)).find((m) => m.callId === callId);
      if (!found)
        throw notFound('call_not_found', `Run ${runId} has no mutating call ${callId}.`, {
          nextAction: `list uncertain calls: loopx run show ${runId}`,
        });
      const effect = await this.#effects.effectOf(callId);
      if (found.state !== 'uncertain') {
        // The effect owner had settled it (by reconciliation): the run took that outcome just now.
        if (effect && takenNow.has(callId)) return await this.#resolvedByEffectOwner(runId, resolution, effect, drive);
        throw rejected(
          'call_not_uncertain',
          `Call ${callId} is ${found.state}, not uncertain; only uncertain calls are resolved.`,
        );
      }
      const head = await this.#reads.head(runId);
      const { state, status, result } = operatorOutcome(resolution);
      // Only a run that goes on now runs its plan's code: settling alone records the operator's word.
      if (head.lifecycle === 'active' && drive) await this.#turns.checkPlan(head);
      // The effect owner first, under the original operation id (a run from before it has no effect: the engine's row alone).
      if (effect) {
        const settled = await settleByOperator(this.#effects.forWrite(), effect.operation_id, resolution, result);
        if (!settled.byOperator) {
          await this.#turns.settleOpenCalls(runId);
          return await this.#resolvedByEffectOwner(runId, resolution, settled.effect, drive);
        }
      }
      await this.#turns.settleCall(head, found, state, status, result, { resolution: resolution.kind });
      if (head.lifecycle === 'active' && drive) await this.#turns.drive(runId);
    } finally {
      await this.#own.release(lock, runId);
    }
    return this.#reads.show(runId);
  }

  /** A call the effect owner settled before the operator's resolution: the run has its outcome; a contradicting resolution is refused. */
  async #resolvedByEffectOwner(
    runId: string,
    resolution: Resolution,
    effect: effectOwner.EffectRecord,
    drive: boolean,
  ): Promise<RunView> {
    if (!agrees(resolution, effect)) throw effectOwner.alreadySettled(effect.operation_id, effect.outcome);
    if (drive && (await this.#reads.head(runId)).lifecycle === 'active') await this.#turns.drive(runId);
    return this.#reads.view(await this.#reads.head(runId));
  }

  async cancel(runId: string): Promise<RunView> {
    const lock = await this.#own.lock(runId);
    try {
      const record = await this.#own.ownedRecord(runId);
      await this.#turns.settleOpenCalls(runId);
      const head = await this.#reads.head(runId);
      if (head.lifecycle !== 'active' && head.lifecycle !== 'suspended') throw terminalError(head);
      // Tombstone first, kernel second: a crash in between leaves a run that can no longer move
      // or resume (and `cancel` again finishes it) — never a cancelled run whose exported
      // snapshot could still be imported elsewhere.
      if (record.state !== 'TERMINAL') await this.#own.tombstone(lock, record);
      await this.#turns.terminate(
        head,
        'cancelled',
        { type: 'Cancelled', data: { completed_turns: head.completedTurns } },
        null,
      );
      await this.#turns.closeFinishedTurn(runId);
    } finally {
      await this.#own.release(lock, runId);
    }
    return this.#reads.show(runId);
  }
}
