import type { LanguageModelV3Content, LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { LoopxError } from '../../src/core/errors.js';
import { aiSdkProvider } from '../../src/engine/providers/ai-sdk.js';
import type { ModelRequest } from '../../src/engine/providers/provider.js';
import type { ToolDefinition } from '../../src/engine/tools.js';
import type { Message, ToolResultStatus } from '../../src/snapshot/index.js';

const result = (
  content: LanguageModelV3Content[],
  usage = { input: 11, output: 7 },
): LanguageModelV3GenerateResult => ({
  content,
  finishReason: { unified: content.some((c) => c.type === 'tool-call') ? 'tool-calls' : 'stop', raw: undefined },
  usage: {
    inputTokens: { total: usage.input, noCache: usage.input, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: usage.output, text: usage.output, reasoning: undefined },
  },
  warnings: [],
});

const request = (messages: Message[], tools: ToolDefinition[] = []): ModelRequest => ({
  runId: 'run-1',
  turn: 1,
  modelCallId: 'run-1/t1/c0',
  model: { provider: 'mock', modelId: 'mock-model' },
  messages,
  tools,
});

const system: Message = { id: 'run-1/t0/m0', role: 'system', parts: [{ type: 'text', text: 'You are terse.' }] };
const user: Message = {
  id: 'run-1/t0/m1',
  role: 'user',
  parts: [{ type: 'text', text: 'Weather in Oslo and Bergen?' }],
};

const provider = (model: MockLanguageModelV3) => aiSdkProvider({ name: 'mock', model });

/** A tool the request offers (a model may only call a tool it was offered: tool-names.test.ts). */
const offered = (name: string): ToolDefinition => ({
  name,
  description: name,
  inputSchema: { type: 'object' },
  mutating: false,
});

/** Asserts that `promise` rejects with a LoopxError of this code and kind. */
const expectCode = async (promise: Promise<unknown>, code: string, kind: LoopxError['kind']) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LoopxError);
  expect({ code: (error as LoopxError).code, kind: (error as LoopxError).kind }).toEqual({ code, kind });
};

describe('AI SDK adapter (LanguageModelV3)', () => {
  it('a text response maps to ModelResponse text with no tool calls', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: result([
        { type: 'text', text: 'Hello, ' },
        { type: 'reasoning', text: 'not part of the history' },
        { type: 'text', text: 'world.' },
      ]),
    });

    const response = await provider(model).generate(request([system, user]));

    expect(response).toEqual({ text: 'Hello, world.', toolCalls: [], usage: { inputTokens: 11, outputTokens: 7 } });
  });

  it('a tool-call response maps to toolName and parsed arguments, in order, without ids', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: result([
        { type: 'text', text: 'Checking.' },
        { type: 'tool-call', toolCallId: 'provider-id-1', toolName: 'get_weather', input: '{"city":"Oslo","days":2}' },
        {
          type: 'tool-call',
          toolCallId: 'provider-id-2',
          toolName: 'get_weather',
          input: '{"city":"Bergen","days":1}',
        },
        { type: 'tool-call', toolCallId: 'provider-id-3', toolName: 'now', input: '' },
      ]),
    });

    const response = await provider(model).generate(request([user], [offered('get_weather'), offered('now')]));

    expect(response.text).toBe('Checking.');
    expect(response.toolCalls).toEqual([
      { toolName: 'get_weather', arguments: { city: 'Oslo', days: 2 } },
      { toolName: 'get_weather', arguments: { city: 'Bergen', days: 1 } },
      // An empty input means "no arguments", as the AI SDK itself reads it.
      { toolName: 'now', arguments: {} },
    ]);
  });

  it('the history is sent as the exact V3 prompt: system string, user text, assistant tool calls, tool results as json / error-json', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: result([{ type: 'text', text: 'Oslo 4°C; Bergen unknown.' }]),
    });
    const history: Message[] = [
      system,
      user,
      {
        id: 'run-1/t1/m0',
        role: 'assistant',
        parts: [
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_call', callId: 'run-1/t1/k0', toolName: 'get_weather', argumentsJson: '{"city":"Oslo"}' },
          { type: 'tool_call', callId: 'run-1/t1/k1', toolName: 'get_weather', argumentsJson: '{"city":"Bergen"}' },
        ],
      },
      {
        id: 'run-1/t1/m1',
        role: 'tool',
        parts: [
          {
            type: 'tool_result',
            callId: 'run-1/t1/k0',
            toolName: 'get_weather',
            status: 'ok',
            resultJson: '{"celsius":4}',
          },
          {
            type: 'tool_result',
            callId: 'run-1/t1/k1',
            toolName: 'get_weather',
            status: 'error',
            resultJson: '{"code":"upstream_timeout"}',
          },
        ],
      },
    ];
    const controller = new AbortController();

    await provider(model).generate({ ...request(history), signal: controller.signal });

    expect(model.doGenerateCalls).toHaveLength(1);
    const call = model.doGenerateCalls[0]!;
    expect(call.prompt).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: [{ type: 'text', text: 'Weather in Oslo and Bergen?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking both.' },
          { type: 'tool-call', toolCallId: 'run-1/t1/k0', toolName: 'get_weather', input: { city: 'Oslo' } },
          { type: 'tool-call', toolCallId: 'run-1/t1/k1', toolName: 'get_weather', input: { city: 'Bergen' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'run-1/t1/k0',
            toolName: 'get_weather',
            output: { type: 'json', value: { celsius: 4 } },
          },
          {
            type: 'tool-result',
            toolCallId: 'run-1/t1/k1',
            toolName: 'get_weather',
            output: { type: 'error-json', value: { code: 'upstream_timeout' } },
          },
        ],
      },
    ]);
    expect(call.abortSignal).toBe(controller.signal);
    // No tools: neither a tool list nor a tool choice is sent (some APIs refuse an empty list).
    expect(call.tools).toBeUndefined();
    expect(call.toolChoice).toBeUndefined();
  });

  it('tool definitions are passed as function tools with their JSON Schemas and tool choice auto', async () => {
    const model = new MockLanguageModelV3({ doGenerate: result([{ type: 'text', text: 'ok' }]) });
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    };
    const tools: ToolDefinition[] = [
      { name: 'get_weather', description: 'Current weather for a city.', inputSchema: schema, mutating: false },
      {
        name: 'send_email',
        description: 'Send an email.',
        inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
        mutating: true,
      },
    ];

    await provider(model).generate(request([user], tools));

    const call = model.doGenerateCalls[0]!;
    expect(call.tools).toEqual([
      { type: 'function', name: 'get_weather', description: 'Current weather for a city.', inputSchema: schema },
      {
        type: 'function',
        name: 'send_email',
        description: 'Send an email.',
        inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
      },
    ]);
    expect(call.toolChoice).toEqual({ type: 'auto' });
  });

  it.each<[ToolResultStatus, string]>([
    ['interaction_pending', 'model_history_interaction_pending'],
    ['mutation_uncertain', 'model_history_mutation_uncertain'],
  ])('a tool result in %s is refused with %s and the model is not called', async (status, code) => {
    const model = new MockLanguageModelV3({ doGenerate: result([{ type: 'text', text: 'should not happen' }]) });
    const history: Message[] = [
      user,
      {
        id: 'run-1/t1/m0',
        role: 'assistant',
        parts: [{ type: 'tool_call', callId: 'run-1/t1/k0', toolName: 'send_email', argumentsJson: '{"to":"a@b.c"}' }],
      },
      {
        id: 'run-1/t1/m1',
        role: 'tool',
        parts: [
          {
            type: 'tool_result',
            callId: 'run-1/t1/k0',
            toolName: 'send_email',
            status,
            resultJson: '{"interaction_id":"i-1","prompt":"Send?"}',
          },
        ],
      },
    ];

    await expectCode(provider(model).generate(request(history)), code, 'internal');
    expect(model.doGenerateCalls).toHaveLength(0);
  });

  it('malformed tool-call input JSON is rejected with model_tool_arguments_invalid_json', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: result([
        { type: 'tool-call', toolCallId: 'provider-id-1', toolName: 'get_weather', input: '{"city":"Oslo"' },
      ]),
    });

    await expectCode(
      provider(model).generate(request([user], [offered('get_weather')])),
      'model_tool_arguments_invalid_json',
      'rejected',
    );
  });

  it('a provider-executed tool call is rejected with model_provider_executed_tool', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: result([
        { type: 'tool-call', toolCallId: 'p-1', toolName: 'web_search', input: '{}', providerExecuted: true },
      ]),
    });

    await expectCode(provider(model).generate(request([user])), 'model_provider_executed_tool', 'rejected');
  });

  it('stored history JSON that does not parse is refused with model_history_invalid and the model is not called', async () => {
    const model = new MockLanguageModelV3({ doGenerate: result([{ type: 'text', text: 'should not happen' }]) });
    const history: Message[] = [
      user,
      {
        id: 'run-1/t1/m0',
        role: 'assistant',
        parts: [{ type: 'tool_call', callId: 'run-1/t1/k0', toolName: 'get_weather', argumentsJson: '{"city":' }],
      },
    ];

    await expectCode(provider(model).generate(request(history)), 'model_history_invalid', 'internal');
    expect(model.doGenerateCalls).toHaveLength(0);
  });

  it('the provider carries its name and identity and does not mutate the request', async () => {
    const model = new MockLanguageModelV3({ doGenerate: result([{ type: 'text', text: 'ok' }]) });
    const identity = {
      kind: 'provider',
      name: 'mock',
      module: 'loopx/ai-sdk',
      version: '0.1.0',
      sourceSha256: 'a'.repeat(64),
    } as const;
    const req = request(
      [system, user],
      [{ name: 'get_weather', description: 'd', inputSchema: { type: 'object' }, mutating: false }],
    );
    const before = structuredClone(req);

    const p = aiSdkProvider({ name: 'mock', model, identity });
    await p.generate(req);

    expect({ name: p.name, identity: p.identity }).toEqual({ name: 'mock', identity });
    expect(req).toEqual(before);
  });
});
