/**
 * A model's answer shows on the run page as it arrives, end to end in headless Chromium against a
 * real daemon: a CLI process drives an openai-compatible agent (the real provider package) against
 * the local wire-fixture server, whose stream is held after its first words by a latch; the page
 * shows those words while the call is in flight, then the completed run without a reload. A
 * provider failure shows its one next action on the page.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATE_HOME, cliFromSources, loopxAsync, tempRoot } from '../support/cli.js';
import { startModelFixtureServer, type ModelFixtureServer } from '../support/model-fixture-server.js';
import { axeViolations } from './support/axe.js';
import { hasChromium, type BrowserSession } from './support/browser.js';
import { signedInDaemon, type SignedInDaemon } from './support/ui.js';

cliFromSources();

const AUTHORITY_DIR = join(STATE_HOME, 'loopx', 'run-authority');
const KEY_ENV = 'LOOPX_E2E_STREAM_KEY';
const BOUND_MS = 60_000;

let server: ModelFixtureServer;
let root: string;
let agent: string;
let served: SignedInDaemon;
let daemon: SignedInDaemon['daemon'];
let session: BrowserSession;

const runIds = async (): Promise<string[]> =>
  ((await loopxAsync(['run', 'list', '--root', root, '--json'])).json().runs as { run_id: string }[]).map(
    (r) => r.run_id,
  );

if (process.env.CI === 'true' && !hasChromium())
  throw new Error("CI=true but no chromium binary: install Debian's chromium (.ci/run does)");
describe.skipIf(!hasChromium())('a model answer streaming on the run page', () => {
  beforeAll(async () => {
    server = await startModelFixtureServer();
    root = tempRoot('loopx-e2e-stream-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    agent = join(dirname(root), 'streaming.agent.json');
    writeFileSync(
      agent,
      JSON.stringify({
        id: 'e2e.streaming',
        version: '1.0.0',
        model: { provider: 'openai-compatible', model_id: 'fixture-model', base_url: server.url, api_key_env: KEY_ENV },
        turn_limit: 2,
        tool_plan: 'loopx.builtin.v1',
      }),
    );
    served = await signedInDaemon(root, AUTHORITY_DIR);
    ({ daemon, session } = served);
  }, 240_000);

  afterAll(async () => {
    await served?.close();
    await server?.close();
    if (root) rmSync(dirname(root), { recursive: true, force: true });
  });

  it(
    'shows the first words while the call is in flight, then the completed run, without a reload',
    async () => {
      const { page } = session;
      // Held after the role chunk and "Hello": the CLI process waits on the rest.
      const held = server.enqueue('openai-chat', { name: 'text-stream', holdAfterEvents: 3 });
      const before = new Set(await runIds());
      const driving = loopxAsync(['run', 'start', '--agent', agent, '--root', root, '--json'], {
        [KEY_ENV]: 'sk-e2e-stream',
      });
      await held.reached;
      await expect
        .poll(async () => (await runIds()).filter((id) => !before.has(id)).length, { timeout: BOUND_MS })
        .toBe(1);
      const runId = (await runIds()).find((id) => !before.has(id))!;

      await page.goto(`${daemon.url}#/runs/${runId}`);
      await page.getByRole('heading', { level: 1, name: `Run ${runId}` }).waitFor();
      await page.evaluate('window.__sameDocument = true');
      await expect
        .poll(() => page.getByTestId('run-streaming-text').textContent(), { timeout: BOUND_MS })
        .toContain('Hello');
      await page.getByRole('heading', { name: 'The model is answering (turn 1)' }).waitFor();
      expect(await axeViolations(page), 'the streaming answer').toEqual([]);

      held.release();
      const done = await driving;
      expect(done.status, done.stderr).toBe(0);
      await page.getByTestId('run-status').filter({ hasText: 'completed' }).waitFor({ timeout: BOUND_MS });
      await expect.poll(() => page.getByTestId('run-streaming').count(), { timeout: BOUND_MS }).toBe(0);
      expect(await page.getByTestId('run-usage').textContent()).toBe('20 (14 in, 6 out)');
      expect(await page.evaluate('window.__sameDocument === true'), 'no reload').toBe(true);
    },
    BOUND_MS * 3,
  );

  it(
    'shows a provider failure with what to do',
    async () => {
      const { page } = session;
      server.enqueue('openai-chat', 'error-401');
      const r = await loopxAsync(['run', 'start', '--agent', agent, '--root', root, '--json'], {
        [KEY_ENV]: 'sk-e2e-stream',
      });
      const runId = r.json().run_id as string;

      await page.goto(`${daemon.url}#/runs/${runId}`);
      await page.getByTestId('run-status').filter({ hasText: 'failed' }).waitFor({ timeout: BOUND_MS });
      expect(await page.getByTestId('run-failure-next').textContent()).toContain(`put a valid API key in ${KEY_ENV}`);
    },
    BOUND_MS * 2,
  );
});
