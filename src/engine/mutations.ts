/**
 * The journal of mutating tool calls: one journal, the effect owner's (`effects.db`), which decides
 * every mutating call's outcome. The engine's mutation rows (`engine.db`) stay its per-call record
 * of what the run saw; this module is how the engine keeps the two in step.
 *
 * Rules it keeps:
 * - Every mutating call — built-in, Goal work or an application's — is journalled in the effect
 *   owner under `operationIdOf(callId)`: its intent and its dispatch are durable there before the
 *   engine's own intent row and before the tool runs; its outcome is settled there before the
 *   engine records it. A crash in between leaves the effect owner ahead, never behind, and the
 *   next driver takes the effect owner's outcome (readback) instead of guessing.
 * - A tool's outcome is classified by code, explicitly: a value is committed; the effect owner's
 *   `effect_outcome_unknown` is unknown; any other typed refusal (a LoopxError that is not
 *   `internal`) means the tool or an owner refused before acting: rejected. Anything else — an
 *   untyped or internal throw mid-dispatch, an interaction asked after acting — is unknown,
 *   because the effect may have happened.
 * - An uncertain call is never re-run. It is settled by reconciliation or by the operator, under
 *   its original operation id and only from the exact state it was read in; an outcome the
 *   effect owner already settled is taken as it is, never a conflicting one.
 * - Runs recorded before this journal have engine rows and no effect: such a row is read as it is
 *   (dual read) and resolved in the engine alone.
 * - Roots that never run a mutating call get no `effects.db` from the engine: reads of a root
 *   without one find nothing and create nothing.
 */
import { canonicalJson } from '../core/index.js';
import { sha256Hex } from '../core/index.js';
import { isLoopxError, rejected, type LoopxError } from '../core/index.js';
import { effect as effectOwner, rootStores } from '../owners/index.js';
import type { ToolResultStatus } from '../snapshot/index.js';
import { deliveryOfReceipt, UNKNOWN_DELIVERY, type Delivery } from './deliveries.js';
import type { MutationRecord, MutationState } from './run-store/contract.js';
import {
  isEffectOutput,
  isInteractionRequest,
  type EffectIntent,
  type JsonValue,
  type Tool,
  type ToolContext,
} from './tools.js';

export type Resolution =
  | { readonly kind: 'committed'; readonly resultJson: string }
  | { readonly kind: 'absent' }
  | { readonly kind: 'abandon' };

/** An uncertain call as the effect owner has it: its operation id and outcome (`pending`, `unknown`), or null for a run recorded before the effect journal. */
export interface UncertainEffect {
  readonly call_id: string;
  readonly operation_id: string;
  readonly outcome: effectOwner.EffectOutcome | null;
}

/**
 * What the run and the effect owner hold about an uncertain call, for an operator deciding how to
 * resolve it. Public-safe: labels, digests, counts and times — never the call's arguments, the
 * effect's intent or a receipt (they may carry anything the model or a receiver sent).
 */
export interface CallEvidence {
  readonly call_id: string;
  readonly tool: string;
  readonly turn: number;
  /** The arguments the model sent, by the SHA-256 of their canonical JSON, their size and their top-level field names. */
  readonly arguments: { readonly sha256: string; readonly bytes: number; readonly fields: readonly string[] };
  /** The effect owner's record of it; null for a call recorded before the effect journal. */
  readonly effect: null | {
    /** What the receiver was asked: the kind of effect, its public-safe target label, the intent's digest and the key it was sent under. */
    readonly kind: string;
    readonly target: string;
    readonly intent_digest: string;
    readonly idempotency_key: string;
    /** Dispatches under its original identity. */
    readonly attempts: number;
    readonly recorded_at: string;
    readonly dispatched_at: string | null;
    /** Why reconciliation left it held (a code), or null. */
    readonly hold: string | null;
    readonly reconcile_attempts: number;
    /** Every state change, oldest first (receipts left out). */
    readonly history: readonly {
      readonly event: effectOwner.EffectEvent;
      readonly outcome: effectOwner.EffectOutcome;
      readonly at: string;
      readonly reason: string | null;
    }[];
  };
}

/** The evidence of one call from its engine row and its effect (see CallEvidence). */
export async function callEvidence(m: MutationRecord, effects: EffectAccess): Promise<CallEvidence> {
  let fields: string[] = [];
  try {
    const args = JSON.parse(m.argumentsJson) as unknown;
    if (typeof args === 'object' && args !== null && !Array.isArray(args)) fields = Object.keys(args).sort();
  } catch {
    // Recorded as it came: no field names to show.
  }
  const args = { sha256: sha256Hex(m.argumentsJson), bytes: Buffer.byteLength(m.argumentsJson, 'utf8'), fields };
  const journal = effects.forRead();
  const e = await journal?.get(operationIdOf(m.callId));
  if (!journal || !e) return { call_id: m.callId, tool: m.toolName, turn: m.turn, arguments: args, effect: null };
  const history = (await journal.history(e.operation_id)).map((h) => ({
    event: h.event,
    outcome: h.outcome,
    at: h.at,
    reason: h.reason,
  }));
  return {
    call_id: m.callId,
    tool: m.toolName,
    turn: m.turn,
    arguments: args,
    effect: {
      kind: e.kind,
      target: e.target,
      intent_digest: e.intent_digest,
      idempotency_key: e.idempotency_key,
      attempts: e.attempt,
      recorded_at: e.created_at,
      dispatched_at: e.dispatched_at,
      hold: e.hold,
      reconcile_attempts: e.reconcile_attempts,
      history,
    },
  };
}

/** Owner-safe operation id for an engine call id (`run/t1/k0` → `run:t1:k0`). */
export const operationIdOf = (callId: string): string => callId.replaceAll('/', ':');
/** The run and tool call an effect's operation id names (`operationIdOf` read back), or null for an effect no run call made. */
export function callOfOperation(operationId: string): { readonly run_id: string; readonly call_id: string } | null {
  const m = /^([A-Za-z0-9_-]+):(t\d+):(k\d+)$/.exec(operationId);
  return m ? { run_id: m[1]!, call_id: `${m[1]}/${m[2]}/${m[3]}` } : null;
}
const idempotencyKeyOf = (operationId: string): string => `idem:${operationId}`;

/** The root's effect journal, opened on first use: for a write (creating effects.db), or for a read (only if it exists). */
export class EffectAccess {
  readonly #root: string | undefined;
  #journal: effectOwner.EffectJournal | undefined;
  readonly #beforeOpen: (() => void) | undefined;

  /** `beforeOpen` runs before the root's effects.db is first opened (the engine's root admission). */
  constructor(options: {
    readonly root?: string;
    readonly effects?: effectOwner.EffectJournal;
    readonly beforeOpen?: () => void;
  }) {
    this.#root = options.root;
    this.#journal = options.effects;
    this.#beforeOpen = options.beforeOpen;
  }

  forWrite(): effectOwner.EffectJournal {
    if (this.#journal === undefined && this.#root !== undefined) this.#beforeOpen?.();
    this.#journal ??= this.#root === undefined ? effectOwner.memoryEffectJournal() : rootStores(this.#root).effects();
    return this.#journal;
  }

  /** Undefined while the root has no effects.db: nothing was journalled there (a run from before the journal). */
  forRead(): effectOwner.EffectJournal | undefined {
    if (this.#journal === undefined && this.#root !== undefined && !rootStores(this.#root).holds('effects'))
      return undefined;
    return this.forWrite();
  }

  async effectOf(callId: string): Promise<effectOwner.EffectRecord | undefined> {
    return this.forRead()?.get(operationIdOf(callId));
  }

  close(): void {
    this.#journal?.close();
  }
}

/** What a mutating call's effect allows before the tool runs. */
export type Begun =
  /** Intent and dispatch recorded: run the tool. */
  | { readonly kind: 'dispatch'; readonly effect: effectOwner.EffectRecord }
  /** The effect owner already has this call's outcome (a driver died before the engine recorded it): take it. */
  | { readonly kind: 'settled'; readonly effect: effectOwner.EffectRecord }
  /** Dispatched before and never settled: uncertain, never run again. */
  | { readonly kind: 'uncertain'; readonly effect: effectOwner.EffectRecord };

/**
 * Record a mutating call's intent in the effect owner and begin its dispatch. A call journalled
 * before keeps its original intent (it is not described again).
 */
export async function beginEffect(
  journal: effectOwner.EffectJournal,
  tool: Tool,
  args: { readonly [k: string]: JsonValue },
  ctx: ToolContext,
): Promise<Begun> {
  let effect = await journal.get(ctx.operationId);
  if (effect === undefined) {
    const d: EffectIntent = tool.describeEffect
      ? await tool.describeEffect(args, ctx)
      : {
          kind: 'tool.call',
          target: `tool:${tool.definition.name}`,
          intent: { tool: tool.definition.name, arguments: args },
        };
    effect = (
      await journal.recordIntent({
        operation_id: ctx.operationId,
        idempotency_key: d.idempotency_key ?? idempotencyKeyOf(ctx.operationId),
        goal_id: d.goal_id ?? effectOwner.runEffectScope(ctx.runId),
        kind: d.kind,
        target: d.target,
        intent: d.intent,
      })
    ).effect;
  }
  if (takenOutcome(effect)) return { kind: 'settled', effect };
  if (effectOwner.isUncertain(effect)) return { kind: 'uncertain', effect };
  return { kind: 'dispatch', effect: await journal.beginDispatch(ctx.operationId) };
}

/** The open calls (engine rows without an outcome) whose effect has none either; a row with no effect is read as it is. */
export async function uncertainEffects(
  open: readonly MutationRecord[],
  effects: EffectAccess,
): Promise<UncertainEffect[]> {
  const uncertain: UncertainEffect[] = [];
  for (const m of open) {
    const effect = await effects.effectOf(m.callId);
    // Settled by the effect owner: no longer uncertain; the next driver takes its outcome.
    if (effect && takenOutcome(effect)) continue;
    uncertain.push({ call_id: m.callId, operation_id: operationIdOf(m.callId), outcome: effect?.outcome ?? null });
  }
  return uncertain;
}

/** A call's outcome: the engine's record of it and the effect owner's. */
export interface CallOutcome {
  readonly state: Extract<MutationState, 'committed' | 'failed' | 'uncertain'>;
  readonly status: ToolResultStatus;
  /** What the model sees. */
  readonly result: JsonValue;
  readonly effect: { readonly outcome: 'committed' | 'rejected' | 'unknown'; readonly receipt: JsonValue };
  /** What a delivery's receiver did with it, read from the receipt before it is bounded (a digest would lose it). */
  readonly delivery: Delivery;
}

/** The outcome of a tool that returned. */
export function outcomeOfOutput(output: unknown): CallOutcome {
  if (isInteractionRequest(output)) {
    // It has already run, so its effect may have happened: that is an unknown outcome, not a failure.
    const result = {
      error: 'interaction_from_mutating_tool',
      message: 'A mutating tool asked for an interaction after running; its outcome is unknown.',
    };
    const receipt = { reason: 'interaction_from_mutating_tool' };
    return {
      state: 'uncertain',
      status: 'mutation_uncertain',
      result,
      effect: { outcome: 'unknown', receipt },
      delivery: UNKNOWN_DELIVERY,
    };
  }
  const { ok, value } = toJsonResult(isEffectOutput(output) ? output.result : output);
  const receipt = isEffectOutput(output) && ok ? output.receipt : value;
  return {
    state: 'committed',
    status: ok ? 'ok' : 'error',
    result: value,
    effect: { outcome: 'committed', receipt: bounded(receipt) },
    delivery: deliveryOfReceipt(receipt),
  };
}

/** The outcome of a tool that threw, by the error's code — see the module header. */
export function outcomeOfThrow(toolName: string, e: unknown): CallOutcome {
  if (effectOwner.isEffectError(e, 'effect_outcome_unknown')) {
    const reason = typeof e.details?.reason === 'string' ? e.details.reason : 'outcome_unknown';
    const result = {
      error: 'mutation_uncertain',
      message: `The outcome of ${toolName} is unknown: ${errorMessage(e)}`,
    };
    return {
      state: 'uncertain',
      status: 'mutation_uncertain',
      result,
      effect: { outcome: 'unknown', receipt: { reason } },
      delivery: UNKNOWN_DELIVERY,
    };
  }
  if (isLoopxError(e) && e.kind !== 'internal') {
    // A typed refusal (rejected, conflict, not found, usage): the tool or an owner refused before acting.
    return {
      state: 'failed',
      status: 'error',
      result: toolError(e),
      effect: { outcome: 'rejected', receipt: refusalReceipt(e) },
      delivery: UNKNOWN_DELIVERY,
    };
  }
  // An untyped or internal throw mid-dispatch: the effect may have happened, so its outcome is unknown.
  const result = { error: 'mutation_uncertain', message: `The outcome of ${toolName} is unknown: ${errorMessage(e)}` };
  const receipt = { reason: isLoopxError(e) ? e.code : 'tool_failed' };
  return {
    state: 'uncertain',
    status: 'mutation_uncertain',
    result,
    effect: { outcome: 'unknown', receipt },
    delivery: UNKNOWN_DELIVERY,
  };
}

/**
 * Settle a dispatched call's effect with its outcome. Returns undefined when it was settled as
 * given, or the effect as someone else settled it meanwhile (a reconciliation): that outcome stands.
 */
export async function settleEffect(
  journal: effectOwner.EffectJournal,
  operationId: string,
  outcome: CallOutcome,
): Promise<effectOwner.EffectRecord | undefined> {
  try {
    await journal.settle(operationId, outcome.effect.outcome, outcome.effect.receipt);
    return undefined;
  } catch (e) {
    if (!effectOwner.isEffectError(e, 'effect_already_settled')) throw e;
    return await journal.get(operationId);
  }
}

/** The engine's record of a call whose effect the effect owner has settled; undefined while the outcome is uncertain. */
export function takenOutcome(
  effect: effectOwner.EffectRecord,
): { readonly state: MutationState; readonly status: ToolResultStatus; readonly result: JsonValue } | undefined {
  const op = effect.operation_id;
  switch (effect.outcome) {
    case 'committed':
      return {
        state: 'committed',
        status: 'ok',
        result: { result: 'already_applied', operation_id: op, receipt: effect.receipt as JsonValue },
      };
    case 'absent':
      return {
        state: 'absent',
        status: 'error',
        result: {
          error: 'mutation_absent',
          message: 'The effect owner established that this operation did not take effect. It was not retried.',
        },
      };
    case 'rejected':
      return {
        state: 'failed',
        status: 'error',
        result: {
          error: 'effect_rejected',
          message: 'The operation was refused before it took effect.',
          receipt: effect.receipt as JsonValue,
        },
      };
    case 'superseded':
      return {
        state: 'failed',
        status: 'error',
        result: {
          error: 'effect_superseded',
          message: 'The operation was superseded before it was dispatched; it did not take effect.',
        },
      };
    default:
      return undefined;
  }
}

/** A call found dispatched in the effect owner, with no outcome there: it stays uncertain. */
export const undispatchedOutcome = (
  toolName: string,
): { readonly state: MutationState; readonly status: ToolResultStatus; readonly result: JsonValue } => ({
  state: 'uncertain',
  status: 'mutation_uncertain',
  result: {
    error: 'mutation_uncertain',
    message: `An earlier dispatch of ${toolName} has no recorded outcome. It will not be re-run.`,
  },
});

/** The engine's record of a call the operator resolved. */
export function operatorOutcome(resolution: Resolution): {
  readonly state: MutationState;
  readonly status: ToolResultStatus;
  readonly result: JsonValue;
} {
  if (resolution.kind === 'committed') {
    let result: JsonValue;
    try {
      result = JSON.parse(resolution.resultJson) as JsonValue;
    } catch {
      throw rejected('resolution_result_invalid', 'The --committed result is not JSON.', {
        nextAction: 'pass the result as JSON, e.g. \'{"ok":true}\' or \'"text"\'',
      });
    }
    return { state: 'committed', status: 'ok', result };
  }
  if (resolution.kind === 'absent') {
    return {
      state: 'absent',
      status: 'error',
      result: {
        error: 'mutation_absent',
        message: 'The operator established that this operation did not take effect. It was not retried.',
      },
    };
  }
  return {
    state: 'abandoned',
    status: 'error',
    result: {
      error: 'mutation_abandoned',
      message: 'The operator abandoned this operation; its outcome stays unknown. It was not retried.',
    },
  };
}

/** Whether an operator's resolution agrees with an outcome the effect owner settled. */
export const agrees = (resolution: Resolution, effect: effectOwner.EffectRecord): boolean =>
  resolution.kind === 'abandon' ||
  (resolution.kind === 'committed' ? effect.outcome === 'committed' : effect.outcome !== 'committed');

/**
 * Settle an uncertain call's effect by the operator's resolution, under its original operation id
 * and only from the exact state it is read in. Returns the effect as it ends and whether this
 * resolution settled it; an effect settled meanwhile (by reconciliation) is returned as it is.
 * `--abandon` leaves the outcome unknown: recorded as such, and held.
 */
export async function settleByOperator(
  journal: effectOwner.EffectJournal,
  operationId: string,
  resolution: Resolution,
  result: JsonValue,
): Promise<{ readonly effect: effectOwner.EffectRecord; readonly byOperator: boolean }> {
  for (let attempt = 0; ; attempt++) {
    const e = (await journal.get(operationId))!;
    if (takenOutcome(e)) return { effect: e, byOperator: false };
    const expected = { outcome: e.outcome, attempt: e.attempt };
    try {
      if (resolution.kind === 'committed')
        return {
          effect: (
            await journal.resolve(operationId, expected, 'committed', {
              resolved_by: 'operator',
              result: bounded(result),
            })
          ).effect,
          byOperator: true,
        };
      if (resolution.kind === 'absent')
        return {
          effect: (await journal.resolve(operationId, expected, 'absent', { resolved_by: 'operator' })).effect,
          byOperator: true,
        };
      if (e.outcome === 'pending')
        await journal.resolve(operationId, expected, 'unknown', { resolved_by: 'operator', abandoned: true });
      return { effect: await journal.holdUnknown(operationId, 'operator_abandoned'), byOperator: true };
    } catch (err) {
      // Settled or changed between the read and the write: read it again and decide on what it is now.
      if (
        attempt === 0 &&
        (effectOwner.isEffectError(err, 'effect_state_changed') ||
          effectOwner.isEffectError(err, 'effect_already_settled'))
      )
        continue;
      throw err;
    }
  }
}

export function toolError(e: unknown): JsonValue {
  return { error: isLoopxError(e) ? e.code : 'tool_failed', message: errorMessage(e) };
}

/** A tool's output as a JSON result; a value JSON cannot carry is reported as an error result. */
export function toJsonResult(output: unknown): { ok: boolean; value: JsonValue } {
  const value = output === undefined ? null : output;
  try {
    canonicalJson(value);
    return { ok: true, value: value as JsonValue };
  } catch {
    return {
      ok: false,
      value: { error: 'tool_result_not_json', message: 'The tool returned a value that is not JSON.' },
    };
  }
}

export const errorMessage = (e: unknown): string =>
  (e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 500);

/** A refusal's receipt: its code and its public-safe details. */
function refusalReceipt(e: LoopxError): JsonValue {
  try {
    return bounded({ ...(e.details as { [k: string]: JsonValue } | undefined), code: e.code });
  } catch {
    return { code: e.code };
  }
}

/** A JSON value small enough for an effect receipt, or its digest. */
function bounded(value: JsonValue): JsonValue {
  const text = canonicalJson(value);
  const size = Buffer.byteLength(text, 'utf8');
  return size <= effectOwner.MAX_RECEIPT_BYTES / 2 ? value : { sha256: sha256Hex(text), bytes: size };
}
