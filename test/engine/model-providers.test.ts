/**
 * Real model providers: the AI SDK's own packages (`@ai-sdk/openai` Responses API, `@ai-sdk/anthropic`,
 * `@ai-sdk/openai-compatible` Chat Completions) driven by the engine against a local server that
 * speaks their wire protocols from recorded fixtures — streaming, tool calls, usage, errors, retries
 * and a mid-stream disconnect — with the key named by an environment variable and never stored.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  defineAgent,
  defineApplication,
  openEngine,
  type AgentDefinition,
  type Application,
  type Engine,
  type RunEvent,
} from '../../src/engine/index.js';
import { SDK_PROVIDER_KINDS, type ModelProviderKind } from '../../src/engine/providers/catalog.js';
import { LocalRunAuthority } from '../../src/run-authority/index.js';
import {
  startModelFixtureServer,
  type FixtureRoute,
  type ModelFixtureServer,
} from '../support/model-fixture-server.js';
import {
  allEvents,
  componentIdentity,
  expectCode,
  latch,
  makeTool,
  openTestEngine,
  privateDir,
} from './engine-support.js';

const KEY_ENV = 'LOOPX_TEST_MODEL_KEY';
const KEY = 'sk-test-never-stored-4d1c9e';
const PLAN = 'test.weather';

let server: ModelFixtureServer;
beforeAll(async () => {
  server = await startModelFixtureServer();
});
afterAll(async () => server.close());
const transferCleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  delete process.env[KEY_ENV];
  while (transferCleanups.length) await transferCleanups.pop()!();
});

const KINDS: ReadonlyArray<{
  provider: string;
  route: FixtureRoute;
  keyHeader: (h: Record<string, unknown>) => unknown;
}> = [
  { provider: 'openai', route: 'openai-responses', keyHeader: (h) => h.authorization },
  { provider: 'anthropic', route: 'anthropic', keyHeader: (h) => h['x-api-key'] },
  { provider: 'openai-compatible', route: 'openai-chat', keyHeader: (h) => h.authorization },
];

function weatherApp(calls: { count: number }, mutating = true): Application {
  const tool = makeTool(
    'get_weather',
    (args) => {
      calls.count++;
      return { city: args.city as string, celsius: 21 };
    },
    { mutating, inputSchema: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } } } },
  );
  return defineApplication({
    compatibilityIdentity: 'test.providers/1',
    providerKinds: SDK_PROVIDER_KINDS,
    toolPlans: [{ id: PLAN, tools: [tool] }],
    components: [componentIdentity('stage', 'test-stage')],
    modelRetry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
  });
}

const agent = (
  provider: string,
  options: { budget?: number; version?: string; modelId?: string } = {},
): AgentDefinition =>
  defineAgent({
    id: `test.${provider}`,
    version: options.version ?? '1.0.0',
    model: { provider, modelId: options.modelId ?? 'fixture-model', baseUrl: server.url, apiKeyEnv: KEY_ENV },
    turnLimit: 5,
    toolPlan: PLAN,
    ...(options.budget !== undefined ? { budget: { maxTokens: options.budget } } : {}),
  });

const requestsOf = (route: FixtureRoute) => server.requests.filter((r) => r.route === route);
const ofType = (events: RunEvent[], type: string) => events.filter((e) => e.type === type);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe.each(KINDS)('the $provider provider', ({ provider, route, keyHeader }) => {
  it('runs a tool call then a streamed final answer: text streamed as it arrives, usage recorded, the key sent and never stored', async () => {
    process.env[KEY_ENV] = KEY;
    const root = privateDir();
    const calls = { count: 0 };
    const engine: Engine = openTestEngine('sqlite', weatherApp(calls), root);
    const before = requestsOf(route).length;
    server.enqueue(route, 'tool-call-stream');
    const held = server.enqueue(route, { name: 'text-stream', holdAfterEvents: 6 });

    const started = engine.start(agent(provider), { runId: `run-${provider}`, input: 'Weather in Lisbon?' });
    await held.reached;
    // The answer is still streaming: its first words are already in the run's log.
    await expect
      .poll(async () => ofType(await allEvents(engine, `run-${provider}`), 'ModelStreamed').length)
      .toBeGreaterThan(0);
    expect(ofType(await allEvents(engine, `run-${provider}`), 'ModelResponded')).toHaveLength(1);
    held.release();
    const view = await started;

    expect(view).toMatchObject({ status: 'completed', completed_turns: 2 });
    expect(calls.count).toBe(1);
    const events = await allEvents(engine, `run-${provider}`);
    const responded = ofType(events, 'ModelResponded');
    expect(responded[1]!.data.text).toBe('Hello from the fixture.');
    expect(
      ofType(events, 'ModelStreamed')
        .filter((e) => e.data.turn === 2)
        .map((e) => e.data.text)
        .join(''),
    ).toBe('Hello from the fixture.');
    expect(responded[1]!.data.usage).toEqual({ input_tokens: 14, output_tokens: 6, source: 'provider' });
    expect(ofType(events, 'ToolCalled').map((e) => e.data.tool_name)).toEqual(['get_weather']);

    const sent = requestsOf(route).slice(before);
    expect(sent).toHaveLength(2);
    expect(String(keyHeader(sent[0]!.headers))).toContain(KEY);
    // The second call carries the tool's result back to the model.
    expect(JSON.stringify(sent[1]!.body)).toContain('"celsius\\":21');
    engine.close();
    for (const file of filesUnder(root)) expect(readFileSync(file).includes(KEY), file).toBe(false);
  });

  it('retries a rate limit and a broken stream inside the turn, recording each retry; the mutating tool of the turn before runs once', async () => {
    process.env[KEY_ENV] = KEY;
    const calls = { count: 0 };
    const engine = openTestEngine('sqlite', weatherApp(calls));
    const before = requestsOf(route).length;
    server.enqueue(route, 'tool-call-stream');
    server.enqueue(route, 'error-429');
    server.enqueue(route, 'disconnect');
    server.enqueue(route, 'text-stream');

    const view = await engine.start(agent(provider), { runId: 'run-retry' });

    expect(view).toMatchObject({ status: 'completed', completed_turns: 2 });
    expect(calls.count).toBe(1);
    expect(requestsOf(route).length - before).toBe(4);
    const events = await allEvents(engine, 'run-retry');
    expect(ofType(events, 'ModelRetried').map((e) => [e.data.turn, e.data.attempt, e.data.code])).toEqual([
      [2, 1, 'model_rate_limited'],
      [2, 2, 'model_network_failed'],
    ]);
    expect(ofType(events, 'ModelResponded')).toHaveLength(2);
    expect(ofType(events, 'TurnStarted')).toHaveLength(2);
  });

  it.each([
    ['error-401', 'model_auth_failed', 1],
    ['error-400-context-length', 'model_context_too_long', 1],
  ])('fails the run on %s with %s and one next action, without a retry', async (fixture, code, requests) => {
    process.env[KEY_ENV] = KEY;
    const engine = openTestEngine('sqlite', weatherApp({ count: 0 }));
    const before = requestsOf(route).length;
    server.enqueue(route, fixture);

    const view = await engine.start(agent(provider), { runId: 'run-fail' });

    expect(view).toMatchObject({ status: 'failed', failure: { code } });
    expect(requestsOf(route).length - before).toBe(requests);
    const failed = ofType(await allEvents(engine, 'run-fail'), 'Failed');
    expect(failed.map((e) => e.data)).toEqual([{ code, turn: 1 }]);
    expect(ofType(await allEvents(engine, 'run-fail'), 'ModelRetried')).toHaveLength(0);
  });

  it.each([
    [route === 'anthropic' ? 'error-529' : 'error-503', 'model_unavailable'],
    ['error-429', 'model_rate_limited'],
    ['disconnect', 'model_network_failed'],
  ])('fails with the last failure once its attempts are used up (%s: %s)', async (fixture, code) => {
    process.env[KEY_ENV] = KEY;
    const engine = openTestEngine('sqlite', weatherApp({ count: 0 }));
    const before = requestsOf(route).length;
    for (let i = 0; i < 3; i++) server.enqueue(route, fixture);

    const view = await engine.start(agent(provider), { runId: 'run-down' });

    expect(view).toMatchObject({ status: 'failed', failure: { code, next_action: expect.any(String) } });
    expect(requestsOf(route).length - before).toBe(3);
    expect(ofType(await allEvents(engine, 'run-down'), 'ModelRetried')).toHaveLength(2);
  });
});

describe('credentials, budgets and identity', () => {
  it('refuses a run whose key variable is not set before anything is stored', async () => {
    const engine = openTestEngine('sqlite', weatherApp({ count: 0 }));
    const e = await expectCode(engine.start(agent('openai'), { runId: 'run-nokey' }), 'model_credentials_missing');
    expect(e.nextAction).toContain(KEY_ENV);
    expect(JSON.stringify(e.toJSON())).not.toContain(KEY);
    expect(await engine.list()).toEqual([]);
  });

  it('stops a run at the turn boundary where its token budget is used up, before another model call', async () => {
    process.env[KEY_ENV] = KEY;
    const engine = openTestEngine('sqlite', weatherApp({ count: 0 }));
    const before = requestsOf('openai-chat').length;
    server.enqueue('openai-chat', 'tool-call-stream');

    const view = await engine.start(agent('openai-compatible', { budget: 50 }), { runId: 'run-budget' });

    expect(view).toMatchObject({ status: 'failed', completed_turns: 1, failure: { code: 'token_budget_exhausted' } });
    expect(requestsOf('openai-chat').length - before).toBe(1);
    expect(ofType(await allEvents(engine, 'run-budget'), 'Failed').map((e) => e.data)).toEqual([
      { code: 'token_budget_exhausted', completed_turns: 1 },
    ]);
  });

  it('puts the provider package and the model id in the plan identity, computed without a key', () => {
    const app = weatherApp({ count: 0 });
    const a = app.planIdentityFor(agent('openai'));
    const b = app.planIdentityFor(agent('openai', { modelId: 'another-model' }));
    const provider = a.components.find((c) => c.kind === 'provider')!;
    expect(provider).toMatchObject({ name: 'openai/fixture-model', module: '@ai-sdk/openai' });
    expect(provider.version).toMatch(/^3\./);
    expect(a.fingerprint).not.toBe(b.fingerprint);
    expect(app.planIdentityFor(agent('openai')).fingerprint).toBe(a.fingerprint);
  });
});

describe('streamed text while a model call is held', () => {
  it('shows in the run log before the response is recorded, from a latch (no timing)', async () => {
    process.env[KEY_ENV] = KEY;
    const engine = openTestEngine('sqlite', weatherApp({ count: 0 }));
    const held = server.enqueue('anthropic', { name: 'text-stream', holdAfterEvents: 5 });
    const gate = latch();
    const started = engine.start(agent('anthropic'), { runId: 'run-held' }).finally(gate.open);
    await held.reached;
    await expect
      .poll(async () =>
        ofType(await allEvents(engine, 'run-held'), 'ModelStreamed')
          .map((e) => e.data.text)
          .join(''),
      )
      .toMatch(/^Hello/);
    expect(gate.isOpen()).toBe(false);
    held.release();
    await started;
    expect((await engine.show('run-held')).status).toBe('completed');
  });
});

describe('a provider run moved to another root', () => {
  function world() {
    const base = privateDir('loopx-provider-transfer-');
    const authorityDir = join(base, 'authority');
    const open = (name: string, app: Application = weatherApp({ count: 0 })): Engine => {
      const authority = LocalRunAuthority.open({ dir: authorityDir, create: true });
      const engine = openEngine({ root: join(base, name), application: app, authority });
      transferCleanups.push(async () => {
        engine.close();
        await authority.close();
      });
      return engine;
    };
    return { open };
  }

  it('is imported with its agent file, keeps its provider and model, carries an estimated usage, and resumes at the next turn', async () => {
    process.env[KEY_ENV] = KEY;
    const w = world();
    const a = w.open('a');
    server.enqueue('openai-chat', 'tool-call-stream');
    const started = await a.start(agent('openai-compatible'), {
      runId: 'run-moves',
      input: 'Weather?',
      suspendAfterTurns: 1,
    });
    expect(started).toMatchObject({ status: 'suspended', completed_turns: 1 });
    const signed = await a.exportEnvelope('run-moves');

    const b = w.open('b');
    // The snapshot does not hold the endpoint, the key variable or a budget: the agent file is needed.
    expect((await expectCode(b.importSnapshot(signed.bytes), 'import_definition_unknown')).nextAction).toContain(
      '--agent',
    );
    await expectCode(
      b.importSnapshot(signed.bytes, { agent: agent('openai-compatible', { modelId: 'another-model' }) }),
      'import_definition_mismatch',
    );
    const imported = await b.importSnapshot(signed.bytes, { agent: agent('openai-compatible') });
    expect(imported).toMatchObject({ status: 'suspended', completed_turns: 1 });
    // The provider's figures stayed behind; the history's estimate stands in for them.
    expect(started.usage).toEqual({ input_tokens: 61, output_tokens: 19, estimated: false });
    const shown = await b.show('run-moves');
    expect(shown.usage).toMatchObject({ estimated: true });
    expect(shown.usage!.output_tokens).toBeGreaterThan(0);

    server.enqueue('openai-chat', 'text-stream');
    const before = requestsOf('openai-chat').length;
    const resumed = await b.resume('run-moves');
    expect(resumed).toMatchObject({ status: 'completed', completed_turns: 2 });
    expect(resumed.usage!.input_tokens).toBe(shown.usage!.input_tokens + 14);
    expect(requestsOf('openai-chat').length - before).toBe(1);
    const tail: RunEvent[] = [];
    for await (const e of b.events('run-moves', { after: imported.last_sequence })) tail.push(e);
    expect(tail.map((e) => e.type)).not.toContain('RunStarted');
    expect(ofType(tail, 'ModelResponded').map((e) => e.data.turn)).toEqual([2]);
  });

  it('is refused before anything launches where another provider package version would answer it', async () => {
    process.env[KEY_ENV] = KEY;
    const w = world();
    const a = w.open('a');
    server.enqueue('openai-chat', 'tool-call-stream');
    await a.start(agent('openai-compatible'), { runId: 'run-pinned', suspendAfterTurns: 1 });
    const signed = await a.exportEnvelope('run-pinned');
    const sdk = SDK_PROVIDER_KINDS.find((k) => k.name === 'openai-compatible')!;
    const upgraded: ModelProviderKind = { ...sdk, identity: (model) => ({ ...sdk.identity(model), version: '9.9.9' }) };
    const app = defineApplication({
      compatibilityIdentity: 'test.providers/1',
      providerKinds: [upgraded],
      toolPlans: [
        {
          id: PLAN,
          tools: [
            makeTool('get_weather', () => ({}), {
              mutating: true,
              inputSchema: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } } },
            }),
          ],
        },
      ],
      components: [componentIdentity('stage', 'test-stage')],
    });
    const b = w.open('b', app);
    const before = server.requests.length;

    await expectCode(
      b.importSnapshot(signed.bytes, { agent: agent('openai-compatible') }),
      'snapshot_component_mismatch',
    );

    expect(server.requests.length).toBe(before);
    expect(await b.list()).toEqual([]);
  });
});
