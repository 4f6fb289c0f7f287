/**
 * Token usage of a run: what each model call used, as recorded with its response, the run's total
 * that its budget is checked against, and the amount a Goal work Turn debits.
 *
 * Rules it keeps:
 * - A turn's usage is the provider's report, recorded in the same commit as the response
 *   (`ModelResponded.usage`, the head's `turnUsage` and running total). A provider that reports
 *   none (the scripted one) is estimated from the recorded response alone — one token per four
 *   bytes of its canonical JSON, at least one — and marked `estimated`.
 * - Everything here is derived from durable state, so every driver that settles or checks a turn
 *   computes the same amounts (a repeated debit after a crash is the same request).
 * - A run imported from a snapshot carries no usage (the snapshot format has none): its usage
 *   before the import is estimated from its history when it is imported — each recorded response
 *   as above, and each model call's input as the history before it — and marked `estimated`.
 * - A budget is checked at a turn boundary, before a new turn starts: a run whose total has reached
 *   `budget.max_tokens` stops there (`token_budget_exhausted`) and never makes another call.
 */
import { canonicalJsonByteLength, rejected, type LoopxError } from '../core/index.js';
import type { Message } from '../snapshot/index.js';
import type { AgentDefinition } from './agent.js';
import type { ModelResponse } from './providers/provider.js';
import type { RunFailure, RunHead, RunUsage, TurnUsage } from './run-store/contract.js';
import type { JsonValue } from './tools.js';

const tokensOfBytes = (bytes: number): number => Math.max(1, Math.ceil(bytes / 4));

/**
 * A Turn's estimated tokens: the tokens of the response the engine recorded for it, estimated as
 * one per four bytes of its canonical JSON (at least one).
 */
export const turnTokens = (assistant: Message): number => tokensOfBytes(canonicalJsonByteLength(assistant.parts));

/** The usage of turn `turn`'s model call: the provider's report, else the estimate of its response. */
export function turnUsageOf(turn: number, response: ModelResponse, assistant: Message): TurnUsage {
  const reported = response.usage;
  if (reported && (reported.inputTokens !== undefined || reported.outputTokens !== undefined)) {
    return { turn, inputTokens: reported.inputTokens ?? 0, outputTokens: reported.outputTokens ?? 0, estimated: false };
  }
  return { turn, inputTokens: 0, outputTokens: turnTokens(assistant), estimated: true };
}

export const usageData = (u: TurnUsage): { [k: string]: JsonValue } => ({
  input_tokens: u.inputTokens,
  output_tokens: u.outputTokens,
  source: u.estimated ? 'estimated' : 'provider',
});

/** The head fields that record a turn's usage: the turn's own, and the run's running total. */
export function withTurnUsage(head: RunHead, u: TurnUsage): Pick<RunHead, 'turnUsage' | 'usage'> {
  const total = head.usage ?? { inputTokens: 0, outputTokens: 0, estimated: false };
  return {
    turnUsage: u,
    usage: {
      inputTokens: total.inputTokens + u.inputTokens,
      outputTokens: total.outputTokens + u.outputTokens,
      estimated: total.estimated || u.estimated,
    },
  };
}

export const totalTokens = (head: RunHead): number =>
  head.usage ? head.usage.inputTokens + head.usage.outputTokens : 0;

/** What a Goal work Turn debits for completed turn `head.completedTurns`: its recorded usage, else the estimate of its response. */
export function debitTokens(head: RunHead, assistant: Message): number {
  const u = head.turnUsage;
  if (u && u.turn === head.completedTurns && !u.estimated) return Math.max(1, u.inputTokens + u.outputTokens);
  return turnTokens(assistant);
}

/** The estimated usage of a history recorded elsewhere (an imported run). */
export function estimatedUsage(messages: readonly Message[]): RunUsage | undefined {
  let before = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  let calls = 0;
  for (const message of messages) {
    const bytes = canonicalJsonByteLength(message.parts);
    if (message.role === 'assistant') {
      calls++;
      inputTokens += tokensOfBytes(before);
      outputTokens += tokensOfBytes(bytes);
    }
    before += bytes;
  }
  return calls === 0 ? undefined : { inputTokens, outputTokens, estimated: true };
}

export const tokenBudgetExhausted = (used: number, budget: number): LoopxError =>
  rejected('token_budget_exhausted', `The run used ${used} model tokens of its budget of ${budget}.`, {
    nextAction: 'raise budget.max_tokens in the agent file under a new version, then start a new run of it',
    details: { used_tokens: used, max_tokens: budget },
  });

/** The budget refusal for a run at a boundary, or undefined when it may start another turn. */
export function budgetRefusal(def: AgentDefinition, head: RunHead): LoopxError | undefined {
  if (!def.budget) return undefined;
  const used = totalTokens(head);
  return used >= def.budget.maxTokens ? tokenBudgetExhausted(used, def.budget.maxTokens) : undefined;
}

/** A run's recorded failure for a typed error: code, message and its one next action. */
export const failureOf = (e: LoopxError): RunFailure => ({
  code: e.code,
  message: e.message,
  ...(e.nextAction ? { nextAction: e.nextAction } : {}),
});
