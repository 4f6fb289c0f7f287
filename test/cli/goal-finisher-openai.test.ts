/**
 * The example agent for a real model doing Goal work (examples/agents/openai-goal-finisher.json),
 * run by `loopx work run` through the real `@ai-sdk/openai` package against the recorded-fixture
 * model server (Responses API streams written by hand: the model lists the Todos, marks the open
 * and blocked ones done, then answers). Every Todo ends done through the work owner, the run
 * completes, the model was shown the Goal's state by its own todo.list call, and the key never
 * reaches the root. The fixture server refuses a tool name the real API would refuse, so the run
 * completing proves the Goal work tools go out (and come back) as `todo_list`, `todo_update`,
 * `webhook_deliver` while the run records loopx's own names.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, loopxAsync, tempRoot, todoStatuses } from '../support/cli.js';
import { startModelFixtureServer, type ModelFixtureServer } from '../support/model-fixture-server.js';

const KEY = 'sk-fixture-goal-finisher-0123';
let server: ModelFixtureServer;
beforeAll(async () => {
  server = await startModelFixtureServer();
});
afterAll(() => server.close());

/** The shipped example, unchanged but for its base URL: the fixture server's. */
function exampleAgainstFixtures(): string {
  const example = JSON.parse(readFileSync(join(REPO, 'examples/agents/openai-goal-finisher.json'), 'utf8')) as {
    model: Record<string, unknown>;
  };
  const path = join(mkdtempSync(join(tmpdir(), 'loopx-finisher-openai-')), 'agent.json');
  writeFileSync(
    path,
    JSON.stringify({ ...example, $schema: undefined, model: { ...example.model, base_url: server.url } }),
  );
  return path;
}

const everyFile = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? everyFile(join(dir, n)) : [join(dir, n)]));

interface ResponsesBody {
  instructions?: string;
  input: Array<{
    type?: string;
    role?: string;
    content?: unknown;
    call_id?: string;
    name?: string;
    arguments?: string;
    output?: unknown;
  }>;
  tools: Array<{ type: string; name: string }>;
  stream: boolean;
}

describe('examples/agents/openai-goal-finisher.json', () => {
  it('asks for the OpenAI key by name and the Goal work tools', () => {
    const example = JSON.parse(readFileSync(join(REPO, 'examples/agents/openai-goal-finisher.json'), 'utf8'));
    expect(example).toMatchObject({
      model: { provider: 'openai', api_key_env: 'OPENAI_API_KEY' },
      tool_plan: 'loopx.goal-work.v1',
    });
    expect(example.model).not.toHaveProperty('base_url');
  });

  it('a model that lists the Todos, marks the open and blocked ones done and answers finishes the Goal through loopx work run', async () => {
    const root = tempRoot('loopx-finisher-openai-');
    const at = ['--root', root, '--json'];
    expect((await loopxAsync(['init', ...at])).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at])).status).toBe(0);
    for (const [id, title] of [
      ['t1', 'Draft the outline'],
      ['t2', 'Review with design'],
      ['t3', 'Publish the post'],
    ] as const) {
      expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--id', id, ...at])).status).toBe(
        0,
      );
    }
    expect((await loopxAsync(['todo', 'update', 't2', '--goal', 'launch', '--status', 'done', ...at])).status).toBe(0);
    expect((await loopxAsync(['todo', 'update', 't3', '--goal', 'launch', '--status', 'blocked', ...at])).status).toBe(
      0,
    );

    server.enqueue('openai-responses', 'goal-finisher-list');
    server.enqueue('openai-responses', 'goal-finisher-update');
    server.enqueue('openai-responses', 'goal-finisher-answer');
    // Async: this process serves the model while the CLI child drives the run.
    const run = await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', exampleAgainstFixtures(), ...at], {
      OPENAI_API_KEY: KEY,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ status: 'completed', completed_turns: 3, failure: null });

    const todos = (await loopxAsync(['todo', 'list', '--goal', 'launch', ...at])).json().todos as {
      todo_id: string;
      status: string;
      note: string | null;
    }[];
    expect(todos.map((t) => [t.todo_id, t.status, t.note])).toEqual([
      ['t1', 'done', 'outline drafted'],
      ['t2', 'done', null],
      ['t3', 'done', 'published after the review'],
    ]);
    expect((await todoStatuses('launch', at)).every(([, s]) => s === 'done')).toBe(true);

    const answered = (await loopxAsync(['run', 'events', run.json().run_id, ...at])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; data: { text?: string; tool_calls?: { tool_name: string }[] } })
      .filter((e) => e.type === 'ModelResponded')
      .map((e) => [e.data.text, e.data.tool_calls!.map((c) => c.tool_name)]);
    expect(answered).toEqual([
      ['', ['todo.list']],
      ['', ['todo.update', 'todo.update']],
      ['Marked t1 and t3 done; no Todo is left open.', []],
    ]);

    // Three streamed calls to the Responses API, with the key from the environment and the Goal work
    // tools under the names the API accepts; the history's earlier calls under the same names.
    expect(server.requests.map((r) => [r.path, r.fixture])).toEqual([
      ['/v1/responses', 'goal-finisher-list'],
      ['/v1/responses', 'goal-finisher-update'],
      ['/v1/responses', 'goal-finisher-answer'],
    ]);
    const bodies = server.requests.map((r) => r.body as ResponsesBody);
    for (const [i, r] of server.requests.entries()) {
      expect(r.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(bodies[i]!.stream).toBe(true);
      expect(bodies[i]!.tools.map((t) => t.name).sort()).toEqual(['todo_list', 'todo_update', 'webhook_deliver']);
    }
    expect(bodies[2]!.input.filter((item) => item.type === 'function_call').map((item) => item.name)).toEqual([
      'todo_list',
      'todo_update',
      'todo_update',
    ]);
    expect(JSON.stringify(bodies[0]!.input)).toContain('First list the Todos with the todo list tool');
    // The model's second call was shown the Goal's state as its todo.list returned it.
    const listed = bodies[1]!.input.find((item) => item.type === 'function_call_output');
    const shown = JSON.parse(typeof listed?.output === 'string' ? listed.output : JSON.stringify(listed?.output)) as {
      todos: { todo_id: string; status: string }[];
    };
    expect(shown.todos.map((t) => [t.todo_id, t.status])).toEqual([
      ['t1', 'open'],
      ['t2', 'done'],
      ['t3', 'blocked'],
    ]);
    expect(bodies[2]!.input.filter((item) => item.type === 'function_call_output')).toHaveLength(3);

    // The key is read from the environment of the process that drove the run, and kept nowhere.
    for (const f of everyFile(root)) expect(readFileSync(f).includes(KEY), f).toBe(false);
  }, 90_000);
});
