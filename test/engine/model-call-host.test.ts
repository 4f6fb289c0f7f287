/**
 * A model call names the endpoint it asks: a failed run's message names the host of the agent's
 * base URL (`127.0.0.1:<port>`) — never the URL's path, never the key — and while the call is in
 * progress it reports each attempt, each retry's wait and its end, with that host, on the
 * diagnostics channel the CLI shows on a terminal. The real provider packages against the local
 * wire-fixture server; the failure classification also on its own, for the provider defaults.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { APICallError } from '@ai-sdk/provider';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, defineApplication, type Application } from '../../src/engine/index.js';
import { MODEL_CALL_CHANNEL, type ModelCallReport } from '../../src/engine/model-call.js';
import { SDK_PROVIDER_KINDS } from '../../src/engine/providers/catalog.js';
import { classifyModelError, endpointHostOf, hostOf } from '../../src/engine/providers/failures.js';
import { MODEL_CALL_CHANNEL as CLI_MODEL_CALL_CHANNEL } from '../../src/cli/progress.js';
import {
  startModelFixtureServer,
  type FixtureRoute,
  type ModelFixtureServer,
} from '../support/model-fixture-server.js';
import { componentIdentity, makeTool, openTestEngine } from './engine-support.js';

const KEY_ENV = 'LOOPX_TEST_HOST_KEY';
const KEY = 'sk-test-host-never-shown-71c2';
const PLAN = 'test.host';

let server: ModelFixtureServer;
let host: string;
beforeAll(async () => {
  server = await startModelFixtureServer();
  host = new URL(server.url).host;
});
afterAll(async () => server.close());
afterEach(() => {
  delete process.env[KEY_ENV];
});

const app = (): Application =>
  defineApplication({
    compatibilityIdentity: 'test.host/1',
    providerKinds: SDK_PROVIDER_KINDS,
    toolPlans: [{ id: PLAN, tools: [makeTool('noop', () => ({}))] }],
    components: [componentIdentity('stage', 'test-stage')],
    modelRetry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
  });

const agent = (provider: string) =>
  defineAgent({
    id: `test.host.${provider}`,
    version: '1.0.0',
    model: { provider, modelId: 'fixture-model', baseUrl: server.url, apiKeyEnv: KEY_ENV },
    turnLimit: 2,
    toolPlan: PLAN,
  });

/** The reports published on the model-call channel while `fn` runs. */
async function reportsDuring<T>(fn: () => Promise<T>): Promise<{ result: T; reports: ModelCallReport[] }> {
  const reports: ModelCallReport[] = [];
  const onReport = (m: unknown) => reports.push(m as ModelCallReport);
  subscribe(MODEL_CALL_CHANNEL, onReport);
  try {
    return { result: await fn(), reports };
  } finally {
    unsubscribe(MODEL_CALL_CHANNEL, onReport);
  }
}

const KINDS: ReadonlyArray<{ provider: string; route: FixtureRoute; down: string }> = [
  { provider: 'openai', route: 'openai-responses', down: 'error-500' },
  { provider: 'anthropic', route: 'anthropic', down: 'error-529' },
  { provider: 'openai-compatible', route: 'openai-chat', down: 'error-500' },
];

describe.each(KINDS)('a model call of the $provider provider', ({ provider, route, down }) => {
  it('that keeps failing fails the run with a message naming the endpoint’s host, never its path or the key', async () => {
    process.env[KEY_ENV] = KEY;
    const engine = openTestEngine('sqlite', app());
    for (let i = 0; i < 3; i++) server.enqueue(route, down);

    const { result: view, reports } = await reportsDuring(() =>
      engine.start(agent(provider), { runId: `run-down-${provider}` }),
    );

    expect(view).toMatchObject({ status: 'failed', failure: { code: 'model_unavailable' } });
    expect(view.failure!.message).toContain(`The ${provider} API at ${host} kept answering`);
    expect(view.failure!.next_action).toContain(host);
    const shown = JSON.stringify(view);
    expect(shown).not.toContain(KEY);
    expect(shown).not.toContain(server.url); // the base URL with its path
    expect(shown).not.toContain(`${host}/`);
    // Each attempt as it starts, each retry's wait, then the end — with the host, for the CLI's line.
    expect(reports.map((r) => [r.phase, 'attempt' in r ? r.attempt : r.ok])).toEqual([
      ['attempt', 1],
      ['retry', 1],
      ['attempt', 2],
      ['retry', 2],
      ['attempt', 3],
      ['end', false],
    ]);
    for (const r of reports)
      expect(r).toMatchObject({ run_id: `run-down-${provider}`, turn: 1, provider, host, attempts: 3 });
    expect(reports[1]).toMatchObject({ code: 'model_unavailable', delay_ms: expect.any(Number) });
    expect(JSON.stringify(reports)).not.toContain(KEY);
  });

  it('that is refused names the host too, and one that answers reports its end as ok', async () => {
    process.env[KEY_ENV] = KEY;
    const engine = openTestEngine('sqlite', app());
    server.enqueue(route, 'error-401');
    const refused = await engine.start(agent(provider), { runId: `run-refused-${provider}` });
    expect(refused.failure).toMatchObject({
      code: 'model_auth_failed',
      message: `The ${provider} API at ${host} refused the API key.`,
    });

    server.enqueue(route, 'text-stream');
    const { result: done, reports } = await reportsDuring(() =>
      engine.start(agent(provider), { runId: `run-ok-${provider}` }),
    );
    expect(done.status).toBe('completed');
    expect(reports.map((r) => r.phase)).toEqual(['attempt', 'end']);
    expect(reports.at(-1)).toMatchObject({ phase: 'end', ok: true, host });
  });
});

describe('naming the endpoint of a failed call', () => {
  const callError = (url: string, statusCode: number | undefined) =>
    new APICallError({
      message: 'failed',
      url,
      requestBodyValues: {},
      ...(statusCode !== undefined ? { statusCode } : {}),
      isRetryable: false,
    });

  it('takes the host of the URL the provider package called: no scheme, path, query or credentials', () => {
    const f = classifyModelError(
      callError('https://user:secret@llm.example.com:8443/v1/tenant-secret/chat?key=abc', 503),
      'openai-compatible',
      undefined,
      'configured.example',
    );
    expect(f.error.message).toBe(
      'The openai-compatible API at llm.example.com:8443 kept answering 503 (unavailable or overloaded).',
    );
    expect(JSON.stringify(f.error.toJSON())).not.toMatch(/secret|tenant|key=abc|user/);
  });

  it('falls back to the agent’s endpoint for a failure that carries no URL (a broken stream, a refused connection)', () => {
    const refused = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    const f = classifyModelError(refused, 'anthropic', 'ANTHROPIC_API_KEY', 'api.anthropic.com');
    expect(f).toMatchObject({ retryable: true, error: { code: 'model_network_failed' } });
    expect(f.error.message).toBe(
      'The anthropic API at api.anthropic.com could not be reached, or the connection broke during the response.',
    );
    expect(f.error.nextAction).toContain('reaches api.anthropic.com');
  });

  it('knows the endpoint of each provider: its base_url’s host, else the package default; none for scripted', () => {
    expect(endpointHostOf({ provider: 'openai' })).toBe('api.openai.com');
    expect(endpointHostOf({ provider: 'anthropic' })).toBe('api.anthropic.com');
    expect(endpointHostOf({ provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:11434/v1' })).toBe(
      '127.0.0.1:11434',
    );
    expect(endpointHostOf({ provider: 'openai', baseUrl: 'https://gateway.example/openai/v1' })).toBe(
      'gateway.example',
    );
    expect(endpointHostOf({ provider: 'scripted' })).toBeUndefined();
    expect(hostOf('file:///etc/passwd')).toBeUndefined();
    expect(hostOf('not a url')).toBeUndefined();
  });

  it('is reported on the channel the CLI listens to', () => {
    expect(CLI_MODEL_CALL_CHANNEL).toBe(MODEL_CALL_CHANNEL);
  });
});
