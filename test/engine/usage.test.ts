/**
 * Token usage (src/engine/usage.ts): a turn's usage is the provider's report or the estimate of the
 * recorded response; the Goal work debit takes the provider's figure only for the turn it belongs
 * to; the running total and the budget check; an imported history's estimate.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/snapshot/index.js';
import type { RunHead } from '../../src/engine/run-store/contract.js';
import {
  budgetRefusal,
  debitTokens,
  estimatedUsage,
  turnTokens,
  turnUsageOf,
  withTurnUsage,
} from '../../src/engine/usage.js';
import { defineAgent } from '../../src/engine/index.js';

const assistant: Message = { id: 'r/t1/m0', role: 'assistant', parts: [{ type: 'text', text: 'x'.repeat(100) }] };
const head = (over: Partial<RunHead>): RunHead => ({ completedTurns: 1, ...over }) as RunHead;
const def = (maxTokens?: number) =>
  defineAgent({
    id: 'a',
    version: '1',
    model: { provider: 'scripted', modelId: 's' },
    turnLimit: 3,
    toolPlan: 'p',
    ...(maxTokens ? { budget: { maxTokens } } : {}),
  });

describe('token usage', () => {
  it('takes the provider report, and estimates only when there is none', () => {
    expect(turnUsageOf(2, { text: '', toolCalls: [], usage: { inputTokens: 7 } }, assistant)).toEqual({
      turn: 2,
      inputTokens: 7,
      outputTokens: 0,
      estimated: false,
    });
    expect(turnUsageOf(2, { text: '', toolCalls: [] }, assistant)).toEqual({
      turn: 2,
      inputTokens: 0,
      outputTokens: turnTokens(assistant),
      estimated: true,
    });
    expect(turnTokens(assistant)).toBe(
      Math.ceil(Buffer.byteLength(JSON.stringify([{ text: 'x'.repeat(100), type: 'text' }])) / 4),
    );
  });

  it('debits the provider figure only for the turn it was reported for', () => {
    const reported = { turn: 1, inputTokens: 30, outputTokens: 12, estimated: false };
    expect(debitTokens(head({ turnUsage: reported }), assistant)).toBe(42);
    expect(debitTokens(head({ completedTurns: 2, turnUsage: reported }), assistant)).toBe(turnTokens(assistant));
    expect(debitTokens(head({ turnUsage: { ...reported, estimated: true } }), assistant)).toBe(turnTokens(assistant));
    expect(debitTokens(head({}), assistant)).toBe(turnTokens(assistant));
  });

  it('keeps a running total and stops at the budget', () => {
    const once = withTurnUsage(head({}), { turn: 1, inputTokens: 30, outputTokens: 12, estimated: false });
    const twice = withTurnUsage(head(once), { turn: 2, inputTokens: 5, outputTokens: 3, estimated: true });
    expect(twice.usage).toEqual({ inputTokens: 35, outputTokens: 15, estimated: true });
    expect(budgetRefusal(def(51), head(twice))).toBeUndefined();
    expect(budgetRefusal(def(50), head(twice))?.code).toBe('token_budget_exhausted');
    expect(budgetRefusal(def(), head(twice))).toBeUndefined();
  });

  it('estimates an imported history: each response, and each call input as the history before it', () => {
    const user: Message = { id: 'r/t0/m0', role: 'user', parts: [{ type: 'text', text: 'y'.repeat(40) }] };
    const userBytes = Buffer.byteLength(JSON.stringify(user.parts));
    const u = estimatedUsage([user, assistant])!;
    expect(u).toEqual({ inputTokens: Math.ceil(userBytes / 4), outputTokens: turnTokens(assistant), estimated: true });
    expect(estimatedUsage([user])).toBeUndefined();
  });
});
