/**
 * The goal-finisher provider (`demo.goal-finisher`): a model-free agent that finishes a Goal's Todos
 * one per turn, deciding from the newest `todo.list` result in the run's history. Its answers are
 * checked on hand-built histories (what it chooses, what it skips, how it ends, how it fails), then
 * on real Goal work runs in a root: every open and blocked Todo ends done, done and deferred ones
 * are left alone, a Goal with nothing to do is not touched.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LOOPX_VERSION } from '../../src/core/index.js';
import {
  builtinApplication,
  defineApplication,
  goalWorkToolPlan,
  loadAgentFile,
  parseAgentDefinition,
  type Message,
} from '../../src/engine/index.js';
import { GOAL_FINISHER_PROVIDER, goalFinisherProvider } from '../../src/engine/providers/goal-finisher.js';
import type { ModelRequest, ModelResponse } from '../../src/engine/providers/provider.js';
import type { ToolDefinition } from '../../src/engine/tools.js';
import {
  addTodo,
  createGoal,
  initRoot,
  listTodos,
  runGoalWork,
  updateTodo,
  withRootEngine,
} from '../../src/runtime/index.js';
import { REPO, tempRoot } from '../support/cli.js';

const AGENT_FILE = join(REPO, 'examples/agents/goal-finisher.json');
const NOTE = 'finished by demo.goal-finisher';
const GOAL_TOOLS: readonly ToolDefinition[] = goalWorkToolPlan('/nonexistent').tools.map((t) => t.definition);

type Todo = { todo_id: string; title: string; status: string; note?: string | null };

/** A history built turn by turn, with the shapes and ids the engine records. */
class History {
  readonly messages: Message[] = [{ id: 'r/m0', role: 'system', parts: [{ type: 'text', text: 'Finish the Goal.' }] }];
  #turn = 0;
  /** One assistant turn: its calls, each answered `ok` with `result` or `error` with `{ error: code }`. */
  turn(calls: ReadonlyArray<{ tool: string; args: object; ok?: unknown; error?: string }>): this {
    const t = ++this.#turn;
    const callId = (i: number) => `r/t${t}/k${i}`;
    this.messages.push({
      id: `r/t${t}/m0`,
      role: 'assistant',
      parts: calls.map((c, i) => ({
        type: 'tool_call',
        callId: callId(i),
        toolName: c.tool,
        argumentsJson: JSON.stringify(c.args),
      })),
    });
    calls.forEach((c, i) =>
      this.messages.push({
        id: `r/t${t}/m${i + 1}`,
        role: 'tool',
        parts: [
          {
            type: 'tool_result',
            callId: callId(i),
            toolName: c.tool,
            status: c.error === undefined ? 'ok' : 'error',
            resultJson: JSON.stringify(c.error === undefined ? c.ok : { error: c.error, message: 'refused' }),
          },
        ],
      }),
    );
    return this;
  }
  list(todos: readonly Todo[]): this {
    return this.turn([{ tool: 'todo.list', args: {}, ok: { todos: todos.map((t) => ({ note: null, ...t })) } }]);
  }
}

const todo = (todo_id: string, status: string): Todo => ({ todo_id, title: `Title of ${todo_id}`, status });
const update = (todo_id: string) => ({ tool: 'todo.update', args: { todo_id, status: 'done', note: NOTE } });

const ask = (messages: readonly Message[], tools: readonly ToolDefinition[] = GOAL_TOOLS): Promise<ModelResponse> => {
  const request: ModelRequest = {
    runId: 'r',
    turn: 1,
    modelCallId: 'r/t1/c0',
    model: { provider: GOAL_FINISHER_PROVIDER, modelId: 'goal-finisher-v1' },
    messages,
    tools,
  };
  return goalFinisherProvider('demo.goal-finisher').generate(request);
};

const callsOf = (r: ModelResponse) => r.toolCalls.map((c) => [c.toolName, c.arguments]);

describe('the goal-finisher answers from the run history', () => {
  it("first lists the Goal's Todos", async () => {
    const r = await ask(new History().messages);
    expect(callsOf(r)).toEqual([['todo.list', {}]]);
  });

  it('marks the first Todo still to do (open or blocked) done and lists again, leaving done and deferred ones alone', async () => {
    const h = new History().list([
      todo('t1', 'done'),
      todo('t2', 'deferred'),
      todo('t3', 'blocked'),
      todo('t4', 'open'),
    ]);
    const r = await ask(h.messages);
    expect(callsOf(r)).toEqual([
      ['todo.update', { todo_id: 't3', status: 'done', note: NOTE }],
      ['todo.list', {}],
    ]);
  });

  it('decides from the newest todo.list result, the same way every time the same history is asked', async () => {
    const h = new History()
      .list([todo('t1', 'open'), todo('t5', 'open')])
      .turn([update('t1'), { tool: 'todo.list', args: {}, ok: { todos: [todo('t1', 'done'), todo('t5', 'open')] } }]);
    const first = await ask(h.messages);
    expect(callsOf(first)).toEqual([
      ['todo.update', { todo_id: 't5', status: 'done', note: NOTE }],
      ['todo.list', {}],
    ]);
    // A fresh provider (as in another process) given the same history answers the same.
    expect(await ask(structuredClone(h.messages))).toEqual(first);
    // The Goal changed under the run (t5 finished elsewhere, t6 added): the newest list decides.
    h.turn([
      { tool: 'todo.list', args: {}, ok: { todos: [todo('t1', 'done'), todo('t5', 'done'), todo('t6', 'open')] } },
    ]);
    expect(callsOf(await ask(h.messages))[0]).toEqual(['todo.update', { todo_id: 't6', status: 'done', note: NOTE }]);
  });

  it('ends with a final answer naming the Todos it marked done, and no tool call', async () => {
    const h = new History()
      .list([todo('t2', 'open'), todo('t3', 'blocked')])
      .turn([update('t2'), { tool: 'todo.list', args: {}, ok: { todos: [todo('t2', 'done'), todo('t3', 'blocked')] } }])
      .turn([update('t3'), { tool: 'todo.list', args: {}, ok: { todos: [todo('t2', 'done'), todo('t3', 'done')] } }]);
    const r = await ask(h.messages);
    expect(r).toEqual({ text: 'Marked 2 Todos done: t2, t3.', toolCalls: [] });
  });

  it('with nothing left to do it ends at once', async () => {
    const r = await ask(new History().list([todo('t1', 'done'), todo('t2', 'deferred')]).messages);
    expect(r).toEqual({ text: 'Nothing left to do.', toolCalls: [] });
    expect(await ask(new History().list([]).messages)).toEqual({ text: 'Nothing left to do.', toolCalls: [] });
  });

  it('does not try a refused Todo again, and its answer says which one was refused', async () => {
    const h = new History().list([todo('t1', 'open'), todo('t2', 'open')]).turn([
      { ...update('t1'), error: 'lease_held' },
      { tool: 'todo.list', args: {}, ok: { todos: [todo('t1', 'open'), todo('t2', 'open')] } },
    ]);
    expect(callsOf(await ask(h.messages))[0]).toEqual(['todo.update', { todo_id: 't2', status: 'done', note: NOTE }]);
    h.turn([update('t2'), { tool: 'todo.list', args: {}, ok: { todos: [todo('t1', 'open'), todo('t2', 'done')] } }]);
    expect(await ask(h.messages)).toEqual({
      text: 'Marked 1 Todo done: t2. Could not finish: t1 (lease_held).',
      toolCalls: [],
    });
  });

  it('a todo.list that failed fails the run typed: it never guesses the Todos', async () => {
    const h = new History().turn([{ tool: 'todo.list', args: {}, error: 'goal_lifetime_superseded' }]);
    await expect(ask(h.messages)).rejects.toMatchObject({
      code: 'goal_finisher_list_failed',
      details: { tool_error: 'goal_lifetime_superseded' },
    });
  });

  it('a history whose todo.list result is not a list of Todos is refused, typed', async () => {
    const h = new History().turn([{ tool: 'todo.list', args: {}, ok: { items: [] } }]);
    await expect(ask(h.messages)).rejects.toMatchObject({ code: 'goal_finisher_history_invalid' });
  });

  it('refuses a run that does not offer the Goal work tools', async () => {
    const mathOnly = builtinApplication('/nonexistent')
      .toolPlans.declared('loopx.builtin.v1')!
      .tools.map((t) => t.definition);
    await expect(ask(new History().messages, mathOnly)).rejects.toMatchObject({ code: 'goal_finisher_tools_missing' });
  });
});

describe('the goal-finisher agent definition and identity', () => {
  it('the shipped demo.goal-finisher uses the goal-finisher provider and the Goal work plan, with turns to spare', () => {
    const def = loadAgentFile(AGENT_FILE);
    expect(def).toMatchObject({
      id: 'demo.goal-finisher',
      model: { provider: 'goal-finisher' },
      toolPlan: 'loopx.goal-work.v1',
      turnLimit: 16,
    });
    expect(def.script).toBeUndefined();
  });

  it('a goal-finisher agent with a script, a base URL or a key variable is refused', () => {
    const file = JSON.parse(readFileSync(AGENT_FILE, 'utf8')) as Record<string, unknown> & {
      model: Record<string, unknown>;
    };
    for (const bad of [
      { ...file, script: [{ text: 'hi' }] },
      { ...file, model: { ...file.model, base_url: 'http://127.0.0.1:1/v1' } },
      { ...file, model: { ...file.model, api_key_env: 'OPENAI_API_KEY' } },
    ]) {
      expect(() => parseAgentDefinition(bad)).toThrow(expect.objectContaining({ code: 'agent_definition_invalid' }));
    }
  });

  it("a run records the goal-finisher's identity, hashing its own source, in any full application without declaring it", () => {
    const def = loadAgentFile(AGENT_FILE);
    const source = fileURLToPath(new URL('../../src/engine/providers/goal-finisher.ts', import.meta.url));
    const expected = {
      kind: 'provider',
      name: 'goal-finisher',
      module: 'loopx/engine/providers/goal-finisher',
      version: LOOPX_VERSION,
      sourceSha256: createHash('sha256').update(readFileSync(source)).digest('hex'),
    };
    expect(builtinApplication('/nonexistent').staticComponentsFor(def)).toContainEqual(expected);
    const own = defineApplication({
      compatibilityIdentity: 'test.own/1',
      toolPlans: [goalWorkToolPlan('/nonexistent')],
    });
    expect(own.staticComponentsFor(def)).toContainEqual(expected);
    expect(own.providerFor(def).name).toBe('goal-finisher');
    // Not a kind whose settings live only in the agent file: an import rebuilds its definition from the snapshot.
    expect(own.providerKind('goal-finisher')).toBe(false);
  });
});

describe('a Goal work run of demo.goal-finisher', () => {
  /** A root with Goal `launch` holding these Todos (added in order, then set to their status). */
  async function goalWith(
    todos: ReadonlyArray<readonly [id: string, status: 'open' | 'done' | 'blocked' | 'deferred']>,
  ): Promise<string> {
    const root = tempRoot('loopx-finisher-');
    initRoot(root);
    await createGoal(root, 'launch', 'Ship the launch post');
    for (const [id] of todos)
      await addTodo(root, 'launch', { operation_id: `add-${id}`, todo_id: id, title: `Title of ${id}` });
    for (const [id, status] of todos) {
      if (status !== 'open')
        await updateTodo(root, 'launch', {
          operation_id: `set-${id}`,
          todo_id: id,
          status,
          note: 'set by the test',
          lease_owner: 'operator:test',
        });
    }
    return root;
  }

  async function finish(root: string) {
    const agent = loadAgentFile(AGENT_FILE);
    return withRootEngine({ root, authorityDir: join(dirname(root), 'authority') }, async (engine) => {
      const { run } = await runGoalWork({ root, goalId: 'launch', agent, engine });
      const messages = await engine.messages(run.run_id);
      const updated = messages
        .flatMap((m) => m.parts)
        .flatMap((p) =>
          p.type === 'tool_call' && p.toolName === 'todo.update'
            ? [JSON.parse(p.argumentsJson) as { todo_id: string }]
            : [],
        )
        .map((a) => a.todo_id);
      const last = messages.at(-1)!;
      const answer =
        last.role === 'assistant' && last.parts.every((p) => p.type === 'text')
          ? last.parts.map((p) => (p as { text: string }).text).join('')
          : undefined;
      return { run, updated, answer };
    });
  }

  const statuses = async (root: string) =>
    (await listTodos(root, 'launch')).map((t) => [t.todo_id, t.status, t.note ?? null]);

  it('marks every open and blocked Todo done and ends with its answer; done and deferred ones are left as they were', async () => {
    const root = await goalWith([
      ['t1', 'open'],
      ['t2', 'blocked'],
      ['t3', 'done'],
      ['t4', 'deferred'],
      ['t5', 'open'],
    ]);
    const { run, updated, answer } = await finish(root);
    expect(run).toMatchObject({ status: 'completed', completed_turns: 5, failure: null });
    expect(updated).toEqual(['t1', 't2', 't5']);
    expect(answer).toBe('Marked 3 Todos done: t1, t2, t5.');
    expect(await statuses(root)).toEqual([
      ['t1', 'done', NOTE],
      ['t2', 'done', NOTE],
      ['t3', 'done', 'set by the test'],
      ['t4', 'deferred', 'set by the test'],
      ['t5', 'done', NOTE],
    ]);
  }, 60_000);

  it('updates exactly the Todos the Goal has open: t7 and t9', async () => {
    const root = await goalWith([
      ['t7', 'open'],
      ['t8', 'done'],
      ['t9', 'open'],
    ]);
    const { run, updated, answer } = await finish(root);
    expect(run.status).toBe('completed');
    expect(updated).toEqual(['t7', 't9']);
    expect(answer).toBe('Marked 2 Todos done: t7, t9.');
    expect((await statuses(root)).map(([id, status]) => [id, status])).toEqual([
      ['t7', 'done'],
      ['t8', 'done'],
      ['t9', 'done'],
    ]);
  }, 60_000);

  it('with every Todo already done it changes nothing and ends after listing them', async () => {
    const root = await goalWith([
      ['t1', 'done'],
      ['t2', 'deferred'],
    ]);
    const before = await statuses(root);
    const { run, updated, answer } = await finish(root);
    expect(run).toMatchObject({ status: 'completed', completed_turns: 2 });
    expect(updated).toEqual([]);
    expect(answer).toBe('Nothing left to do.');
    expect(await statuses(root)).toEqual(before);
  }, 60_000);
});
