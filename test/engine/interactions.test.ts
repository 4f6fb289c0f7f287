/**
 * Interactions: a tool may park its call until a human answers. The run waits (not suspended),
 * an answer continues it, and every interaction id is used once per run.
 */
import { describe, expect, it } from 'vitest';
import { type Message } from '../../src/engine/index.js';
import { decodeSnapshot, type ToolResultPart } from '../../src/snapshot/index.js';
import {
  addTool,
  allEvents,
  askTool,
  call,
  eventTypes,
  expectCode,
  localApp,
  makeTool,
  openTestEngine,
  scriptedAgent,
  STORE_KINDS,
} from './engine-support.js';

const results = (messages: Message[]): ToolResultPart[] =>
  messages.filter((m) => m.role === 'tool').map((m) => m.parts[0] as ToolResultPart);

/** Asks b-2, then a-1, then b-2 again, then answers. */
const askingScript = [
  { text: 'asking', toolCalls: [call('ask', { id: 'b-2', prompt: 'first question?' })] },
  { text: 'asking again', toolCalls: [call('ask', { id: 'a-1', prompt: 'second question?' })] },
  { text: 'asking a used id', toolCalls: [call('ask', { id: 'b-2', prompt: 'first question, again?' })] },
  { text: 'done' },
];

describe.each(STORE_KINDS)('interactions (%s store)', (kind) => {
  it('a tool requesting an interaction makes the run wait for it, active and undriven', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));

    const view = await engine.start(scriptedAgent(askingScript), { runId: 'run-i' });

    expect(view).toMatchObject({
      status: 'active',
      completed_turns: 0,
      waiting_for: { kind: 'interaction', interaction_id: 'b-2', prompt: 'first question?' },
    });
    expect(results(await engine.messages('run-i'))).toEqual([
      {
        type: 'tool_result',
        callId: 'run-i/t1/k0',
        toolName: 'ask',
        status: 'interaction_pending',
        resultJson: '{"interaction_id":"b-2","prompt":"first question?"}',
      },
    ]);
    const events = await allEvents(engine, 'run-i');
    expect(events.slice(-2)).toMatchObject([
      { type: 'ToolCalled', data: { call_id: 'run-i/t1/k0' } },
      {
        type: 'InteractionRequested',
        data: { interaction_id: 'b-2', call_id: 'run-i/t1/k0', prompt: 'first question?' },
      },
    ]);
    // Resuming a waiting run changes nothing: it still waits for the answer.
    expect(await engine.resume('run-i')).toEqual(view);
  });

  it('an answer becomes the call result and the run continues', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));
    await engine.start(scriptedAgent(askingScript), { runId: 'run-a' });

    const view = await engine.answer('run-a', 'b-2', 'yes');

    expect(view).toMatchObject({
      status: 'active',
      completed_turns: 1,
      waiting_for: { kind: 'interaction', interaction_id: 'a-1' },
    });
    expect(results(await engine.messages('run-a'))[0]).toEqual({
      type: 'tool_result',
      callId: 'run-a/t1/k0',
      toolName: 'ask',
      status: 'ok',
      resultJson: '{"answer":"yes"}',
    });
    expect(await eventTypes(engine, 'run-a')).toEqual([
      'RunStarted',
      'TurnStarted',
      'ModelResponded',
      'ToolCalled',
      'InteractionRequested',
      'InteractionAnswered',
      'ToolResulted',
      'TurnCompleted',
      'TurnStarted',
      'ModelResponded',
      'ToolCalled',
      'InteractionRequested',
    ]);
  });

  it('answering an interaction that was already answered is refused with interaction_id_reused', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));
    await engine.start(scriptedAgent(askingScript), { runId: 'run-twice' });
    const waiting = await engine.answer('run-twice', 'b-2', 'yes');

    await expectCode(engine.answer('run-twice', 'b-2', 'yes again'), 'interaction_id_reused');
    expect(await engine.show('run-twice')).toEqual(waiting);
  });

  it('answering an id the run is not waiting for is refused with interaction_not_pending', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));
    const waiting = await engine.start(scriptedAgent(askingScript), { runId: 'run-wrong' });

    await expectCode(engine.answer('run-wrong', 'a-1', 'not asked yet'), 'interaction_not_pending');
    await expectCode(engine.answer('run-wrong', 'zzz', 'never asked'), 'interaction_not_pending');
    expect(await engine.show('run-wrong')).toEqual(waiting);
  });

  it('a later tool requesting an already-used interaction id gets an interaction_id_reused error result instead of waiting', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));
    await engine.start(scriptedAgent(askingScript), { runId: 'run-reuse' });
    await engine.answer('run-reuse', 'b-2', 'yes');

    const view = await engine.answer('run-reuse', 'a-1', 'sure');

    expect(view).toMatchObject({ status: 'completed', completed_turns: 4, waiting_for: null });
    const third = results(await engine.messages('run-reuse'))[2]!;
    expect(third).toMatchObject({ callId: 'run-reuse/t3/k0', status: 'error' });
    expect(JSON.parse(third.resultJson)).toMatchObject({ error: 'interaction_id_reused' });
    expect((await eventTypes(engine, 'run-reuse')).filter((t) => t === 'InteractionRequested')).toHaveLength(2);
  });

  it('used interaction ids are sorted in the exported snapshot', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));
    await engine.start(scriptedAgent(askingScript), { runId: 'run-sorted' });
    await engine.answer('run-sorted', 'b-2', 'yes');
    await engine.answer('run-sorted', 'a-1', 'sure');

    const snapshot = await engine.exportSnapshot('run-sorted');

    expect(snapshot.state.usedInteractionIds).toEqual(['a-1', 'b-2']);
    expect(decodeSnapshot(snapshot.bytes).usedInteractionIds).toEqual(['a-1', 'b-2']);
  });

  it('a run waiting for an interaction cannot be exported and cannot be suspended before the answer', async () => {
    const engine = openTestEngine(kind, localApp([askTool()]));
    await engine.start(scriptedAgent(askingScript), { runId: 'run-ws' });

    await expectCode(engine.exportSnapshot('run-ws'), 'export_run_active');
    const requested = await engine.suspend('run-ws');
    expect(requested).toMatchObject({
      status: 'active',
      suspend_requested: true,
      waiting_for: { kind: 'interaction', interaction_id: 'b-2' },
    });

    // The request takes effect at the boundary the answer completes.
    const view = await engine.answer('run-ws', 'b-2', 'yes');
    expect(view).toMatchObject({ status: 'suspended', completed_turns: 1, suspend_requested: false });
    expect(decodeSnapshot((await engine.exportSnapshot('run-ws')).bytes)).toMatchObject({
      lifecycle: 'suspended',
      usedInteractionIds: ['b-2'],
    });
  });

  it('the calls after an answered one in the same turn run after the answer', async () => {
    const engine = openTestEngine(kind, localApp([askTool(), addTool()]));
    const agent = scriptedAgent([
      { toolCalls: [call('ask', { id: 'q', prompt: 'add?' }), call('add', { a: 1, b: 2 })] },
      { text: 'done' },
    ]);
    await engine.start(agent, { runId: 'run-after' });
    expect(results(await engine.messages('run-after'))).toHaveLength(1);

    const view = await engine.answer('run-after', 'q', 'go');

    expect(results(await engine.messages('run-after')).map((r) => [r.callId, r.status, r.resultJson])).toEqual([
      ['run-after/t1/k0', 'ok', '{"answer":"go"}'],
      ['run-after/t1/k1', 'ok', '{"sum":3}'],
    ]);
    expect(view.status).toBe('completed');
  });

  it('a mutating tool that asks for an interaction has already run: its call is uncertain, not a failure', async () => {
    const mutatingAsk = makeTool('mask', (_args, ctx) => ctx.requestInteraction('m-1', 'confirm?'), { mutating: true });
    const engine = openTestEngine(kind, localApp([mutatingAsk]));

    const view = await engine.start(scriptedAgent([{ toolCalls: [call('mask', {})] }, { text: 'done' }]), {
      runId: 'run-mask',
    });

    expect(view).toMatchObject({ status: 'active', waiting_for: { kind: 'resolution', call_ids: ['run-mask/t1/k0'] } });
    const [result] = results(await engine.messages('run-mask'));
    expect(result!.status).toBe('mutation_uncertain');
    expect(JSON.parse(result!.resultJson)).toMatchObject({ error: 'interaction_from_mutating_tool' });
    expect(await engine.mutations('run-mask')).toMatchObject([{ callId: 'run-mask/t1/k0', state: 'uncertain' }]);
  });
});
