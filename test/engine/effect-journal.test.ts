/**
 * One journal for mutating calls: every mutating tool call goes through the effect owner (intent
 * and dispatch before the tool runs, outcome after, under the call's operation id); the engine
 * classifies a tool's outcome by code, reads an uncertain call from the effect owner, and settles
 * it there first — taking an outcome the effect owner already has, never a conflicting one. Runs
 * recorded before the journal (engine rows, no effect) stay readable and resolvable.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rejected } from '../../src/core/errors.js';
import { openEngine, type Engine, type JsonValue, type Message, type Tool } from '../../src/engine/index.js';
import {
  memoryEffectJournal,
  openSqliteEffectJournal,
  outcomeUnknown,
  type EffectJournal,
} from '../../src/owners/effect/index.js';
import type { ToolResultPart } from '../../src/snapshot/index.js';
import {
  allEvents,
  call,
  expectCode,
  latch,
  localApp,
  makeTool,
  privateDir,
  scriptedAgent,
  STORE_KINDS,
  testAuthority,
  type StoreKind,
} from './engine-support.js';

const results = (messages: Message[]): ToolResultPart[] =>
  messages.filter((m) => m.role === 'tool').map((m) => m.parts[0] as ToolResultPart);
const chargeSchema: { [k: string]: JsonValue } = {
  type: 'object',
  additionalProperties: false,
  required: ['amount'],
  properties: { amount: { type: 'number' } },
};
const chargeScript = [{ text: 'charging', toolCalls: [call('charge', { amount: 5 })] }, { text: 'charged' }];
const charge = (execute: Tool['execute'], extra: Partial<Tool> = {}): Tool => ({
  ...makeTool('charge', execute, { mutating: true, inputSchema: chargeSchema }),
  ...extra,
});

const closers: Array<() => void> = [];
afterEach(() => {
  while (closers.length > 0) closers.pop()!();
});

interface Journalled {
  readonly engine: Engine;
  /** The effect owner's journal of the engine's root (a second handle on effects.db for SQLite). */
  readonly effects: () => EffectJournal;
  readonly root?: string;
}

/** An engine over `kind` and the effect journal it writes to. */
function journalled(kind: StoreKind, tools: readonly Tool[], root?: string): Journalled {
  if (kind === 'memory') {
    const effects = memoryEffectJournal();
    const engine = openEngine({ application: localApp(tools), effects, authority: testAuthority() });
    closers.push(() => engine.close());
    return { engine, effects: () => effects };
  }
  const dir = root ?? privateDir();
  const engine = openEngine({ root: dir, application: localApp(tools), authority: testAuthority() });
  closers.push(() => engine.close());
  let handle: EffectJournal | undefined;
  closers.unshift(() => handle?.close());
  return { engine, root: dir, effects: () => (handle ??= openSqliteEffectJournal(join(dir, 'effects.db'))) };
}

describe.each(STORE_KINDS)('the effect journal of mutating calls (%s store)', (kind) => {
  it('every mutating call is journalled in the effect owner under its operation id: intent and dispatch before the tool runs, the outcome after', async () => {
    const entered = latch();
    const gate = latch();
    const { engine, effects } = journalled(kind, [
      charge(async (args) => {
        entered.open();
        await gate.wait();
        return { charged: args.amount as number };
      }),
    ]);
    const running = engine.start(scriptedAgent(chargeScript), { runId: 'run-j' });
    await entered.wait();

    expect(await effects().get('run-j:t1:k0')).toMatchObject({
      idempotency_key: 'idem:run-j:t1:k0',
      goal_id: 'run:run-j',
      kind: 'tool.call',
      target: 'tool:charge',
      outcome: 'pending',
      attempt: 1,
    });
    expect((await effects().get('run-j:t1:k0'))!.dispatched_at).not.toBeNull();
    expect(JSON.parse((await effects().get('run-j:t1:k0'))!.intent)).toEqual({
      tool: 'charge',
      arguments: { amount: 5 },
    });
    expect(await engine.mutations('run-j')).toMatchObject([{ callId: 'run-j/t1/k0', state: 'intent' }]);

    gate.open();
    expect(await running).toMatchObject({ status: 'completed' });
    expect(await effects().get('run-j:t1:k0')).toMatchObject({ outcome: 'committed', receipt: { charged: 5 } });
    expect((await effects().history('run-j:t1:k0')).map((h) => h.event)).toEqual(['intent', 'dispatch', 'settle']);
  });

  it.each([
    {
      name: 'a value is committed',
      throws: undefined,
      state: 'committed',
      outcome: 'committed',
      receipt: { charged: 5 },
    },
    {
      name: 'a typed refusal is rejected (it refused before acting)',
      throws: () => rejected('insufficient_funds', 'No funds.'),
      state: 'failed',
      outcome: 'rejected',
      receipt: { code: 'insufficient_funds' },
    },
    {
      name: "the effect owner's typed effect_outcome_unknown is unknown",
      throws: () => outcomeUnknown('run-c:t1:k0', 'timeout'),
      state: 'uncertain',
      outcome: 'unknown',
      receipt: { reason: 'timeout' },
    },
    {
      name: 'an untyped throw mid-dispatch is unknown (the effect may have happened)',
      throws: () => new Error('connection reset'),
      state: 'uncertain',
      outcome: 'unknown',
      receipt: { reason: 'tool_failed' },
    },
  ] as const)(
    "a tool's outcome is classified by code: $name, in the engine and in the effect owner",
    async ({ throws, state, outcome, receipt }) => {
      const { engine, effects } = journalled(kind, [
        charge((args) => {
          if (throws) throw throws();
          return { charged: args.amount as number };
        }),
      ]);
      const view = await engine.start(scriptedAgent(chargeScript), { runId: 'run-c' });

      expect(await engine.mutations('run-c')).toMatchObject([{ state }]);
      expect(await effects().get('run-c:t1:k0')).toMatchObject({ outcome, receipt });
      if (state === 'uncertain') {
        // The engine's view of the call is the effect owner's: its operation id and outcome.
        expect(view.waiting_for).toEqual({
          kind: 'resolution',
          call_ids: ['run-c/t1/k0'],
          effects: [{ call_id: 'run-c/t1/k0', operation_id: 'run-c:t1:k0', outcome: 'unknown' }],
        });
        expect((await effects().holds()).map((e) => e.operation_id)).toEqual(['run-c:t1:k0']);
      } else {
        expect(view).toMatchObject({ status: 'completed', waiting_for: null });
        expect(await effects().holds()).toEqual([]);
      }
    },
  );

  it.each([
    {
      name: 'committed',
      resolution: { kind: 'committed', resultJson: '{"charged":5}' },
      effect: { outcome: 'committed', receipt: { resolved_by: 'operator', result: { charged: 5 } }, hold: null },
      holds: [],
    },
    {
      name: 'absent',
      resolution: { kind: 'absent' },
      effect: { outcome: 'absent', receipt: { resolved_by: 'operator' }, hold: null },
      holds: [],
    },
    {
      name: 'abandon',
      resolution: { kind: 'abandon' },
      effect: { outcome: 'unknown', hold: 'operator_abandoned' },
      holds: ['run-r:t1:k0'],
    },
  ] as const)(
    'resolve --$name settles the effect owner first, under the original operation id (abandon leaves it unknown and held)',
    async ({ resolution, effect, holds }) => {
      const { engine, effects } = journalled(kind, [
        charge(() => Promise.reject(new Error('connection reset after the request was sent'))),
      ]);
      await engine.start(scriptedAgent(chargeScript), { runId: 'run-r' });

      expect(await engine.resolve('run-r', 'run-r/t1/k0', resolution)).toMatchObject({
        status: 'completed',
        waiting_for: null,
      });
      expect(await effects().get('run-r:t1:k0')).toMatchObject({ operation_id: 'run-r:t1:k0', ...effect });
      expect((await effects().holds()).map((e) => e.operation_id)).toEqual(holds);
      expect((await effects().list()).map((e) => e.operation_id)).toEqual(['run-r:t1:k0']); // no new identity
    },
  );

  it.each(['resume', 'resolve --committed'] as const)(
    'an outcome the effect owner settled by reconciliation is taken by the run (readback) on %s: it is not uncertain, not re-run, and the run continues',
    async (how) => {
      let runs = 0;
      const { engine, effects } = journalled(kind, [charge(() => (runs++, Promise.reject(new Error('timeout'))))]);
      await engine.start(scriptedAgent(chargeScript), { runId: 'run-t' });
      const reconciled = await effects().reconcile('run-t:t1:k0', async () => ({
        status: 'committed',
        receipt: { found: true },
      }));
      expect(reconciled.resolution).toBe('committed');
      expect((await engine.show('run-t')).waiting_for).toBeNull(); // the effect owner has the outcome: nothing to resolve

      const view =
        how === 'resume'
          ? await engine.resume('run-t')
          : await engine.resolve('run-t', 'run-t/t1/k0', { kind: 'committed', resultJson: '{"charged":5}' });

      expect(view).toMatchObject({ status: 'completed', waiting_for: null });
      expect(runs).toBe(1);
      expect(await engine.mutations('run-t')).toMatchObject([{ state: 'committed' }]);
      expect(JSON.parse(results(await engine.messages('run-t'))[0]!.resultJson)).toEqual({
        result: 'already_applied',
        operation_id: 'run-t:t1:k0',
        receipt: { reconciled: true, observation: { found: true } },
      });
      const taken = (await allEvents(engine, 'run-t')).filter((e) => e.type === 'ToolResulted').pop();
      expect(taken?.data).toEqual({
        call_id: 'run-t/t1/k0',
        tool_name: 'charge',
        status: 'ok',
        settled_by: 'effect_owner',
      });
    },
  );

  it("a resolution that contradicts the effect owner's outcome is refused with effect_already_settled; the run keeps the effect owner's outcome", async () => {
    const { engine, effects } = journalled(kind, [charge(() => Promise.reject(new Error('timeout')))]);
    await engine.start(scriptedAgent(chargeScript), { runId: 'run-x' });
    await effects().reconcile('run-x:t1:k0', async () => ({ status: 'committed', receipt: { found: true } }));

    const refused = await expectCode(
      engine.resolve('run-x', 'run-x/t1/k0', { kind: 'absent' }),
      'effect_already_settled',
    );

    expect(refused.details).toEqual({ operation_id: 'run-x:t1:k0', outcome: 'committed' });
    expect(await engine.mutations('run-x')).toMatchObject([{ state: 'committed' }]);
    expect(await effects().get('run-x:t1:k0')).toMatchObject({ outcome: 'committed' });
    await expectCode(engine.resolve('run-x', 'run-x/t1/k0', { kind: 'absent' }), 'call_not_uncertain');
  });

  it('a tool that describes its effect has it journalled as described (kind, target, Goal); a refusal while describing refuses the call before any intent', async () => {
    let refuse = false;
    let executed = 0;
    const tool = charge(() => (executed++, { charged: 5 }), {
      describeEffect: (args) => {
        if (refuse) throw rejected('goal_work_unbound', 'Not bound.');
        return {
          goal_id: 'launch',
          kind: 'payment.charge',
          target: 'payments:acme',
          intent: { amount: args.amount as number },
        };
      },
    });
    const { engine, effects } = journalled(kind, [tool]);
    await engine.start(scriptedAgent(chargeScript), { runId: 'run-d' });
    expect(await effects().get('run-d:t1:k0')).toMatchObject({
      goal_id: 'launch',
      kind: 'payment.charge',
      target: 'payments:acme',
      intent: '{"amount":5}',
      outcome: 'committed',
    });

    refuse = true;
    const view = await engine.start(scriptedAgent(chargeScript), { runId: 'run-d2' });
    expect(view).toMatchObject({ status: 'completed', waiting_for: null });
    expect(await engine.mutations('run-d2')).toMatchObject([
      { state: 'failed', resultJson: '{"error":"goal_work_unbound","message":"Not bound."}' },
    ]);
    expect(await effects().get('run-d2:t1:k0')).toBeUndefined();
    expect(executed).toBe(1);
  });
});

describe('runs recorded before the effect journal (dual read)', () => {
  it.each(['no effects.db', 'an effects.db without the record'] as const)(
    'an uncertain engine.db row with %s is read and resolved from the engine row alone',
    async (shape) => {
      const root = privateDir();
      let runs = 0;
      const tools = [charge(() => (runs++, Promise.reject(new Error('connection reset'))))];
      const before = openEngine({ root, application: localApp(tools), authority: testAuthority() });
      await before.start(scriptedAgent(chargeScript), { runId: 'run-old' });
      before.close();
      // What a root written before the journal holds: the engine's uncertain row and no effect for it.
      for (const f of ['effects.db', 'effects.db-wal', 'effects.db-shm']) rmSync(join(root, f), { force: true });
      if (shape === 'an effects.db without the record') openSqliteEffectJournal(join(root, 'effects.db')).close();

      const { engine, effects } = journalled('sqlite', tools, root);
      expect(await engine.mutations('run-old')).toMatchObject([{ state: 'uncertain' }]);
      expect((await engine.show('run-old')).waiting_for).toEqual({
        kind: 'resolution',
        call_ids: ['run-old/t1/k0'],
        effects: [{ call_id: 'run-old/t1/k0', operation_id: 'run-old:t1:k0', outcome: null }],
      });
      expect(await engine.resume('run-old')).toMatchObject({ status: 'active', waiting_for: { kind: 'resolution' } });

      expect(await engine.resolve('run-old', 'run-old/t1/k0', { kind: 'absent' })).toMatchObject({
        status: 'completed',
        waiting_for: null,
      });
      expect(await engine.mutations('run-old')).toMatchObject([{ state: 'absent' }]);
      expect(runs).toBe(1);
      // Nothing was invented in the effect owner for a call it never journalled.
      if (shape === 'no effects.db') expect(existsSync(join(root, 'effects.db'))).toBe(false);
      else expect(await effects().list()).toEqual([]);
    },
  );
});
