/**
 * What `loopx run start`, `run resume` and `work run` print of the run they drove, through the real
 * CLI: a completed run's final answer (human, and `final_answer` in --json, schema-checked), none
 * for a run that did not complete; a model endpoint that keeps failing names its host
 * (`127.0.0.1:<port>`) — never the key — and exits 5; and, on a terminal (a pseudo-terminal made
 * by util-linux `script`), the line of the model call in progress, with its attempt, erased once
 * the call ends — nothing of it when stderr is not a terminal.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelFixtureServer, type ModelFixtureServer } from '../support/model-fixture-server.js';
import { CLI, REPO, STATE_HOME, loopxAsync, tempRoot } from '../support/cli.js';

const KEY_ENV = 'LOOPX_RUN_OUTPUT_KEY';
const KEY = 'sk-run-output-never-shown-5e2a';

const SCHEMA_DIR = join(REPO, 'docs/schemas');
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as Record<string, unknown>);
function expectValid(schema: string, doc: unknown): void {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${schema}.json`)!;
  expect(validate(doc) ? [] : validate.errors, JSON.stringify(doc)).toEqual([]);
}

let server: ModelFixtureServer;
let host: string;
beforeAll(async () => {
  server = await startModelFixtureServer();
  host = new URL(server.url).host;
});
afterAll(async () => server.close());

function agentFile(root: string, name: string, doc: Record<string, unknown>): string {
  const path = join(dirname(root), `${name}.agent.json`);
  writeFileSync(
    path,
    JSON.stringify({ id: `test.${name}`, version: '1.0.0', turn_limit: 4, tool_plan: 'loopx.builtin.v1', ...doc }),
  );
  return path;
}
const compatible = (root: string) =>
  agentFile(root, 'compatible', {
    model: { provider: 'openai-compatible', model_id: 'fixture-model', base_url: server.url, api_key_env: KEY_ENV },
  });
const scripted = (root: string) =>
  agentFile(root, 'scripted', {
    model: { provider: 'scripted', model_id: 'scripted-v1' },
    script: [
      { text: 'Adding.', tool_calls: [{ name: 'math.add', arguments: { a: 2, b: 40 } }] },
      { text: 'The sum is 42.\nChecked twice.' },
    ],
  });

describe('a run’s final answer', () => {
  it('run start prints a completed run’s final answer, and --json carries it as final_answer', async () => {
    const root = tempRoot();
    server.enqueue('openai-chat', 'text-stream');
    const human = await loopxAsync(['run', 'start', '--agent', compatible(root), '--root', root], { [KEY_ENV]: KEY });
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/completed {2}turns 1\/4/);
    expect(human.stdout).toContain('  final answer:\n    Hello from the fixture.\n');

    server.enqueue('openai-chat', 'text-stream');
    const json = await loopxAsync(['run', 'start', '--agent', compatible(root), '--root', root, '--json'], {
      [KEY_ENV]: KEY,
    });
    expect(json.status, json.stderr).toBe(0);
    expect(json.json()).toMatchObject({ status: 'completed', final_answer: 'Hello from the fixture.' });
    expectValid('run-summary', json.json());
  });

  it('run resume prints it once the run completes — a multi-line answer indented — and not while the run is suspended', async () => {
    const root = tempRoot();
    const suspended = async () => {
      const started = await loopxAsync([
        'run',
        'start',
        '--agent',
        scripted(root),
        '--suspend-after-turns',
        '1',
        '--root',
        root,
        '--json',
      ]);
      expect(started.status, started.stderr).toBe(0);
      expect(started.json().status).toBe('suspended');
      expect(started.json()).not.toHaveProperty('final_answer');
      return started.json().run_id as string;
    };

    const human = await loopxAsync(['run', 'resume', await suspended(), '--root', root]);
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).toContain('  final answer:\n    The sum is 42.\n    Checked twice.\n');
    const json = await loopxAsync(['run', 'resume', await suspended(), '--root', root, '--json']);
    expect(json.json()).toMatchObject({ status: 'completed', final_answer: 'The sum is 42.\nChecked twice.' });
    expectValid('run-summary', json.json());
  });

  it('work run carries the final answer of the Goal work run it drove', async () => {
    const root = tempRoot();
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship it', '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', 'Draft', '--id', 't1', '--root', root])).status,
    ).toBe(0);
    const worker = agentFile(root, 'worker', {
      model: { provider: 'scripted', model_id: 'scripted-v1' },
      tool_plan: 'loopx.goal-work.v1',
      script: [
        { text: 'Drafting.', tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't1', status: 'done' } }] },
        { text: 'Drafted; nothing left.' },
      ],
    });
    const r = await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', worker, '--root', root, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json()).toMatchObject({
      status: 'completed',
      final_answer: 'Drafted; nothing left.',
      goal: { goal_id: 'launch' },
    });
    expectValid('work-run', r.json());
  });
});

describe('a model endpoint that keeps failing', () => {
  it('fails the run naming the endpoint’s host, never the key; exit 5, no final answer, and nothing on a stderr that is not a terminal', async () => {
    const root = tempRoot();
    // Four attempts (1 s, 2 s, 4 s apart), each answered 500.
    for (let i = 0; i < 4; i++) server.enqueue('openai-chat', 'error-500');
    const r = await loopxAsync(['run', 'start', '--agent', compatible(root), '--root', root, '--json'], {
      [KEY_ENV]: KEY,
    });

    expect(r.status).toBe(5);
    const doc = r.json();
    expectValid('run-summary', doc);
    expect(doc).toMatchObject({ status: 'failed', failure: { code: 'model_unavailable' } });
    expect(doc).not.toHaveProperty('final_answer');
    expect(doc.failure.message).toBe(
      `The openai-compatible API at ${host} kept answering 500 (unavailable or overloaded).`,
    );
    expect(r.stdout + r.stderr).not.toContain(KEY);
    expect(r.stdout).not.toContain(server.url);
    expect(r.stderr).toBe('');
    const shown = await loopxAsync(['run', 'show', doc.run_id, '--root', root]);
    expect(shown.stdout).toContain(`failed: The openai-compatible API at ${host} kept answering 500`);
  }, 60_000);
});

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout?.includes('util-linux') ?? false;
if (process.env.CI === 'true' && !hasScript)
  throw new Error('CI=true but no util-linux `script` to make a pseudo-terminal');

describe.skipIf(!hasScript)('on a terminal', () => {
  it('shows the model call in progress on stderr — its host, then its second attempt — and erases it before the run is printed', async () => {
    const root = tempRoot();
    server.enqueue('openai-chat', 'error-500');
    const held = server.enqueue('openai-chat', { name: 'text-stream', holdAfterEvents: 0 });
    const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
    const command = [process.execPath, ...CLI, 'run', 'start', '--agent', compatible(root), '--root', root]
      .map(quote)
      .join(' ');
    // `script` runs the command on a pseudo-terminal (stdout and stderr both) and copies what it writes.
    const child = spawn('script', ['-qefc', command, '/dev/null'], {
      cwd: REPO,
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME, [KEY_ENV]: KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));

    await held.reached;
    await expect.poll(() => out, { timeout: 30_000 }).toContain(`asking the model at ${host}… (attempt 2 of 4,`);
    expect(out).toContain(`the model at ${host} failed (model_unavailable); asking again in 1 s (attempt 2 of 4,`);
    expect(out).not.toContain('run run_');
    held.release();

    expect(await closed).toBe(0);
    const tail = out.slice(out.lastIndexOf('asking the model'));
    // Erased (carriage return, erase line) before the run's own lines.
    expect(tail).toMatch(/^asking the model[^\n]*\r\x1b\[2Krun run_[0-9a-f]+ {2}completed/);
    expect(out).toContain('final answer:');
    expect(out).not.toContain(KEY);
  }, 60_000);
});
