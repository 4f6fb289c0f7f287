/**
 * Engine behaviour: the turn loop, the message history and its ids, suspension at turn boundaries,
 * resume, export and cancel — through the typed API, on both run stores (in-memory and SQLite).
 * Races are driven with latches. Interactions and mutating tools are in interactions.test.ts and
 * mutations.test.ts; definitions, applications and identities in definitions.test.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { rejected } from '../../src/core/errors.js';
import {
  builtinApplication,
  convenienceApplication,
  defineAgent,
  parseAgentDefinition,
  type Message,
  type ModelProvider,
} from '../../src/engine/index.js';
import { decodeSnapshot, type ToolCallPart, type ToolResultPart } from '../../src/snapshot/index.js';
import {
  addTool,
  allEvents,
  askTool,
  call,
  eventTypes,
  expectCode,
  latch,
  localApp,
  makeTool,
  newTestAuthority,
  openTestEngine,
  PLAN,
  privateDir,
  scriptedAgent,
  STORE_KINDS,
} from './engine-support.js';

const toolResults = (messages: Message[]): ToolResultPart[] =>
  messages.filter((m) => m.role === 'tool').map((m) => m.parts[0] as ToolResultPart);
const toolCalls = (messages: Message[]): ToolCallPart[] =>
  messages.flatMap((m) => m.parts.filter((p): p is ToolCallPart => p.type === 'tool_call'));

/** A provider that reacts to the last message it is shown: a bad call first, a fix after an error result, then the answer. */
const reactiveProvider = (): ModelProvider => ({
  name: 'reactive',
  async generate(request) {
    const last = request.messages[request.messages.length - 1]!;
    if (last.role === 'user')
      return { text: 'adding', toolCalls: [{ toolName: 'add', arguments: { a: 'one', b: 2 } }] };
    const result = last.parts[0] as ToolResultPart;
    if (result.status === 'error')
      return {
        text: `retrying after ${(JSON.parse(result.resultJson) as { error: string }).error}`,
        toolCalls: [{ toolName: 'add', arguments: { a: 1, b: 2 } }],
      };
    return { text: `the sum is ${(JSON.parse(result.resultJson) as { sum: number }).sum}`, toolCalls: [] };
  },
});

const reactiveAgent = (provider: string) =>
  defineAgent({
    id: 'test.reactive',
    version: '1.0.0',
    model: { provider, modelId: 'm1' },
    turnLimit: 5,
    toolPlan: PLAN,
  });

/** Four turns of tool calls, then an answer. */
const fourTurnScript = [
  { text: 'one', toolCalls: [call('add', { a: 1, b: 1 })] },
  { text: 'two', toolCalls: [call('add', { a: 2, b: 2 })] },
  { text: 'three', toolCalls: [call('add', { a: 3, b: 3 })] },
  { text: 'four', toolCalls: [call('add', { a: 4, b: 4 })] },
  { text: 'done' },
];

describe.each(STORE_KINDS)('turn loop (%s store)', (kind) => {
  it('a two-turn run commits exactly RunStarted, TurnStarted, ModelResponded, ToolCalled, ToolResulted, TurnCompleted, TurnStarted, ModelResponded, TurnCompleted, Completed with sequences 1..N', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const agent = scriptedAgent([{ text: 'adding', toolCalls: [call('add', { a: 1, b: 2 })] }, { text: 'it is 3' }]);

    const view = await engine.start(agent, { input: 'add 1 and 2', runId: 'run-two' });

    const events = await allEvents(engine, 'run-two');
    expect(events.map((e) => e.type)).toEqual([
      'RunStarted',
      'TurnStarted',
      'ModelResponded',
      'ToolCalled',
      'ToolResulted',
      'TurnCompleted',
      'TurnStarted',
      'ModelResponded',
      'TurnCompleted',
      'Completed',
    ]);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(view).toMatchObject({
      status: 'completed',
      completed_turns: 2,
      last_sequence: events.length,
      waiting_for: null,
      failure: null,
    });
  });

  it('tool results are fed back to the model and a final answer completes the run', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const agent = scriptedAgent([{ text: 'adding', toolCalls: [call('add', { a: 20, b: 22 })] }, { text: 'it is 42' }]);

    const view = await engine.start(agent, { input: 'add', runId: 'run-final' });

    const messages = await engine.messages('run-final');
    expect(toolResults(messages)).toEqual([
      { type: 'tool_result', callId: 'run-final/t1/k0', toolName: 'add', status: 'ok', resultJson: '{"sum":42}' },
    ]);
    expect(messages[messages.length - 1]).toEqual({
      id: 'run-final/t2/m0',
      role: 'assistant',
      parts: [{ type: 'text', text: 'it is 42' }],
    });
    expect(view.status).toBe('completed');
  });

  it('arguments that fail the JSON Schema become an error result the model sees, the tool does not run, and the run continues', async () => {
    let executions = 0;
    const add = makeTool('add', (args) => (executions++, { sum: (args.a as number) + (args.b as number) }), {
      inputSchema: addTool().definition.inputSchema,
    });
    const engine = openTestEngine(
      kind,
      convenienceApplication({ providers: [reactiveProvider()], toolPlans: [{ id: PLAN, tools: [add] }] }),
    );

    const view = await engine.start(reactiveAgent('reactive'), { input: 'add 1 and 2', runId: 'run-invalid' });

    const messages = await engine.messages('run-invalid');
    const [first, second] = toolResults(messages);
    expect(first!.status).toBe('error');
    expect(JSON.parse(first!.resultJson)).toMatchObject({ error: 'tool_arguments_invalid' });
    expect(second).toMatchObject({ status: 'ok', resultJson: '{"sum":3}' });
    // The model's second turn reacted to the error result it was shown.
    expect(messages.filter((m) => m.role === 'assistant').map((m) => (m.parts[0] as { text: string }).text)).toEqual([
      'adding',
      'retrying after tool_arguments_invalid',
      'the sum is 3',
    ]);
    expect(executions).toBe(1);
    expect(view).toMatchObject({ status: 'completed', completed_turns: 3 });
  });

  it('arguments that are not JSON never reach the tool: they become an error result and the run continues', async () => {
    let executions = 0;
    const echo = makeTool('echo', (args) => (executions++, args), { inputSchema: { type: 'object' } });
    const provider: ModelProvider = {
      name: 'nan',
      async generate(request) {
        return request.turn === 1
          ? { text: 'echo', toolCalls: [{ toolName: 'echo', arguments: { x: Number.NaN } as never }] }
          : { text: 'done', toolCalls: [] };
      },
    };
    const engine = openTestEngine(
      kind,
      convenienceApplication({ providers: [provider], toolPlans: [{ id: PLAN, tools: [echo] }] }),
    );

    const view = await engine.start(reactiveAgent('nan'), { runId: 'run-nan' });

    const [result] = toolResults(await engine.messages('run-nan'));
    expect(result!.status).toBe('error');
    expect(JSON.parse(result!.resultJson)).toMatchObject({ error: 'tool_arguments_invalid' });
    expect(executions).toBe(0);
    expect(view.status).toBe('completed');
  });

  it('arguments that are not a JSON object are refused with tool_arguments_invalid even when the schema would accept them', async () => {
    let executions = 0;
    const loose = makeTool('loose', (args) => (executions++, args), { inputSchema: {} });
    const engine = openTestEngine(kind, localApp([loose]));

    const view = await engine.start(
      scriptedAgent([
        { toolCalls: [call('loose', 'just text'), call('loose', [1, 2]), call('loose', { ok: true })] },
        { text: 'done' },
      ]),
      {
        runId: 'run-obj',
      },
    );

    const results = toolResults(await engine.messages('run-obj'));
    expect(results.map((r) => r.status)).toEqual(['error', 'error', 'ok']);
    expect(JSON.parse(results[0]!.resultJson)).toMatchObject({ error: 'tool_arguments_invalid' });
    expect(executions).toBe(1);
    expect(view.status).toBe('completed');
  });

  it('a call to a tool outside the plan becomes a tool_unknown error result and the run continues', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const agent = scriptedAgent([{ toolCalls: [call('delete_everything', {})] }, { text: 'ok' }]);

    const view = await engine.start(agent, { runId: 'run-unknown-tool' });

    const [result] = toolResults(await engine.messages('run-unknown-tool'));
    expect(result!.status).toBe('error');
    expect(JSON.parse(result!.resultJson)).toMatchObject({ error: 'tool_unknown' });
    expect(view.status).toBe('completed');
  });

  it('a non-mutating tool that throws becomes an error result and the run continues', async () => {
    const flaky = makeTool('flaky', () => {
      throw new Error('disk full\nstack detail');
    });
    const engine = openTestEngine(kind, localApp([flaky]));

    const view = await engine.start(scriptedAgent([{ toolCalls: [call('flaky', {})] }, { text: 'ok' }]), {
      runId: 'run-throws',
    });

    const [result] = toolResults(await engine.messages('run-throws'));
    expect(result).toMatchObject({ status: 'error', resultJson: '{"error":"tool_failed","message":"disk full"}' });
    expect(view.status).toBe('completed');
  });

  it('the turn limit fails the run with failure code turn_limit_reached', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const agent = scriptedAgent(fourTurnScript, { turnLimit: 2 });

    const view = await engine.start(agent, { runId: 'run-limit' });

    expect(view).toMatchObject({ status: 'failed', completed_turns: 2, failure: { code: 'turn_limit_reached' } });
    const events = await allEvents(engine, 'run-limit');
    expect(events[events.length - 1]).toMatchObject({
      type: 'Failed',
      data: { code: 'turn_limit_reached', completed_turns: 2 },
    });
    expect(events.filter((e) => e.type === 'TurnStarted')).toHaveLength(2);
  });

  it('a final answer on the last allowed turn completes the run rather than failing it', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const agent = scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 1 })] }, { text: 'done' }], { turnLimit: 2 });

    expect((await engine.start(agent, { runId: 'run-last-turn' })).status).toBe('completed');
  });

  it('a model error that is not a LoopxError fails the run with code model_failed', async () => {
    const provider: ModelProvider = {
      name: 'broken',
      async generate() {
        throw new Error('upstream 503');
      },
    };
    const engine = openTestEngine(
      kind,
      convenienceApplication({ providers: [provider], toolPlans: [{ id: PLAN, tools: [] }] }),
    );

    const view = await engine.start(reactiveAgent('broken'), { runId: 'run-model-error' });

    expect(view).toMatchObject({ status: 'failed', completed_turns: 0, failure: { code: 'model_failed' } });
    expect(view.failure!.message).toContain('upstream 503');
    expect(await eventTypes(engine, 'run-model-error')).toEqual(['RunStarted', 'TurnStarted', 'Failed']);
  });

  it('a model error with a code fails the run with that code', async () => {
    const provider: ModelProvider = {
      name: 'limited',
      async generate() {
        throw rejected('rate_limited', 'Too many requests.');
      },
    };
    const engine = openTestEngine(
      kind,
      convenienceApplication({ providers: [provider], toolPlans: [{ id: PLAN, tools: [] }] }),
    );

    const view = await engine.start(reactiveAgent('limited'), { runId: 'run-rate' });

    expect(view).toMatchObject({ status: 'failed', failure: { code: 'rate_limited' } });
    const events = await allEvents(engine, 'run-rate');
    expect(events[events.length - 1]).toMatchObject({ type: 'Failed', data: { code: 'rate_limited', turn: 1 } });
  });

  it('an exhausted script fails the run with code script_exhausted, never with an invented answer', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));

    const view = await engine.start(scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 1 })] }]), {
      runId: 'run-exhausted',
    });

    expect(view).toMatchObject({ status: 'failed', completed_turns: 1, failure: { code: 'script_exhausted' } });
    expect((await engine.messages('run-exhausted')).filter((m) => m.role === 'assistant')).toHaveLength(1);
  });

  it('a run id that exists is refused with run_exists', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const agent = scriptedAgent([{ text: 'done' }]);
    await engine.start(agent, { runId: 'run-dup' });

    await expectCode(engine.start(agent, { runId: 'run-dup' }), 'run_exists');
    expect(await eventTypes(engine, 'run-dup')).toEqual([
      'RunStarted',
      'TurnStarted',
      'ModelResponded',
      'TurnCompleted',
      'Completed',
    ]);
  });

  it('a malformed run id is refused with run_id_invalid', async () => {
    const engine = openTestEngine(kind, localApp([]));
    await expectCode(engine.start(scriptedAgent([{ text: 'x' }]), { runId: '../escape' }), 'run_id_invalid');
  });

  it('an unknown run is run_not_found', async () => {
    const engine = openTestEngine(kind, localApp([]));
    await expectCode(engine.show('run-nope'), 'run_not_found');
    await expectCode(engine.resume('run-nope'), 'run_not_found');
  });
});

describe.each(STORE_KINDS)('message history (%s store)', (kind) => {
  const script = [
    { text: 'two sums', toolCalls: [call('add', { a: 1, b: 2 }), call('add', { a: 3, b: 4 })] },
    { toolCalls: [call('add', { a: 5, b: 6 })] },
    { text: 'done' },
  ];

  it('holds system, user, assistant and tool messages in order, each tool result matched to its call id and tool', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent(script, { system: 'be brief' }), { input: 'sum things', runId: 'run-h' });

    const messages = await engine.messages('run-h');
    expect(messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(messages.map((m) => m.id)).toEqual([
      'run-h/t0/m0',
      'run-h/t0/m1',
      'run-h/t1/m0',
      'run-h/t1/m1',
      'run-h/t1/m2',
      'run-h/t2/m0',
      'run-h/t2/m1',
      'run-h/t3/m0',
    ]);
    const calls = toolCalls(messages);
    expect(calls.map((c) => c.callId)).toEqual(['run-h/t1/k0', 'run-h/t1/k1', 'run-h/t2/k0']);
    expect(toolResults(messages).map((r) => [r.callId, r.toolName, r.resultJson])).toEqual([
      ['run-h/t1/k0', 'add', '{"sum":3}'],
      ['run-h/t1/k1', 'add', '{"sum":7}'],
      ['run-h/t2/k0', 'add', '{"sum":11}'],
    ]);
    // Each tool message directly follows its assistant message, in call order.
    expect(messages[3]!.parts[0]).toMatchObject({ callId: (messages[2]!.parts[1] as ToolCallPart).callId });
    expect(messages[4]!.parts[0]).toMatchObject({ callId: (messages[2]!.parts[2] as ToolCallPart).callId });
  });

  it('message, model-call and tool-call ids derive from (run id, turn, index) and are never reused across suspend and resume', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent(script, { system: 'be brief' }), {
      input: 'sum things',
      runId: 'run-ids',
      suspendAfterTurns: 1,
    });
    await engine.resume('run-ids', { turns: 1 });
    expect((await engine.show('run-ids')).status).toBe('suspended');
    await engine.resume('run-ids');
    expect((await engine.show('run-ids')).status).toBe('completed');

    const messages = await engine.messages('run-ids');
    const messageIds = messages.map((m) => m.id);
    const callIds = toolCalls(messages).map((c) => c.callId);
    const modelCallIds = (await allEvents(engine, 'run-ids'))
      .filter((e) => e.type === 'ModelResponded')
      .map((e) => e.data.model_call_id);
    expect(new Set(messageIds).size).toBe(messageIds.length);
    expect(new Set(callIds).size).toBe(callIds.length);
    expect(modelCallIds).toEqual(['run-ids/t1/c0', 'run-ids/t2/c0', 'run-ids/t3/c0']);

    // The interrupted run's history is exactly the uninterrupted one's (run elsewhere, under its own authority).
    const straight = openTestEngine(kind, localApp([addTool()]), undefined, newTestAuthority());
    await straight.start(scriptedAgent(script, { system: 'be brief' }), { input: 'sum things', runId: 'run-ids' });
    expect(messages).toEqual(await straight.messages('run-ids'));
  });
});

describe.each(STORE_KINDS)('suspend and resume (%s store)', (kind) => {
  it('--suspend-after-turns suspends exactly at that turn boundary', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));

    const view = await engine.start(scriptedAgent(fourTurnScript), { runId: 'run-s2', suspendAfterTurns: 2 });

    expect(view).toMatchObject({ status: 'suspended', completed_turns: 2, suspend_requested: false });
    const types = await eventTypes(engine, 'run-s2');
    expect(types.slice(-2)).toEqual(['TurnCompleted', 'Suspended']);
    expect(types.filter((t) => t === 'TurnStarted')).toHaveLength(2);
    expect((await engine.messages('run-s2')).filter((m) => m.role === 'assistant')).toHaveLength(2);
  });

  it('--suspend-after-turns 0 suspends before the first turn', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));

    const view = await engine.start(scriptedAgent(fourTurnScript), { runId: 'run-s0', suspendAfterTurns: 0 });

    expect(view).toMatchObject({ status: 'suspended', completed_turns: 0 });
    expect(await eventTypes(engine, 'run-s0')).toEqual(['RunStarted', 'Suspended']);
  });

  it('a negative or fractional --suspend-after-turns is refused with suspend_after_turns_invalid', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await expectCode(
      engine.start(scriptedAgent(fourTurnScript), { suspendAfterTurns: -1 }),
      'suspend_after_turns_invalid',
    );
    await expectCode(
      engine.start(scriptedAgent(fourTurnScript), { suspendAfterTurns: 1.5 }),
      'suspend_after_turns_invalid',
    );
    expect(await engine.list()).toEqual([]);
  });

  it('a suspend requested while a turn is in progress takes effect when that turn completes, not before', async () => {
    const entered = latch();
    const gate = latch();
    const order: string[] = [];
    const block = makeTool('block', async () => {
      entered.open();
      await gate.wait();
      order.push('block');
      return 'released';
    });
    const add = makeTool('add', (args) => (order.push('add'), { sum: (args.a as number) + (args.b as number) }), {
      inputSchema: addTool().definition.inputSchema,
    });
    const engine = openTestEngine(kind, localApp([block, add]));
    const agent = scriptedAgent([
      { toolCalls: [call('block', {}), call('add', { a: 1, b: 1 })] },
      { text: 'never reached before resume' },
    ]);

    const running = engine.start(agent, { runId: 'run-mid' });
    await entered.wait();
    const requested = await engine.suspend('run-mid');

    // Requested, not yet taken: the turn is still running.
    expect(requested).toMatchObject({ status: 'active', suspend_requested: true, completed_turns: 0 });
    expect((await engine.show('run-mid')).status).toBe('active');
    expect(order).toEqual([]);

    gate.open();
    const view = await running;

    // The rest of the turn ran (the second call too), then the run suspended at the boundary.
    expect(order).toEqual(['block', 'add']);
    expect(view).toMatchObject({ status: 'suspended', completed_turns: 1, suspend_requested: false });
    expect(await eventTypes(engine, 'run-mid')).toEqual([
      'RunStarted',
      'TurnStarted',
      'ModelResponded',
      'ToolCalled',
      'ToolResulted',
      'ToolCalled',
      'ToolResulted',
      'TurnCompleted',
      'Suspended',
    ]);
  });

  it('a second driver of a run being driven gets run_busy and changes nothing', async () => {
    const entered = latch();
    const gate = latch();
    const block = makeTool('block', async () => {
      entered.open();
      await gate.wait();
      return null;
    });
    const engine = openTestEngine(kind, localApp([block]));

    const running = engine.start(scriptedAgent([{ toolCalls: [call('block', {})] }, { text: 'done' }]), {
      runId: 'run-busy',
    });
    await entered.wait();
    const before = (await engine.show('run-busy')).last_sequence;
    await expectCode(engine.resume('run-busy'), 'run_busy');
    await expectCode(engine.cancel('run-busy'), 'run_busy');
    await expectCode(engine.answer('run-busy', 'x', 'y'), 'run_busy');
    expect((await engine.show('run-busy')).last_sequence).toBe(before);

    gate.open();
    expect((await running).status).toBe('completed');
  });

  it('suspending a suspended run is a no-op; suspending a finished run is run_terminal', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const suspended = await engine.start(scriptedAgent(fourTurnScript), { runId: 'run-ss', suspendAfterTurns: 1 });

    expect(await engine.suspend('run-ss')).toEqual(suspended);

    await engine.start(scriptedAgent([{ text: 'done' }], { id: 'test.done' }), { runId: 'run-done' });
    await expectCode(engine.suspend('run-done'), 'run_terminal');
  });

  it('resume continues at last_sequence+1 with a Resumed event and no second RunStarted', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const suspended = await engine.start(scriptedAgent(fourTurnScript), { runId: 'run-r', suspendAfterTurns: 2 });

    const view = await engine.resume('run-r');

    const events = await allEvents(engine, 'run-r');
    const tail = events.filter((e) => e.sequence > suspended.last_sequence);
    expect(tail[0]).toMatchObject({
      type: 'Resumed',
      sequence: suspended.last_sequence + 1,
      data: { completed_turns: 2 },
    });
    expect(tail[1]).toMatchObject({ type: 'TurnStarted', sequence: suspended.last_sequence + 2, data: { turn: 3 } });
    expect(events.filter((e) => e.type === 'RunStarted')).toHaveLength(1);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(view).toMatchObject({ status: 'completed', completed_turns: 5, last_sequence: events.length });
  });

  it('resume --turns N suspends again after N more turns', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent(fourTurnScript), { runId: 'run-rt', suspendAfterTurns: 1 });

    expect(await engine.resume('run-rt', { turns: 2 })).toMatchObject({ status: 'suspended', completed_turns: 3 });
    expect(await engine.resume('run-rt', { turns: 1 })).toMatchObject({ status: 'suspended', completed_turns: 4 });
    expect(await engine.resume('run-rt', { turns: 3 })).toMatchObject({ status: 'completed', completed_turns: 5 });
    expect((await eventTypes(engine, 'run-rt')).filter((t) => t === 'Suspended')).toHaveLength(3);
  });

  it('resume --turns below 1 is refused with turns_invalid and the run stays suspended', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const suspended = await engine.start(scriptedAgent(fourTurnScript), { runId: 'run-rt0', suspendAfterTurns: 1 });

    await expectCode(engine.resume('run-rt0', { turns: 0 }), 'turns_invalid');
    expect(await engine.show('run-rt0')).toEqual(suspended);
  });

  it.each([
    { status: 'completed', script: [{ text: 'done' }], turnLimit: 10, cancel: false },
    { status: 'failed', script: fourTurnScript, turnLimit: 1, cancel: false },
    { status: 'cancelled', script: fourTurnScript, turnLimit: 10, cancel: true },
  ])('resuming a $status run is refused with run_terminal', async ({ status, script, turnLimit, cancel }) => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent(script, { turnLimit }), {
      runId: 'run-t',
      ...(cancel ? { suspendAfterTurns: 1 } : {}),
    });
    if (cancel) await engine.cancel('run-t');
    const before = await engine.show('run-t');
    expect(before.status).toBe(status);

    await expectCode(engine.resume('run-t'), 'run_terminal');
    expect(await engine.show('run-t')).toEqual(before);
  });
});

describe.each(STORE_KINDS)('export (%s store)', (kind) => {
  it('an active run is not exported: export_run_active', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));
    const view = await engine.start(
      scriptedAgent([{ toolCalls: [call('ask', { id: 'q1', prompt: 'ok?' })] }, { text: 'done' }]),
      { runId: 'run-active' },
    );
    expect(view.status).toBe('active');

    await expectCode(engine.exportSnapshot('run-active'), 'export_run_active');
  });

  it('the same run state exported twice is byte-identical, and decodes to the exported state', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const view = await engine.start(scriptedAgent(fourTurnScript, { system: 'sys' }), {
      input: 'go',
      runId: 'run-x2',
      suspendAfterTurns: 2,
    });

    const a = await engine.exportSnapshot('run-x2');
    const b = await engine.exportSnapshot('run-x2');

    expect(Buffer.from(b.bytes).equals(Buffer.from(a.bytes))).toBe(true);
    expect(b.sha256).toBe(a.sha256);
    const decoded = decodeSnapshot(a.bytes);
    expect(decoded).toEqual(a.state);
    expect(decoded).toMatchObject({
      runId: 'run-x2',
      lifecycle: 'suspended',
      completedTurns: 2,
      lastSequence: view.last_sequence,
      turnLimit: 10,
    });
    expect(decoded.messages).toEqual(await engine.messages('run-x2'));
  });

  it('a completed run exports and decodes with lifecycle completed', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    const view = await engine.start(scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 2 })] }, { text: '3' }]), {
      runId: 'run-xc',
    });

    const decoded = decodeSnapshot((await engine.exportSnapshot('run-xc')).bytes);

    expect(decoded).toMatchObject({ lifecycle: 'completed', completedTurns: 2, lastSequence: view.last_sequence });
  });

  it('a failed run exports and decodes with lifecycle failed', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent(fourTurnScript, { turnLimit: 2 }), { runId: 'run-xf' });

    expect(decodeSnapshot((await engine.exportSnapshot('run-xf')).bytes)).toMatchObject({
      lifecycle: 'failed',
      completedTurns: 2,
    });
  });

  it('a run that failed in its model call mid-turn still exports a valid snapshot', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 2 })] }]), { runId: 'run-xm' });

    expect(decodeSnapshot((await engine.exportSnapshot('run-xm')).bytes)).toMatchObject({
      lifecycle: 'failed',
      completedTurns: 1,
    });
  });
});

describe('export across stores', () => {
  const researcher = (): ReturnType<typeof parseAgentDefinition> =>
    parseAgentDefinition(
      JSON.parse(readFileSync(new URL('../../examples/agents/researcher.json', import.meta.url), 'utf8')),
    );

  it('the memory store and the SQLite store give byte-identical snapshots of the same scripted run, suspended and completed', async () => {
    const root = privateDir();
    // Two separate worlds running the same run id: each with its own run authority.
    const sqlite = openTestEngine('sqlite', builtinApplication(root), root, newTestAuthority());
    const memory = openTestEngine('memory', builtinApplication(privateDir()), undefined, newTestAuthority());

    const snapshots = await Promise.all(
      [memory, sqlite].map(async (engine) => {
        await engine.start(researcher(), {
          input: 'Add 2 and 40, then record the answer.',
          runId: 'run-same',
          suspendAfterTurns: 2,
        });
        const suspended = await engine.exportSnapshot('run-same');
        const waiting = await engine.resume('run-same');
        expect(waiting.waiting_for).toMatchObject({ kind: 'interaction', interaction_id: 'confirm-1' });
        const done = await engine.answer('run-same', 'confirm-1', 'yes');
        expect(done.status).toBe('completed');
        return { suspended, completed: await engine.exportSnapshot('run-same') };
      }),
    );

    const [m, s] = snapshots as [(typeof snapshots)[number], (typeof snapshots)[number]];
    expect(Buffer.from(s.suspended.bytes).equals(Buffer.from(m.suspended.bytes))).toBe(true);
    expect(Buffer.from(s.completed.bytes).equals(Buffer.from(m.completed.bytes))).toBe(true);
    expect(s.completed.sha256).toBe(m.completed.sha256);
    expect(decodeSnapshot(s.completed.bytes)).toMatchObject({
      lifecycle: 'completed',
      usedInteractionIds: ['confirm-1'],
      completedTurns: 4,
    });
  });

  it('a suspended SQLite run survives closing and reopening its root, and resumes where it stopped', async () => {
    const root = privateDir();
    const first = openTestEngine('sqlite', builtinApplication(root), root);
    const suspended = await first.start(researcher(), { input: 'go', runId: 'run-reopen', suspendAfterTurns: 1 });
    const before = await first.exportSnapshot('run-reopen');
    first.close();

    const second = openTestEngine('sqlite', builtinApplication(root), root);
    expect(await second.show('run-reopen')).toEqual(suspended);
    expect(Buffer.from((await second.exportSnapshot('run-reopen')).bytes).equals(Buffer.from(before.bytes))).toBe(true);
    expect(await second.resume('run-reopen', { turns: 1 })).toMatchObject({ status: 'suspended', completed_turns: 2 });
  });
});

describe.each(STORE_KINDS)('cancel (%s store)', (kind) => {
  it('cancelled is terminal: resume, suspend and cancel are refused with run_terminal', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent(fourTurnScript), { runId: 'run-c', suspendAfterTurns: 1 });

    const view = await engine.cancel('run-c');

    expect(view).toMatchObject({ status: 'cancelled', completed_turns: 1, suspend_requested: false });
    const events = await allEvents(engine, 'run-c');
    expect(events[events.length - 1]).toMatchObject({ type: 'Cancelled', data: { completed_turns: 1 } });
    await expectCode(engine.resume('run-c'), 'run_terminal');
    await expectCode(engine.suspend('run-c'), 'run_terminal');
    await expectCode(engine.cancel('run-c'), 'run_terminal');
    expect(await engine.show('run-c')).toEqual(view);
    expect(decodeSnapshot((await engine.exportSnapshot('run-c')).bytes).lifecycle).toBe('cancelled');
  });

  it('cancelling a run mid-turn settles every open tool call of that turn so the snapshot still validates', async () => {
    const engine = openTestEngine(kind, localApp([addTool(), askTool()]));
    const agent = scriptedAgent([
      {
        toolCalls: [
          call('add', { a: 1, b: 1 }),
          call('ask', { id: 'q1', prompt: 'go on?' }),
          call('add', { a: 2, b: 2 }),
        ],
      },
      { text: 'done' },
    ]);
    const waiting = await engine.start(agent, { runId: 'run-cm' });
    expect(waiting.waiting_for).toMatchObject({ kind: 'interaction', interaction_id: 'q1' });

    const view = await engine.cancel('run-cm');

    expect(view).toMatchObject({ status: 'cancelled', waiting_for: null, completed_turns: 0 });
    const results = toolResults(await engine.messages('run-cm'));
    expect(results.map((r) => [r.callId, r.status])).toEqual([
      ['run-cm/t1/k0', 'ok'],
      ['run-cm/t1/k1', 'error'],
      ['run-cm/t1/k2', 'error'],
    ]);
    expect(JSON.parse(results[1]!.resultJson)).toMatchObject({ error: 'run_cancelled' });
    const decoded = decodeSnapshot((await engine.exportSnapshot('run-cm')).bytes);
    expect(decoded).toMatchObject({ lifecycle: 'cancelled', completedTurns: 0 });
    expect(decoded.messages).toEqual(await engine.messages('run-cm'));
    expect(decoded.messages).toHaveLength(4);
    await expectCode(engine.answer('run-cm', 'q1', 'too late'), 'interaction_not_pending');
  });
});

describe.each(STORE_KINDS)('review fixes (%s store)', (kind) => {
  it('a tool result that JSON cannot carry is an error result, never an ok one', async () => {
    const odd = makeTool('odd', () => ({ when: new Date(0) }) as never);
    const engine = openTestEngine(kind, localApp([odd]));
    await engine.start(scriptedAgent([{ toolCalls: [call('odd', {})] }, { text: 'ok' }]), { runId: 'run-odd' });
    const [result] = toolResults(await engine.messages('run-odd'));
    expect(result).toMatchObject({ status: 'error' });
    expect(JSON.parse(result!.resultJson)).toMatchObject({ error: 'tool_result_not_json' });
  });

  it('the same definition with reordered argument keys is the same definition (canonical comparison)', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 2 })] }, { text: 'done' }]), {
      runId: 'run-a',
    });
    const view = await engine.start(scriptedAgent([{ toolCalls: [call('add', { b: 2, a: 1 })] }, { text: 'done' }]), {
      runId: 'run-b',
    });
    expect(view.status).toBe('completed');
  });

  it('a refused start (run_exists) records nothing, not even a changed definition', async () => {
    const engine = openTestEngine(kind, localApp([addTool()]));
    await engine.start(scriptedAgent([{ text: 'one' }]), { runId: 'run-x' });
    await expectCode(engine.start(scriptedAgent([{ text: 'two' }]), { runId: 'run-x' }), 'run_exists');
    // The changed definition was not stored: a new run with it under another id still conflicts only with the first.
    await expectCode(engine.start(scriptedAgent([{ text: 'two' }]), { runId: 'run-y' }), 'definition_conflict');
  });

  it('a cancelled run still shows its unresolved mutating call', async () => {
    const boom = makeTool(
      'boom',
      () => {
        throw new Error('connection reset');
      },
      { mutating: true },
    );
    const engine = openTestEngine(kind, localApp([boom]));
    await engine.start(scriptedAgent([{ toolCalls: [call('boom', {})] }, { text: 'done' }]), { runId: 'run-c' });
    const cancelled = await engine.cancel('run-c');
    expect(cancelled).toMatchObject({
      status: 'cancelled',
      waiting_for: { kind: 'resolution', call_ids: ['run-c/t1/k0'] },
    });
  });
});
