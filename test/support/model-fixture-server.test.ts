/**
 * The model fixture server is only useful if the REAL provider packages understand what it sends:
 * each recorded fixture is served to `@ai-sdk/openai` (Responses and Chat Completions),
 * `@ai-sdk/openai-compatible` and `@ai-sdk/anthropic`, calling the V3 `doStream` / `doGenerate`
 * directly as loopx does, and the parsed result is asserted — text in order, tool calls, usage,
 * finish reasons, `APICallError` status and retryability, a disconnect that errors instead of
 * hanging. It also pins the server's own contract: FIFO per route, requests recorded, an empty
 * queue refused loudly, a latch that holds a stream, a tool name the APIs refuse answered 400.
 */
import { readFileSync } from 'node:fs';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError } from '@ai-sdk/provider';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  MODEL_WIRE_FIXTURES,
  startModelFixtureServer,
  type FixtureRoute,
  type ModelFixtureServer,
} from './model-fixture-server.js';

const KEY = 'sk-fixture-key-from-env';

interface Kind {
  readonly route: FixtureRoute;
  readonly path: string;
  /** The provider created from the environment's key where the package reads one. */
  model(baseURL: string): LanguageModelV3;
  readonly auth: readonly [header: string, value: string];
  /** The fixture answering with an overloaded server for this API. */
  readonly overloaded: { readonly name: string; readonly status: number };
}

const KINDS: Record<string, Kind> = {
  'openai responses': {
    route: 'openai-responses',
    path: '/v1/responses',
    model: (baseURL) => createOpenAI({ baseURL })('gpt-4o-mini'),
    auth: ['authorization', `Bearer ${KEY}`],
    overloaded: { name: 'error-503', status: 503 },
  },
  'openai chat': {
    route: 'openai-chat',
    path: '/v1/chat/completions',
    model: (baseURL) => createOpenAI({ baseURL }).chat('gpt-4o-mini'),
    auth: ['authorization', `Bearer ${KEY}`],
    overloaded: { name: 'error-503', status: 503 },
  },
  'openai-compatible': {
    route: 'openai-chat',
    path: '/v1/chat/completions',
    // The compatible package reads no environment variable: the key is passed as loopx will pass it.
    model: (baseURL) =>
      createOpenAICompatible({ name: 'local', baseURL, apiKey: KEY, includeUsage: true }).chatModel('local-model'),
    auth: ['authorization', `Bearer ${KEY}`],
    overloaded: { name: 'error-503', status: 503 },
  },
  anthropic: {
    route: 'anthropic',
    path: '/v1/messages',
    model: (baseURL) => createAnthropic({ baseURL })('claude-sonnet-4-5'),
    auth: ['x-api-key', KEY],
    overloaded: { name: 'error-529', status: 529 },
  },
};

const PROMPT: LanguageModelV3CallOptions['prompt'] = [
  { role: 'user', content: [{ type: 'text', text: 'What is the weather in Lisbon?' }] },
];
const CALL: LanguageModelV3CallOptions = {
  prompt: PROMPT,
  tools: [
    {
      type: 'function',
      name: 'get_weather',
      description: 'Current weather for a city',
      inputSchema: {
        type: 'object',
        properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
        required: ['city', 'unit'],
      },
    },
  ],
  toolChoice: { type: 'auto' },
};

/** Reads a stream to its end; an error the stream throws is returned, not rethrown. */
const drain = async (
  stream: ReadableStream<LanguageModelV3StreamPart>,
): Promise<{ parts: LanguageModelV3StreamPart[]; thrown: unknown }> => {
  const parts: LanguageModelV3StreamPart[] = [];
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { parts, thrown: undefined };
      parts.push(value);
    }
  } catch (thrown) {
    return { parts, thrown };
  }
};

/**
 * The text deltas, without empty ones: `@ai-sdk/openai`'s chat model passes on the `content: ""` of
 * the first Chat Completions chunk (the one carrying `role`) as an empty text-delta; the others do not.
 */
const textDeltas = (parts: readonly LanguageModelV3StreamPart[]): string[] =>
  parts.flatMap((p) => (p.type === 'text-delta' && p.delta !== '' ? [p.delta] : []));
const finishOf = (parts: readonly LanguageModelV3StreamPart[]) => {
  const finish = parts.find((p) => p.type === 'finish');
  if (finish?.type !== 'finish') throw new Error(`no finish part in ${JSON.stringify(parts.map((p) => p.type))}`);
  return finish;
};

/** The error a call fails with (the call must fail). */
const failure = async (call: () => PromiseLike<unknown>): Promise<unknown> => {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('the call succeeded; a failure was expected');
};

let server: ModelFixtureServer;
beforeEach(async () => {
  vi.stubEnv('OPENAI_API_KEY', KEY);
  vi.stubEnv('ANTHROPIC_API_KEY', KEY);
  server = await startModelFixtureServer();
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await server.close();
});

describe.each(Object.entries(KINDS))('%s through the fixture server', (_label, kind) => {
  it('a streamed text answer arrives delta by delta, in order, with usage and a stop finish', async () => {
    server.enqueue(kind.route, 'text-stream');
    const { stream } = await kind.model(server.url).doStream({ prompt: PROMPT });
    const { parts, thrown } = await drain(stream);
    expect(thrown).toBeUndefined();
    expect(textDeltas(parts)).toEqual(['Hello', ' from', ' the', ' fixture', '.']);
    const finish = finishOf(parts);
    expect(finish.finishReason.unified).toBe('stop');
    expect(finish.usage.inputTokens.total).toBe(14);
    expect(finish.usage.outputTokens.total).toBe(6);
  });

  it('the request went to the API path with the key from the environment, as a streaming JSON body', async () => {
    server.enqueue(kind.route, 'text-stream');
    await drain((await kind.model(server.url).doStream({ prompt: PROMPT })).stream);
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request).toMatchObject({ route: kind.route, method: 'POST', path: kind.path, fixture: 'text-stream' });
    expect(request?.headers[kind.auth[0]]).toBe(kind.auth[1]);
    expect(request?.headers['content-type']).toMatch(/^application\/json/);
    expect(request?.body).toMatchObject({ stream: true });
  });

  it('a streamed tool call arrives with its name and arguments assembled from the pieces', async () => {
    server.enqueue(kind.route, 'tool-call-stream');
    const { parts, thrown } = await drain((await kind.model(server.url).doStream(CALL)).stream);
    expect(thrown).toBeUndefined();
    const calls = parts.flatMap((p) => (p.type === 'tool-call' ? [p] : []));
    expect(calls).toHaveLength(1);
    expect(calls[0]?.toolName).toBe('get_weather');
    expect(JSON.parse(calls[0]?.input ?? '')).toEqual({ city: 'Lisbon', unit: 'celsius' });
    expect(parts.filter((p) => p.type === 'tool-input-delta').length).toBeGreaterThan(1);
    const finish = finishOf(parts);
    expect(finish.finishReason.unified).toBe('tool-calls');
    expect(finish.usage.inputTokens.total).toBeGreaterThan(0);
    expect(finish.usage.outputTokens.total).toBeGreaterThan(0);
  });

  it('a non-streaming answer carries its text, its tool call and its usage', async () => {
    server.enqueue(kind.route, 'generate');
    const result = await kind.model(server.url).doGenerate(CALL);
    const text = result.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('');
    const calls = result.content.flatMap((c) => (c.type === 'tool-call' ? [c] : []));
    expect(text).toBe('Let me look that up.');
    expect(calls.map((c) => [c.toolName, JSON.parse(c.input) as unknown])).toEqual([
      ['get_weather', { city: 'Lisbon', unit: 'celsius' }],
    ]);
    expect(result.finishReason.unified).toBe('tool-calls');
    expect(result.usage.inputTokens.total).toBeGreaterThan(0);
    expect(result.usage.outputTokens.total).toBeGreaterThan(0);
    expect(server.requests[0]?.body).not.toHaveProperty('stream', true);
  });

  it.each([
    { name: 'error-429', status: 429, retryable: true },
    { name: 'error-401', status: 401, retryable: false },
    { name: 'error-400-context-length', status: 400, retryable: false },
    { name: 'error-500', status: 500, retryable: true },
  ])(
    '$name surfaces as an APICallError with status $status, retryable $retryable, from doStream and doGenerate',
    async ({ name, status, retryable }) => {
      server.enqueue(kind.route, name);
      server.enqueue(kind.route, name);
      for (const error of [
        await failure(() => kind.model(server.url).doStream({ prompt: PROMPT })),
        await failure(() => kind.model(server.url).doGenerate({ prompt: PROMPT })),
      ]) {
        expect(APICallError.isInstance(error)).toBe(true);
        const apiError = error as APICallError;
        expect(apiError.statusCode).toBe(status);
        expect(apiError.isRetryable).toBe(retryable);
      }
      // doStream/doGenerate never retry by themselves: one request per call.
      expect(server.requests).toHaveLength(2);
    },
  );

  it('an overloaded server surfaces as a retryable APICallError', async () => {
    server.enqueue(kind.route, kind.overloaded.name);
    const error = await failure(() => kind.model(server.url).doStream({ prompt: PROMPT }));
    expect(APICallError.isInstance(error) && error.statusCode === kind.overloaded.status && error.isRetryable).toBe(
      true,
    );
  });

  it('a rate-limit answer keeps its retry-after header and the API message for the caller', async () => {
    server.enqueue(kind.route, 'error-429');
    const error = (await failure(() => kind.model(server.url).doGenerate({ prompt: PROMPT }))) as APICallError;
    expect(error.responseHeaders?.['retry-after']).toBe('2');
    expect(error.message).toMatch(/rate limit/i);
  });

  it('a context-length refusal names the cause in the message and the parsed error data', async () => {
    server.enqueue(kind.route, 'error-400-context-length');
    const error = (await failure(() => kind.model(server.url).doGenerate({ prompt: PROMPT }))) as APICallError;
    if (kind.route === 'anthropic') {
      expect(error.data).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      expect(error.message).toMatch(/^prompt is too long/);
    } else {
      expect(error.data).toMatchObject({ error: { code: 'context_length_exceeded', type: 'invalid_request_error' } });
    }
  });

  it('a connection cut mid-stream makes the stream throw a retryable APICallError after the text already sent, never a hang', async () => {
    server.enqueue(kind.route, 'disconnect');
    const { parts, thrown } = await drain((await kind.model(server.url).doStream({ prompt: PROMPT })).stream);
    expect(textDeltas(parts)).toEqual(['Hello']);
    expect(parts.some((p) => p.type === 'finish' || p.type === 'error')).toBe(false);
    // It carries the status of the (successful) response it interrupted, and is retryable as a
    // network error: a caller that retries must discard the text it already showed.
    expect(APICallError.isInstance(thrown)).toBe(true);
    expect(thrown).toMatchObject({
      statusCode: 200,
      isRetryable: true,
      message: 'Failed to process successful response',
    });
    expect(String((thrown as APICallError).cause)).toMatch(/terminated/);
  });
});

describe("the goal-finisher's Responses streams (test/cli/goal-finisher-openai.test.ts), as @ai-sdk/openai reads them", () => {
  // As the adapter names loopx's todo.list and todo.update on the wire (src/engine/providers/tool-names.ts).
  const GOAL_TOOLS: LanguageModelV3CallOptions['tools'] = [
    {
      type: 'function',
      name: 'todo_list',
      description: "List the Goal's Todos with their status.",
      inputSchema: { type: 'object', properties: {} },
    },
    {
      type: 'function',
      name: 'todo_update',
      description: 'Update a Todo of the Goal.',
      inputSchema: {
        type: 'object',
        required: ['todo_id'],
        properties: {
          todo_id: { type: 'string' },
          status: { enum: ['open', 'done', 'blocked', 'deferred'] },
          note: { type: 'string' },
        },
      },
    },
  ];
  const stream = async (name: string) => {
    server.enqueue('openai-responses', name);
    const { parts, thrown } = await drain(
      (await createOpenAI({ baseURL: server.url })('gpt-4o-mini').doStream({ prompt: PROMPT, tools: GOAL_TOOLS }))
        .stream,
    );
    expect(thrown).toBeUndefined();
    const calls = parts.flatMap((p) => (p.type === 'tool-call' ? [[p.toolName, JSON.parse(p.input) as unknown]] : []));
    return { parts, calls, finish: finishOf(parts) };
  };

  it('goal-finisher-list: one todo_list call with empty arguments', async () => {
    const { calls, finish } = await stream('goal-finisher-list');
    expect(calls).toEqual([['todo_list', {}]]);
    expect(finish.finishReason.unified).toBe('tool-calls');
    expect([finish.usage.inputTokens.total, finish.usage.outputTokens.total]).toEqual([412, 12]);
  });

  it('goal-finisher-update: two todo_update calls in one response, each assembled from its pieces', async () => {
    const { calls, finish } = await stream('goal-finisher-update');
    expect(calls).toEqual([
      ['todo_update', { todo_id: 't1', status: 'done', note: 'outline drafted' }],
      ['todo_update', { todo_id: 't3', status: 'done', note: 'published after the review' }],
    ]);
    expect(finish.finishReason.unified).toBe('tool-calls');
  });

  it('goal-finisher-answer: a text answer with no tool call', async () => {
    const { parts, calls, finish } = await stream('goal-finisher-answer');
    expect(calls).toEqual([]);
    expect(textDeltas(parts).join('')).toBe('Marked t1 and t3 done; no Todo is left open.');
    expect(finish.finishReason.unified).toBe('stop');
    expect([finish.usage.inputTokens.total, finish.usage.outputTokens.total]).toEqual([701, 14]);
  });
});

describe.each(Object.entries(KINDS))('tool names the API refuses, %s', (_label, kind) => {
  const tool = (name: string) => ({
    type: 'function' as const,
    name,
    description: 'List the Todos.',
    inputSchema: { type: 'object' as const, properties: {} },
  });
  /** A history with one earlier call of `name` and its result, then the tools of CALL (all valid). */
  const historyCalling = (name: string): LanguageModelV3CallOptions => ({
    ...CALL,
    prompt: [
      ...PROMPT,
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_fixture_1', toolName: name, input: {} }] },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call_fixture_1',
            toolName: name,
            output: { type: 'json', value: { todos: [] } },
          },
        ],
      },
    ],
  });
  const HISTORY_PARAM = {
    'openai-responses': 'input[1].name',
    'openai-chat': 'messages[1].tool_calls[0].function.name',
    anthropic: 'messages.1.content.0.name',
  }[kind.route];
  const TOOLS_PARAM = {
    'openai-responses': 'tools[0].name',
    'openai-chat': 'tools[0].function.name',
    anthropic: 'tools.0.name',
  }[kind.route];

  it("a dotted name in the tools is answered 400 in the API's error shape, naming where it is, and consumes no fixture", async () => {
    server.enqueue(kind.route, 'generate');
    const error = await failure(() =>
      kind.model(server.url).doGenerate({ prompt: PROMPT, tools: [tool('todo.list')] }),
    );
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 400, isRetryable: false });
    expect((error as APICallError).message).toContain(TOOLS_PARAM);
    expect((error as APICallError).message).toContain('^[a-zA-Z0-9_-]{1,64}$');
    const body = JSON.parse((error as APICallError).responseBody!) as { error: { type: string; param?: string } };
    expect(body.error.type).toBe('invalid_request_error');
    if (kind.route !== 'anthropic') expect(body.error.param).toBe(TOOLS_PARAM);
    expect(server.requests.map((r) => r.fixture)).toEqual([undefined]);
    // The fixture is still queued for the next (valid) request.
    expect((await kind.model(server.url).doGenerate(CALL)).finishReason.unified).toBe('tool-calls');
  });

  it('a dotted name of an earlier tool call in the history is answered 400 as well', async () => {
    server.enqueue(kind.route, 'generate');
    const error = await failure(() => kind.model(server.url).doGenerate(historyCalling('todo.list')));
    expect(error).toMatchObject({ statusCode: 400 });
    expect((error as APICallError).message).toContain(HISTORY_PARAM);
  });

  it('names of 64 characters in [a-zA-Z0-9_-] pass; 65 characters are refused', async () => {
    server.enqueue(kind.route, 'generate');
    const longest = `todo_${'x'.repeat(58)}-`;
    expect(longest).toHaveLength(64);
    await kind.model(server.url).doGenerate({ ...historyCalling(longest), tools: [tool(longest)] });
    expect(
      await failure(() => kind.model(server.url).doGenerate({ prompt: PROMPT, tools: [tool(`${longest}x`)] })),
    ).toMatchObject({ statusCode: 400 });
  });
});

describe('the fixture server', () => {
  const openaiChat = () => createOpenAI({ baseURL: server.url }).chat('gpt-4o-mini');

  it('serves each route in the order the test enqueued, independently of the other routes', async () => {
    server.enqueue('openai-chat', 'error-429');
    server.enqueue('anthropic', 'generate');
    server.enqueue('openai-chat', 'generate');
    expect(await failure(() => openaiChat().doGenerate({ prompt: PROMPT }))).toMatchObject({ statusCode: 429 });
    const second = await openaiChat().doGenerate({ prompt: PROMPT });
    expect(second.finishReason.unified).toBe('tool-calls');
    expect(
      (await createAnthropic({ baseURL: server.url })('claude-sonnet-4-5').doGenerate({ prompt: PROMPT })).finishReason
        .unified,
    ).toBe('tool-calls');
    expect(server.requests.map((r) => [r.route, r.fixture])).toEqual([
      ['openai-chat', 'error-429'],
      ['openai-chat', 'generate'],
      ['anthropic', 'generate'],
    ]);
  });

  it('a request with nothing enqueued fails loudly with a message naming the route', async () => {
    const error = await failure(() =>
      createOpenAI({ baseURL: server.url })('gpt-4o-mini').doGenerate({ prompt: PROMPT }),
    );
    expect(error).toMatchObject({ statusCode: 500 });
    expect((error as APICallError).message).toMatch(/no fixture enqueued for route openai-responses/);
    const anthropicError = await failure(() =>
      createAnthropic({ baseURL: server.url })('claude-sonnet-4-5').doGenerate({ prompt: PROMPT }),
    );
    expect((anthropicError as APICallError).message).toMatch(/no fixture enqueued for route anthropic/);
    expect(server.requests.map((r) => r.fixture)).toEqual([undefined, undefined]);
  });

  it('a path no route serves is answered 404 and still recorded', async () => {
    const response = await fetch(`${server.url}/embeddings`, { method: 'POST', body: '{"input":"x"}' });
    expect(response.status).toBe(404);
    expect(server.requests).toMatchObject([{ route: undefined, path: '/v1/embeddings', body: { input: 'x' } }]);
  });

  it('a stream fixture goes on the wire byte for byte as its file holds it, as text/event-stream', async () => {
    for (const route of ['openai-responses', 'openai-chat', 'anthropic'] as const) {
      server.enqueue(route, 'tool-call-stream');
      const path = { 'openai-responses': '/responses', 'openai-chat': '/chat/completions', anthropic: '/messages' }[
        route
      ];
      const response = await fetch(`${server.url}${path}`, { method: 'POST', body: '{}' });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(await response.text()).toBe(
        readFileSync(new URL(`${route}/tool-call-stream.sse`, MODEL_WIRE_FIXTURES), 'utf8'),
      );
    }
  });

  it('a misspelt fixture name is refused when it is enqueued', () => {
    expect(() => server.enqueue('anthropic', 'no-such-fixture')).toThrow(/no model fixture anthropic\/no-such-fixture/);
    expect(() => server.enqueue('anthropic', { name: 'generate', holdAfterEvents: 1 })).toThrow(
      /apply only to streams/,
    );
  });

  it('a held stream delivers the events before the latch and nothing more until it is released', async () => {
    // message_start, content_block_start, ping, "Hello", " from" — then the latch.
    const held = server.enqueue('anthropic', { name: 'text-stream', holdAfterEvents: 5 });
    const { stream } = await createAnthropic({ baseURL: server.url })('claude-sonnet-4-5').doStream({ prompt: PROMPT });
    await held.reached;
    const reader = stream.getReader();
    const before: LanguageModelV3StreamPart[] = [];
    while (textDeltas(before).length < 2) before.push((await reader.read()).value as LanguageModelV3StreamPart);
    expect(textDeltas(before)).toEqual(['Hello', ' from']);
    held.release();
    reader.releaseLock();
    const { parts, thrown } = await drain(stream);
    expect(thrown).toBeUndefined();
    expect(textDeltas(parts)).toEqual([' the', ' fixture', '.']);
    expect(finishOf(parts).finishReason.unified).toBe('stop');
  });

  it('close() ends a stream still held by its latch', async () => {
    // Held after the first text delta: OpenAI's doStream does not resolve before the first output
    // event (it peeks for an error frame first), so a latch before it would hold doStream itself.
    const held = server.enqueue('openai-responses', { name: 'text-stream', holdAfterEvents: 5 });
    const { stream } = await createOpenAI({ baseURL: server.url })('gpt-4o-mini').doStream({ prompt: PROMPT });
    await held.reached;
    const draining = drain(stream);
    await server.close();
    const { parts, thrown } = await draining;
    expect(parts.some((p) => p.type === 'finish')).toBe(false);
    expect(thrown).toMatchObject({ isRetryable: true });
    server = await startModelFixtureServer(); // afterEach closes it
  });

  it("Anthropic's in-stream overloaded error as the first event surfaces from doStream as a retryable 529", async () => {
    server.enqueue('anthropic', 'overloaded-first-event');
    const error = await failure(() =>
      createAnthropic({ baseURL: server.url })('claude-sonnet-4-5').doStream({ prompt: PROMPT }),
    );
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ statusCode: 529, isRetryable: true, message: 'Overloaded' });
  });

  it("Anthropic's in-stream overloaded error after content arrives as an error part, not a throw", async () => {
    server.enqueue('anthropic', 'overloaded-mid-stream');
    const { parts, thrown } = await drain(
      (await createAnthropic({ baseURL: server.url })('claude-sonnet-4-5').doStream({ prompt: PROMPT })).stream,
    );
    expect(thrown).toBeUndefined();
    expect(textDeltas(parts)).toEqual(['Hello']);
    expect(parts.filter((p) => p.type === 'error')).toEqual([
      { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    ]);
    expect(parts.some((p) => p.type === 'finish')).toBe(false);
  });

  it("only the ai package's generateText retries: a 429 then an answer take two requests and succeed", async () => {
    const { generateText } = await import('ai');
    server.enqueue('openai-chat', 'error-429'); // retry-after: 2 — generateText waits about 2 s
    server.enqueue('openai-chat', 'generate');
    const result = await generateText({ model: openaiChat(), prompt: 'What is the weather in Lisbon?', maxRetries: 1 });
    expect(result.text).toBe('Let me look that up.');
    expect(server.requests.map((r) => r.fixture)).toEqual(['error-429', 'generate']);
  });
});
