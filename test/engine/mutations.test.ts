/**
 * Mutating tools: intent is durable before dispatch and the outcome after; a call whose outcome
 * is unknown becomes uncertain, is never re-run, blocks export, and is settled only by `resolve`.
 * The side effect is counted in `effects` — the observable world the tool changes.
 */
import { describe, expect, it } from 'vitest';
import { rejected } from '../../src/core/errors.js';
import type { JsonValue, Message, Resolution } from '../../src/engine/index.js';
import { decodeSnapshot, type ToolResultPart } from '../../src/snapshot/index.js';
import {
  allEvents,
  call,
  expectCode,
  latch,
  localApp,
  makeTool,
  openTestEngine,
  scriptedAgent,
  STORE_KINDS,
} from './engine-support.js';

const results = (messages: Message[]): ToolResultPart[] =>
  messages.filter((m) => m.role === 'tool').map((m) => m.parts[0] as ToolResultPart);

const chargeSchema: { [k: string]: JsonValue } = {
  type: 'object',
  additionalProperties: false,
  required: ['amount'],
  properties: { amount: { type: 'number' } },
};

/** A payment tool whose effect happens, then the connection drops: the outcome is unknown. */
function uncertainCharge(effects: number[]) {
  return makeTool(
    'charge',
    (args) => {
      effects.push(args.amount as number);
      throw new Error('connection reset after the request was sent');
    },
    { mutating: true, inputSchema: chargeSchema },
  );
}

const chargeScript = [{ text: 'charging', toolCalls: [call('charge', { amount: 5 })] }, { text: 'charged' }];

describe.each(STORE_KINDS)('mutating tools (%s store)', (kind) => {
  it('a mutating call records its intent before the tool runs and its outcome after', async () => {
    const entered = latch();
    const gate = latch();
    const effects: number[] = [];
    const charge = makeTool(
      'charge',
      async (args) => {
        entered.open();
        await gate.wait();
        effects.push(args.amount as number);
        return { charged: args.amount as number };
      },
      { mutating: true, inputSchema: chargeSchema },
    );
    const engine = openTestEngine(kind, localApp([charge]));

    const running = engine.start(scriptedAgent(chargeScript), { runId: 'run-m' });
    await entered.wait();

    expect(await engine.mutations('run-m')).toEqual([
      {
        runId: 'run-m',
        callId: 'run-m/t1/k0',
        turn: 1,
        toolName: 'charge',
        argumentsJson: '{"amount":5}',
        state: 'intent',
        resultJson: null,
      },
    ]);
    const during = await allEvents(engine, 'run-m');
    expect(during[during.length - 1]).toMatchObject({
      type: 'ToolCalled',
      data: { call_id: 'run-m/t1/k0', tool_name: 'charge' },
    });

    gate.open();
    const view = await running;

    expect(view.status).toBe('completed');
    expect(effects).toEqual([5]);
    expect(await engine.mutations('run-m')).toEqual([
      {
        runId: 'run-m',
        callId: 'run-m/t1/k0',
        turn: 1,
        toolName: 'charge',
        argumentsJson: '{"amount":5}',
        state: 'committed',
        resultJson: '{"charged":5}',
      },
    ]);
    expect(results(await engine.messages('run-m'))[0]).toMatchObject({ status: 'ok', resultJson: '{"charged":5}' });
  });

  it('a mutating tool that refuses before acting (a rejected error) is a definite failure and the run continues', async () => {
    const charge = makeTool(
      'charge',
      () => {
        throw rejected('insufficient_funds', 'The account has insufficient funds.');
      },
      { mutating: true, inputSchema: chargeSchema },
    );
    const engine = openTestEngine(kind, localApp([charge]));

    const view = await engine.start(scriptedAgent(chargeScript), { runId: 'run-mf' });

    expect(view).toMatchObject({ status: 'completed', waiting_for: null });
    expect(await engine.mutations('run-mf')).toMatchObject([
      { state: 'failed', resultJson: '{"error":"insufficient_funds","message":"The account has insufficient funds."}' },
    ]);
    expect(results(await engine.messages('run-mf'))[0]).toMatchObject({ status: 'error' });
  });

  it('a mutating tool that throws any other error leaves the call uncertain and the run waiting for resolution', async () => {
    const effects: number[] = [];
    const engine = openTestEngine(kind, localApp([uncertainCharge(effects)]));

    const view = await engine.start(scriptedAgent(chargeScript), { runId: 'run-u' });

    expect(view).toMatchObject({
      status: 'active',
      completed_turns: 0,
      waiting_for: { kind: 'resolution', call_ids: ['run-u/t1/k0'] },
    });
    expect(await engine.mutations('run-u')).toMatchObject([{ callId: 'run-u/t1/k0', state: 'uncertain' }]);
    expect(results(await engine.messages('run-u'))[0]).toMatchObject({
      callId: 'run-u/t1/k0',
      status: 'mutation_uncertain',
    });
    expect(effects).toEqual([5]);
  });

  it('an uncertain call is not re-run on resume', async () => {
    const effects: number[] = [];
    const engine = openTestEngine(kind, localApp([uncertainCharge(effects)]));
    const waiting = await engine.start(scriptedAgent(chargeScript), { runId: 'run-nr' });

    const view = await engine.resume('run-nr');

    expect(view).toEqual(waiting);
    expect(effects).toEqual([5]);
    expect(await engine.mutations('run-nr')).toMatchObject([{ state: 'uncertain' }]);
  });

  it('a run with an uncertain call is not exported: active refuses with export_run_active, cancelled with export_unresolved_mutation', async () => {
    const effects: number[] = [];
    const engine = openTestEngine(kind, localApp([uncertainCharge(effects)]));
    await engine.start(scriptedAgent(chargeScript), { runId: 'run-xu' });

    await expectCode(engine.exportSnapshot('run-xu'), 'export_run_active');
    // Suspension waits for a completed turn boundary, which an uncertain call blocks.
    expect(await engine.suspend('run-xu')).toMatchObject({ status: 'active', suspend_requested: true });

    // Cancelling ends the run but never invents the call's outcome.
    await engine.cancel('run-xu');
    const refusal = await expectCode(engine.exportSnapshot('run-xu'), 'export_unresolved_mutation');
    expect(refusal.details).toEqual({ call_ids: ['run-xu/t1/k0'] });

    // Settling it makes the cancelled run exportable; nothing ran again.
    expect(await engine.resolve('run-xu', 'run-xu/t1/k0', { kind: 'abandon' })).toMatchObject({ status: 'cancelled' });
    expect(decodeSnapshot((await engine.exportSnapshot('run-xu')).bytes)).toMatchObject({ lifecycle: 'cancelled' });
    expect(effects).toEqual([5]);
  });

  it.each([
    {
      name: 'committed',
      resolution: { kind: 'committed', resultJson: '{ "charged": 5, "receipt": "r-1" }' },
      status: 'ok',
      state: 'committed',
      result: { charged: 5, receipt: 'r-1' },
    },
    {
      name: 'absent',
      resolution: { kind: 'absent' },
      status: 'error',
      state: 'absent',
      result: { error: 'mutation_absent' },
    },
    {
      name: 'abandon',
      resolution: { kind: 'abandon' },
      status: 'error',
      state: 'abandoned',
      result: { error: 'mutation_abandoned' },
    },
  ] as const)(
    'resolve --$name settles the uncertain call with status $status under its original call id, and the run continues',
    async ({ resolution, status, state, result }) => {
      const effects: number[] = [];
      const engine = openTestEngine(kind, localApp([uncertainCharge(effects)]));
      const waiting = await engine.start(scriptedAgent(chargeScript), { runId: 'run-res' });

      const view = await engine.resolve('run-res', 'run-res/t1/k0', resolution as Resolution);

      expect(view).toMatchObject({ status: 'completed', completed_turns: 2, waiting_for: null });
      const [settled] = results(await engine.messages('run-res'));
      expect(settled).toMatchObject({ callId: 'run-res/t1/k0', toolName: 'charge', status });
      expect(JSON.parse(settled!.resultJson)).toMatchObject(result);
      expect(await engine.mutations('run-res')).toMatchObject([
        { callId: 'run-res/t1/k0', state, resultJson: settled!.resultJson },
      ]);
      const tail = (await allEvents(engine, 'run-res')).filter((e) => e.sequence > waiting.last_sequence);
      expect(tail[0]).toMatchObject({
        type: 'ToolResulted',
        data: { call_id: 'run-res/t1/k0', status, resolution: resolution.kind },
      });
      expect(tail.map((e) => e.type)).toEqual([
        'ToolResulted',
        'TurnCompleted',
        'TurnStarted',
        'ModelResponded',
        'TurnCompleted',
        'Completed',
      ]);
      expect(effects).toEqual([5]);
      expect(decodeSnapshot((await engine.exportSnapshot('run-res')).bytes).lifecycle).toBe('completed');
    },
  );

  it('resolving a call that is not uncertain is refused with call_not_uncertain', async () => {
    const effects: number[] = [];
    const engine = openTestEngine(kind, localApp([uncertainCharge(effects)]));
    await engine.start(scriptedAgent(chargeScript), { runId: 'run-nu' });
    const settled = await engine.resolve('run-nu', 'run-nu/t1/k0', { kind: 'absent' });

    await expectCode(
      engine.resolve('run-nu', 'run-nu/t1/k0', { kind: 'committed', resultJson: '{}' }),
      'call_not_uncertain',
    );
    expect(await engine.show('run-nu')).toEqual(settled);
    expect(await engine.mutations('run-nu')).toMatchObject([{ state: 'absent' }]);
  });

  it('resolving a call that committed normally is refused with call_not_uncertain; an unknown call is call_not_found', async () => {
    const charge = makeTool('charge', (args) => ({ charged: args.amount as number }), {
      mutating: true,
      inputSchema: chargeSchema,
    });
    const engine = openTestEngine(kind, localApp([charge]));
    await engine.start(scriptedAgent(chargeScript), { runId: 'run-ok' });

    await expectCode(engine.resolve('run-ok', 'run-ok/t1/k0', { kind: 'abandon' }), 'call_not_uncertain');
    await expectCode(engine.resolve('run-ok', 'run-ok/t9/k0', { kind: 'abandon' }), 'call_not_found');
  });

  it('a --committed result that is not JSON is refused with resolution_result_invalid and the call stays uncertain', async () => {
    const effects: number[] = [];
    const engine = openTestEngine(kind, localApp([uncertainCharge(effects)]));
    const waiting = await engine.start(scriptedAgent(chargeScript), { runId: 'run-bad' });

    await expectCode(
      engine.resolve('run-bad', 'run-bad/t1/k0', { kind: 'committed', resultJson: 'charged!' }),
      'resolution_result_invalid',
    );
    expect(await engine.show('run-bad')).toEqual(waiting);
  });

  it('after a resolution, the later calls of the same turn run and no earlier one runs again', async () => {
    const effects: number[] = [];
    const after: string[] = [];
    const note = makeTool('note', (args) => (after.push(args.text as string), null), { mutating: true });
    const engine = openTestEngine(kind, localApp([uncertainCharge(effects), note]));
    const agent = scriptedAgent([
      { toolCalls: [call('charge', { amount: 7 }), call('note', { text: 'charged 7' })] },
      { text: 'done' },
    ]);
    await engine.start(agent, { runId: 'run-next' });
    expect(after).toEqual([]);

    const view = await engine.resolve('run-next', 'run-next/t1/k0', { kind: 'committed', resultJson: '{"charged":7}' });

    expect(view.status).toBe('completed');
    expect(effects).toEqual([7]);
    expect(after).toEqual(['charged 7']);
    expect((await engine.mutations('run-next')).map((m) => [m.callId, m.state])).toEqual([
      ['run-next/t1/k0', 'committed'],
      ['run-next/t1/k1', 'committed'],
    ]);
  });
});
