/**
 * The mapping between loopx tool names and the names the model APIs accept
 * (src/engine/providers/tool-names.ts), alone and through the AI SDK adapter: every wire name is in
 * `^[a-zA-Z0-9_-]{1,64}$`, distinct names stay distinct, the mapping is a function of the set of
 * names, and a name the model sends back is read through it or refused.
 */
import type { LanguageModelV3FunctionTool, LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { LoopxError } from '../../src/core/errors.js';
import { aiSdkProvider } from '../../src/engine/providers/ai-sdk.js';
import type { ModelRequest } from '../../src/engine/providers/provider.js';
import { toolNameMap, WIRE_TOOL_NAME } from '../../src/engine/providers/tool-names.js';
import type { ToolDefinition } from '../../src/engine/tools.js';
import type { Message } from '../../src/snapshot/index.js';

const LOOPX_NAMES = [
  'todo.list',
  'todo.update',
  'webhook.deliver',
  'math.add',
  'outbox.append',
  'human.ask',
  'docs-server.search',
  'get_weather',
];

const roundTrip = (names: readonly string[]) => {
  const map = toolNameMap(names);
  return names.map((name) => [name, map.toWire(name), map.fromWire(map.toWire(name))] as const);
};

describe('tool names on the wire', () => {
  it("loopx's dotted names go out with _ for the dot, names already valid unchanged, and come back as themselves", () => {
    const map = toolNameMap(LOOPX_NAMES);
    expect(LOOPX_NAMES.map((n) => map.toWire(n))).toEqual([
      'todo_list',
      'todo_update',
      'webhook_deliver',
      'math_add',
      'outbox_append',
      'human_ask',
      'docs-server_search',
      'get_weather',
    ]);
    for (const [name, wire, back] of roundTrip(LOOPX_NAMES)) {
      expect(wire).toMatch(WIRE_TOOL_NAME);
      expect(back).toBe(name);
    }
  });

  it('a name that would collide with a valid one (a.b beside a_b) gets a hash suffix; the valid one keeps itself', () => {
    const map = toolNameMap(['a.b', 'a_b']);
    expect(map.toWire('a_b')).toBe('a_b');
    expect(map.toWire('a.b')).toMatch(/^a_b_[0-9a-f]{8}$/);
    expect(map.fromWire(map.toWire('a.b'))).toBe('a.b');
    expect(map.fromWire('a_b')).toBe('a_b');
  });

  it('two names that replace to the same name (a.b, a:b, a b) all get distinct hash suffixes, whatever their order', () => {
    const names = ['a.b', 'a:b', 'a b'];
    const wires = names.map((n) => toolNameMap(names).toWire(n));
    expect(new Set(wires).size).toBe(3);
    for (const wire of wires) expect(wire).toMatch(/^a_b_[0-9a-f]{8}$/);
    expect(roundTrip(names).every(([name, , back]) => name === back)).toBe(true);
  });

  it('the mapping is a function of the set of names: order and repeats change nothing (a resumed run sends the same names)', () => {
    const shuffled = [...LOOPX_NAMES, 'a.b', 'a_b'].reverse();
    const one = toolNameMap([...LOOPX_NAMES, 'a.b', 'a_b']);
    const other = toolNameMap([...shuffled, ...shuffled]);
    for (const name of shuffled) expect(other.toWire(name)).toBe(one.toWire(name));
  });

  it('a name over 64 characters is cut and given a hash suffix, so two long names sharing a prefix stay distinct', () => {
    const long = (tail: string) => `mcp-server-with-a-long-name.${'tool_'.repeat(10)}${tail}`;
    const map = toolNameMap([long('one'), long('two'), 'x'.repeat(64), 'y'.repeat(65)]);
    const wires = [long('one'), long('two'), 'y'.repeat(65)].map((n) => map.toWire(n));
    for (const wire of wires) {
      expect(wire).toMatch(WIRE_TOOL_NAME);
      expect(wire).toHaveLength(64);
    }
    expect(new Set(wires).size).toBe(3);
    expect(map.toWire('x'.repeat(64))).toBe('x'.repeat(64));
    expect(map.fromWire(map.toWire(long('two')))).toBe(long('two'));
  });

  it('names with nothing valid in them (empty, non-ASCII) still map to valid, distinct names', () => {
    const names = ['', 'météo', 'météo.jour', '天気'];
    const map = toolNameMap(names);
    const wires = names.map((n) => map.toWire(n));
    for (const wire of wires) expect(wire).toMatch(WIRE_TOOL_NAME);
    expect(new Set(wires).size).toBe(names.length);
    expect(map.toWire('météo')).toBe('m_t_o');
  });

  it('a wire name the request did not send maps to nothing, and a loopx name outside the set is refused', () => {
    const map = toolNameMap(['todo.list']);
    expect(map.fromWire('todo.list')).toBeUndefined();
    expect(map.fromWire('todo_update')).toBeUndefined();
    expect(() => map.toWire('todo.update')).toThrow(expect.objectContaining({ code: 'tool_name_unmapped' }) as Error);
  });
});

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const answer = (content: LanguageModelV3GenerateResult['content']): LanguageModelV3GenerateResult => ({
  content,
  finishReason: { unified: 'tool-calls', raw: undefined },
  usage,
  warnings: [],
});
const def = (name: string): ToolDefinition => ({
  name,
  description: name,
  inputSchema: { type: 'object' },
  mutating: false,
});
const user: Message = { id: 'run-1/t0/m1', role: 'user', parts: [{ type: 'text', text: 'Finish the Goal.' }] };
const history: Message[] = [
  user,
  {
    id: 'run-1/t1/m0',
    role: 'assistant',
    parts: [{ type: 'tool_call', callId: 'run-1/t1/k0', toolName: 'todo.list', argumentsJson: '{}' }],
  },
  {
    id: 'run-1/t1/m1',
    role: 'tool',
    parts: [
      { type: 'tool_result', callId: 'run-1/t1/k0', toolName: 'todo.list', status: 'ok', resultJson: '{"todos":[]}' },
    ],
  },
  // A tool the plan no longer offers still goes out under a valid name.
  {
    id: 'run-1/t2/m0',
    role: 'assistant',
    parts: [{ type: 'tool_call', callId: 'run-1/t2/k0', toolName: 'old.server.tool', argumentsJson: '{}' }],
  },
  {
    id: 'run-1/t2/m1',
    role: 'tool',
    parts: [
      {
        type: 'tool_result',
        callId: 'run-1/t2/k0',
        toolName: 'old.server.tool',
        status: 'error',
        resultJson: '{"error":"tool_unknown"}',
      },
    ],
  },
];
const request = (messages: Message[], tools: ToolDefinition[]): ModelRequest => ({
  runId: 'run-1',
  turn: 3,
  modelCallId: 'run-1/t3/c0',
  model: { provider: 'mock', modelId: 'mock-model' },
  messages,
  tools,
});
const TOOLS = [def('todo.list'), def('todo.update'), def('webhook.deliver')];

describe('the AI SDK adapter sends and reads mapped tool names', () => {
  it('tools and every history tool call and result go out under the same valid names', async () => {
    const model = new MockLanguageModelV3({ doGenerate: answer([{ type: 'text', text: 'done' }]) });
    await aiSdkProvider({ name: 'mock', model }).generate(request(history, TOOLS));
    const call = model.doGenerateCalls[0]!;
    expect((call.tools as LanguageModelV3FunctionTool[]).map((t) => t.name)).toEqual([
      'todo_list',
      'todo_update',
      'webhook_deliver',
    ]);
    const sent = call.prompt.flatMap((m) =>
      m.role === 'assistant' || m.role === 'tool'
        ? m.content.flatMap((p) => ('toolName' in p ? [[p.type, p.toolName]] : []))
        : [],
    );
    expect(sent).toEqual([
      ['tool-call', 'todo_list'],
      ['tool-result', 'todo_list'],
      ['tool-call', 'old_server_tool'],
      ['tool-result', 'old_server_tool'],
    ]);
  });

  it('two providers (two processes) given the same request send byte-identical tool names', async () => {
    const names = async () => {
      const model = new MockLanguageModelV3({ doGenerate: answer([{ type: 'text', text: 'done' }]) });
      await aiSdkProvider({ name: 'mock', model }).generate(request(history, [...TOOLS, def('todo_list')].reverse()));
      return JSON.stringify([model.doGenerateCalls[0]!.tools, model.doGenerateCalls[0]!.prompt]);
    };
    expect(await names()).toBe(await names());
  });

  it('tool calls coming back are named by their loopx names before the engine sees them', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: answer([
        { type: 'tool-call', toolCallId: 'p-1', toolName: 'todo_update', input: '{"todo_id":"t1","status":"done"}' },
        { type: 'tool-call', toolCallId: 'p-2', toolName: 'todo_list', input: '' },
      ]),
    });
    const response = await aiSdkProvider({ name: 'mock', model }).generate(request([user], TOOLS));
    expect(response.toolCalls).toEqual([
      { toolName: 'todo.update', arguments: { todo_id: 't1', status: 'done' } },
      { toolName: 'todo.list', arguments: {} },
    ]);
  });

  it.each([
    ['a name the request never sent', 'multi_tool_use_parallel'],
    ['the loopx name itself, which the model was never shown', 'todo.list'],
    ['a name outside the pattern', 'multi_tool_use.parallel'],
  ])('a tool call naming %s is refused with model_tool_name_unknown, not dropped', async (_label, returned) => {
    const model = new MockLanguageModelV3({
      doGenerate: answer([{ type: 'tool-call', toolCallId: 'p-1', toolName: returned, input: '{}' }]),
    });
    const error = await aiSdkProvider({ name: 'mock', model })
      .generate(request([user], TOOLS))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(LoopxError);
    expect({
      code: (error as LoopxError).code,
      kind: (error as LoopxError).kind,
      details: (error as LoopxError).details,
    }).toEqual({
      code: 'model_tool_name_unknown',
      kind: 'rejected',
      details: { tool_name: returned },
    });
  });

  it('a streamed tool call is read through the same mapping', async () => {
    const model = new MockLanguageModelV3({
      doStream: {
        stream: new ReadableStream({
          start(controller) {
            controller.enqueue({
              type: 'tool-call',
              toolCallId: 'p-1',
              toolName: 'webhook_deliver',
              input: '{"message":"hi"}',
            });
            controller.enqueue({ type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage });
            controller.close();
          },
        }),
      },
    });
    const response = await aiSdkProvider({ name: 'mock', model, stream: true }).generate(request([user], TOOLS));
    expect(response.toolCalls).toEqual([{ toolName: 'webhook.deliver', arguments: { message: 'hi' } }]);
  });
});
