/**
 * `loopx run start` with a real provider package (openai-compatible, Anthropic) against the local
 * wire-fixture server: the key read from the variable the agent file names, streamed text in `run
 * events`, usage recorded, a provider failure shown with its one next action, and a missing key
 * refused before anything is stored — the key never in the root or the command's output.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelFixtureServer, type ModelFixtureServer } from '../support/model-fixture-server.js';
import { spawn } from 'node:child_process';
import { CLI, REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

const KEY_ENV = 'LOOPX_E2E_MODEL_KEY';
const KEY = 'sk-e2e-never-stored-93b1';

let server: ModelFixtureServer;
beforeAll(async () => {
  server = await startModelFixtureServer();
});
afterAll(async () => server.close());

function agentFile(dir: string, provider: string, extra: Record<string, unknown> = {}): string {
  const path = join(dirname(dir), `${provider}.agent.json`);
  writeFileSync(
    path,
    JSON.stringify({
      id: `e2e.${provider}`,
      version: '1.0.0',
      model: { provider, model_id: 'fixture-model', base_url: server.url, api_key_env: KEY_ENV },
      turn_limit: 3,
      tool_plan: 'loopx.builtin.v1',
      ...extra,
    }),
  );
  return path;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe('loopx run start with a provider package', () => {
  it('runs an openai-compatible agent: streamed text and usage in run events, the key never stored or printed', async () => {
    const root = tempRoot();
    const agent = agentFile(root, 'openai-compatible');
    server.enqueue('openai-chat', 'text-stream');

    const started = await loopxAsync(['run', 'start', '--agent', agent, '--root', root, '--input', 'hello', '--json'], {
      [KEY_ENV]: KEY,
    });

    expect(started.stderr).toBe('');
    expect(started.status).toBe(0);
    expect(started.json()).toMatchObject({ status: 'completed', completed_turns: 1 });
    const events = await loopxAsync(['run', 'events', started.json().run_id, '--root', root, '--json']);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
    expect(
      lines
        .filter((e) => e.type === 'ModelStreamed')
        .map((e) => e.data.text)
        .join(''),
    ).toBe('Hello from the fixture.');
    expect(lines.find((e) => e.type === 'ModelResponded')?.data.usage).toEqual({
      input_tokens: 14,
      output_tokens: 6,
      source: 'provider',
    });
    expect(String(server.requests.at(-1)!.headers.authorization)).toBe(`Bearer ${KEY}`);
    for (const out of [started.stdout, events.stdout]) expect(out).not.toContain(KEY);
    for (const file of filesUnder(root)) expect(readFileSync(file).includes(KEY), file).toBe(false);
  });

  it('shows a provider failure with its one next action', async () => {
    const root = tempRoot();
    const agent = agentFile(root, 'anthropic');
    server.enqueue('anthropic', 'error-401');

    const r = await loopxAsync(['run', 'start', '--agent', agent, '--root', root], { [KEY_ENV]: KEY });

    // The run ended failed: its document is printed, and the command exits 5.
    expect(r.status).toBe(5);
    expect(r.stdout).toContain('[model_auth_failed]');
    expect(r.stdout).toContain(`next: put a valid API key in ${KEY_ENV}`);
    const runId = /run_[0-9a-f]+/.exec(r.stdout)![0];
    const shown = await loopxAsync(['run', 'show', runId, '--root', root, '--json']);
    expect(shown.json()).toMatchObject({
      status: 'failed',
      failure: { code: 'model_auth_failed', next_action: expect.stringContaining(KEY_ENV) },
    });
  });

  it('refuses a run whose key variable is not set, exit 3, before anything is stored', async () => {
    const root = tempRoot();
    const agent = agentFile(root, 'anthropic');
    const before = server.requests.length;

    const r = await loopxAsync(['run', 'start', '--agent', agent, '--root', root, '--json']);

    expect(r.status).toBe(3);
    expect(r.json()).toMatchObject({
      error: { code: 'model_credentials_missing', next_action: expect.stringContaining(KEY_ENV) },
    });
    expect(server.requests.length).toBe(before);
    expect((await loopxAsync(['run', 'list', '--root', root, '--json'])).json()).toMatchObject({ runs: [] });
  });

  it('run events --follow prints the answer as it arrives, before the response is recorded', async () => {
    const root = tempRoot();
    const agent = agentFile(root, 'openai-compatible');
    const held = server.enqueue('openai-chat', { name: 'text-stream', holdAfterEvents: 3 });
    const driving = loopxAsync(['run', 'start', '--agent', agent, '--root', root, '--json'], { [KEY_ENV]: KEY });
    await held.reached;
    let runId: string | undefined;
    await expect
      .poll(
        async () =>
          (runId = (
            (await loopxAsync(['run', 'list', '--root', root, '--json'])).json().runs as { run_id: string }[]
          )[0]?.run_id),
        { timeout: 60_000 },
      )
      .toBeDefined();

    const follower = spawn(process.execPath, [...CLI, 'run', 'events', runId!, '--follow', '--json', '--root', root], {
      cwd: REPO,
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
    });
    let out = '';
    follower.stdout.on('data', (d) => (out += d));
    const ended = new Promise<number | null>((resolve) => follower.on('close', resolve));
    // While the provider still holds the rest of the answer, the follower has printed its start.
    await expect.poll(() => out, { timeout: 60_000 }).toContain('"type":"ModelStreamed"');
    expect(out).not.toContain('"type":"ModelResponded"');
    expect(out).toContain('Hello');
    held.release();

    expect((await driving).status).toBe(0);
    expect(await ended).toBe(0);
    expect(out).toContain('"type":"Completed"');
  });
});
