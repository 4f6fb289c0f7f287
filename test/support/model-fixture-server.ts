/**
 * A local stand-in for the model APIs: an HTTP server on 127.0.0.1 (port 0) that answers the wire
 * protocol of OpenAI's Responses API (`POST …/responses`), OpenAI's Chat Completions API (`POST
 * …/chat/completions`, also what `@ai-sdk/openai-compatible` calls) and Anthropic's Messages API
 * (`POST …/messages`) from recorded fixtures, so tests run the REAL AI SDK provider packages with no
 * network. Give a provider `baseURL: server.url` (it ends in `/v1`, as the real base URLs do).
 *
 * Rules it keeps:
 * - Answers are served strictly FIFO per route, as the test enqueued them; nothing is invented. A
 *   request with nothing queued gets a 500 whose body (in that API's error shape) names the route,
 *   so a test that forgot to script a call fails loudly instead of hanging.
 * - Every request is recorded (method, path, headers, parsed JSON body) before it is answered.
 * - Tool names are held to the APIs' rule, as the real APIs hold them: a request naming a tool
 *   outside `^[a-zA-Z0-9_-]{1,64}$` — in its `tools`, its `tool_choice`, or a tool call of its
 *   history — is answered 400 in that API's error shape (OpenAI `invalid_request_error` with the
 *   offending `param`, e.g. `tools[0].name`; Anthropic `invalid_request_error` naming
 *   `tools.0.name`) and consumes nothing from the queue. The pattern is the strict common subset
 *   (OpenAI's; Anthropic allows up to 128 characters), so a test against any route proves a name
 *   every provider accepts.
 * - A stream may be held after N events until the test calls `release()` (a latch, never a sleep),
 *   and may end by destroying the socket after N events (a mid-stream disconnect).
 * - `close()` destroys open connections, so a held stream never keeps a test process alive.
 *
 * Where the shapes come from: the streams and bodies copy the shape (event names, field names,
 * order, `sequence_number`, `data: [DONE]`, `event:` lines) of the vercel/ai repository's recorded
 * fixtures — packages/openai/src/responses/__fixtures__/*.chunks.txt and *.json (e.g.
 * issue-20047-openai-responses, issue-19493-gpt-5.1-tool-call) and packages/anthropic/src/__fixtures__
 * (anthropic-text, anthropic-json-tool) — and of OpenAI's and Anthropic's API references for
 * streaming and errors (OpenAI `{ error: { message, type, param, code } }`, Anthropic `{ type:
 * 'error', error: { type, message }, request_id }`, Anthropic 529 `overloaded_error`). The values
 * (ids, text, tokens) are our own. The parsers in node_modules/@ai-sdk/{openai,anthropic,openai-
 * compatible}/dist were checked for every field they require.
 *
 * Adding a fixture: put it under test/fixtures/model-wire/<route>/ as either
 * - `<name>.sse`: the raw bytes of a 200 `text/event-stream` body, events separated by a blank line
 *   (copy a real capture; keep `event:` lines where the API sends them — Responses and Anthropic do,
 *   Chat Completions does not and ends with `data: [DONE]`); or
 * - `<name>.json`: `{ "status", "headers"?, "body" }` for a JSON answer (a non-streaming result or an
 *   error, `body` exactly as the API sends it), or `{ "stream": "<sse name>", "holdAfterEvents"?,
 *   "disconnectAfterEvents"? }` to serve an .sse file with a latch or a disconnect built in.
 * test/support/model-fixture-server.test.ts proves each fixture against the real provider package;
 * add a case there for a new one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FixtureRoute = 'openai-responses' | 'openai-chat' | 'anthropic';

export interface FixtureSpec {
  /** A file under test/fixtures/model-wire/<route>/, without its extension (.sse or .json). */
  readonly name: string;
  /** Write this many events of a stream, then wait for `release()` (0 = before the first event). */
  readonly holdAfterEvents?: number;
  /** Write this many events of a stream, then destroy the socket (no terminating chunk). */
  readonly disconnectAfterEvents?: number;
}

export interface RecordedRequest {
  /** The route the path matched, or undefined for a path no route serves (answered 404). */
  readonly route: FixtureRoute | undefined;
  readonly method: string;
  /** The path with its query, e.g. `/v1/chat/completions`. */
  readonly path: string;
  /** As Node delivers them: names lower-cased (`authorization`, `x-api-key`, `anthropic-version`). */
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body; undefined when the body was empty or not JSON (see `rawBody`). */
  readonly body: unknown;
  readonly rawBody: string;
  /** The fixture that answered, or undefined when the queue was empty. */
  readonly fixture: string | undefined;
}

export interface EnqueuedFixture {
  /** Lets a held stream continue (idempotent; harmless for a fixture without a latch). */
  release(): void;
  /**
   * Resolves once the server has written the events before the hold point and is waiting; for a
   * fixture without a latch, once its answer has been fully written (or the socket destroyed).
   */
  readonly reached: Promise<void>;
}

export interface ModelFixtureServer {
  /** `http://127.0.0.1:<port>/v1`: pass it as the provider's `baseURL`. */
  readonly url: string;
  close(): Promise<void>;
  enqueue(route: FixtureRoute, fixture: string | FixtureSpec): EnqueuedFixture;
  /** Every request received so far, in arrival order (a live array). */
  readonly requests: RecordedRequest[];
}

/** Where the recorded wire fixtures live. */
export const MODEL_WIRE_FIXTURES = new URL('../fixtures/model-wire/', import.meta.url);

/** The path suffix each route answers (the providers append these to their base URL). */
const ROUTE_PATHS: ReadonlyArray<readonly [FixtureRoute, string]> = [
  ['openai-responses', '/responses'],
  ['openai-chat', '/chat/completions'],
  ['anthropic', '/messages'],
];

type Answer =
  | { readonly kind: 'json'; readonly status: number; readonly headers: Record<string, string>; readonly body: unknown }
  | {
      readonly kind: 'stream';
      readonly headers: Record<string, string>;
      readonly events: readonly string[];
      readonly holdAfterEvents?: number;
      readonly disconnectAfterEvents?: number;
    };

interface Queued {
  readonly name: string;
  readonly answer: Answer;
  readonly latch: Latch;
}

interface Latch {
  readonly released: Promise<void>;
  release(): void;
  readonly reached: Promise<void>;
  reach(): void;
}

const newLatch = (): Latch => {
  let release = (): void => {};
  let reach = (): void => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const reached = new Promise<void>((resolve) => (reach = resolve));
  return { released, release: () => release(), reached, reach: () => reach() };
};

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

/** Splits a raw SSE body into its events (each without its terminating blank line). */
export const sseEvents = (raw: string): string[] =>
  raw
    .replace(/\r\n/g, '\n')
    .split(/\n\n+/)
    .filter((event) => event.trim() !== '');

interface JsonFixtureFile {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  readonly stream?: string;
  readonly holdAfterEvents?: number;
  readonly disconnectAfterEvents?: number;
}

/** Reads a fixture now (at enqueue time), so a misspelt name fails in the test that named it. */
export const loadFixture = (route: FixtureRoute, name: string): Answer => {
  const sse = new URL(`${route}/${name}.sse`, MODEL_WIRE_FIXTURES);
  const json = new URL(`${route}/${name}.json`, MODEL_WIRE_FIXTURES);
  if (existsSync(sse) && existsSync(json))
    throw new Error(`model fixture ${route}/${name} exists as both .sse and .json`);
  if (existsSync(sse)) return { kind: 'stream', headers: SSE_HEADERS, events: sseEvents(readFileSync(sse, 'utf8')) };
  if (!existsSync(json))
    throw new Error(`no model fixture ${route}/${name}(.sse|.json) under test/fixtures/model-wire`);
  const file = JSON.parse(readFileSync(json, 'utf8')) as JsonFixtureFile;
  if (file.stream !== undefined) {
    const inner = loadFixture(route, file.stream);
    if (inner.kind !== 'stream')
      throw new Error(`model fixture ${route}/${name} names ${file.stream}, which is not a stream`);
    return {
      ...inner,
      headers: { ...inner.headers, ...file.headers },
      ...(file.holdAfterEvents === undefined ? {} : { holdAfterEvents: file.holdAfterEvents }),
      ...(file.disconnectAfterEvents === undefined ? {} : { disconnectAfterEvents: file.disconnectAfterEvents }),
    };
  }
  if (typeof file.status !== 'number' || !('body' in file))
    throw new Error(`model fixture ${route}/${name}.json needs "status" and "body" (or "stream")`);
  return { kind: 'json', status: file.status, headers: file.headers ?? {}, body: file.body };
};

const withSpec = (answer: Answer, spec: FixtureSpec): Answer => {
  if (answer.kind !== 'stream') {
    if (spec.holdAfterEvents !== undefined || spec.disconnectAfterEvents !== undefined) {
      throw new Error(
        `model fixture ${spec.name} is a JSON answer: holdAfterEvents/disconnectAfterEvents apply only to streams`,
      );
    }
    return answer;
  }
  return {
    ...answer,
    ...(spec.holdAfterEvents === undefined ? {} : { holdAfterEvents: spec.holdAfterEvents }),
    ...(spec.disconnectAfterEvents === undefined ? {} : { disconnectAfterEvents: spec.disconnectAfterEvents }),
  };
};

/** What every model API accepts as a tool name (OpenAI's function-name rule, within Anthropic's). */
export const API_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A tool name the API would refuse: where it is in the body (in the API's own notation) and the name. */
export interface BadToolName {
  readonly param: string;
  readonly name: unknown;
}

type Json = Record<string, unknown>;
const objects = (value: unknown): Json[] =>
  Array.isArray(value) ? value.filter((v): v is Json => typeof v === 'object' && v !== null) : [];
const objectOf = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;

/**
 * Every tool name of a request body, with where it sits: Responses `tools[i].name`,
 * `input[i].name` of a `function_call`, `tool_choice.name`; Chat Completions
 * `tools[i].function.name`, `messages[i].tool_calls[j].function.name`, `tool_choice.function.name`;
 * Anthropic `tools.i.name`, `messages.i.content.j.name` of a `tool_use`, `tool_choice.name`.
 */
export const toolNamesOf = (route: FixtureRoute, body: unknown): BadToolName[] => {
  const b = objectOf(body) ?? {};
  const names: BadToolName[] = [];
  const choice = objectOf(b.tool_choice);
  switch (route) {
    case 'openai-responses':
      objects(b.tools).forEach(
        (t, i) => t.type === 'function' && names.push({ param: `tools[${i}].name`, name: t.name }),
      );
      objects(b.input).forEach(
        (item, i) => item.type === 'function_call' && names.push({ param: `input[${i}].name`, name: item.name }),
      );
      if (choice?.type === 'function') names.push({ param: 'tool_choice.name', name: choice.name });
      break;
    case 'openai-chat':
      objects(b.tools).forEach((t, i) =>
        names.push({ param: `tools[${i}].function.name`, name: objectOf(t.function)?.name }),
      );
      objects(b.messages).forEach((m, i) =>
        objects(m.tool_calls).forEach((c, j) =>
          names.push({ param: `messages[${i}].tool_calls[${j}].function.name`, name: objectOf(c.function)?.name }),
        ),
      );
      if (choice?.type === 'function')
        names.push({ param: 'tool_choice.function.name', name: objectOf(choice.function)?.name });
      break;
    case 'anthropic':
      objects(b.tools).forEach((t, i) =>
        t.type === undefined || t.type === 'custom'
          ? names.push({ param: `tools.${i}.name`, name: t.name })
          : undefined,
      );
      objects(b.messages).forEach((m, i) =>
        objects(m.content).forEach(
          (c, j) => c.type === 'tool_use' && names.push({ param: `messages.${i}.content.${j}.name`, name: c.name }),
        ),
      );
      if (choice?.type === 'tool') names.push({ param: 'tool_choice.name', name: choice.name });
      break;
  }
  return names;
};

/** The first tool name of the body the API would refuse, or undefined. */
export const badToolName = (route: FixtureRoute, body: unknown): BadToolName | undefined =>
  toolNamesOf(route, body).find(({ name }) => typeof name !== 'string' || !API_TOOL_NAME.test(name));

/** The 400 each API answers for a tool name outside its pattern (OpenAI's and Anthropic's wording). */
const badToolNameBody = (route: FixtureRoute, bad: BadToolName): unknown =>
  route === 'anthropic'
    ? {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: `${bad.param}: String should match pattern '${API_TOOL_NAME.source}'`,
        },
        request_id: 'req_fixture_bad_tool_name',
      }
    : {
        error: {
          message: `Invalid '${bad.param}': string does not match pattern. Expected a string that matches the pattern '${API_TOOL_NAME.source}'.`,
          type: 'invalid_request_error',
          param: bad.param,
          code: 'invalid_value',
        },
      };

/** The error body each API would send, for the server's own refusals (empty queue, unknown path). */
const errorBody = (route: FixtureRoute | undefined, message: string): unknown =>
  route === 'anthropic'
    ? { type: 'error', error: { type: 'api_error', message } }
    : { error: { message, type: 'server_error', param: null, code: null } };

const routeOf = (path: string): FixtureRoute | undefined => {
  const pathname = path.split('?')[0] ?? '';
  return ROUTE_PATHS.find(([, suffix]) => pathname.endsWith(suffix))?.[0];
};

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

const parseJson = (raw: string): unknown => {
  if (raw.trim() === '') return undefined;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
};

const sendJson = (res: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

const writeEvent = (res: ServerResponse, event: string): Promise<void> =>
  new Promise((resolve) => {
    if (res.destroyed) return resolve();
    res.write(`${event}\n\n`, () => resolve());
  });

const serveStream = async (
  res: ServerResponse,
  answer: Extract<Answer, { kind: 'stream' }>,
  latch: Latch,
): Promise<void> => {
  res.writeHead(200, answer.headers);
  res.flushHeaders();
  for (let i = 0; i <= answer.events.length; i++) {
    if (i === answer.holdAfterEvents) {
      latch.reach();
      await latch.released;
    }
    if (i === answer.disconnectAfterEvents) {
      // Cut the connection as a dropped network would: no terminating chunk, no end of stream.
      res.socket?.destroy();
      return;
    }
    const event = answer.events[i];
    if (event === undefined || res.destroyed) break;
    await writeEvent(res, event);
  }
  if (!res.destroyed) await new Promise<void>((resolve) => res.end(resolve));
};

export async function startModelFixtureServer(): Promise<ModelFixtureServer> {
  const queues = new Map<FixtureRoute, Queued[]>(ROUTE_PATHS.map(([route]) => [route, []]));
  const requests: RecordedRequest[] = [];
  const latches = new Set<Latch>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = req.url ?? '/';
    const route = routeOf(path);
    const rawBody = await readBody(req);
    const body = parseJson(rawBody);
    // A request the real API would refuse never reaches a fixture: it consumes nothing queued.
    const bad = route === undefined ? undefined : badToolName(route, body);
    const next = route === undefined || bad !== undefined ? undefined : queues.get(route)?.shift();
    requests.push({ route, method: req.method ?? '', path, headers: req.headers, body, rawBody, fixture: next?.name });
    if (route === undefined) {
      return sendJson(
        res,
        404,
        {},
        errorBody(undefined, `model-fixture-server: no route serves ${req.method} ${path}`),
      );
    }
    if (bad !== undefined) return sendJson(res, 400, {}, badToolNameBody(route, bad));
    if (next === undefined) {
      const message = `model-fixture-server: no fixture enqueued for route ${route} (${req.method} ${path}); enqueue one per expected call`;
      return sendJson(res, 500, {}, errorBody(route, message));
    }
    try {
      if (next.answer.kind === 'json') sendJson(res, next.answer.status, next.answer.headers, next.answer.body);
      else await serveStream(res, next.answer, next.latch);
    } finally {
      next.latch.reach();
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, {}, errorBody(undefined, `model-fixture-server failed: ${String(error)}`));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue(route, fixture) {
      const spec = typeof fixture === 'string' ? { name: fixture } : fixture;
      const queue = queues.get(route);
      if (queue === undefined) throw new Error(`model-fixture-server has no route ${String(route)}`);
      const latch = newLatch();
      latches.add(latch);
      queue.push({ name: spec.name, answer: withSpec(loadFixture(route, spec.name), spec), latch });
      return { release: latch.release, reached: latch.reached };
    },
    async close() {
      // Held streams are still waiting on their latches: release them, then cut what remains open.
      for (const latch of latches) latch.release();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
