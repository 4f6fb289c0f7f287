/**
 * The goal-finisher provider (`model.provider: "goal-finisher"`): a built-in agent for Goal work
 * (`loopx.goal-work.v1`) that needs no model and no network. It finishes a Goal's Todos one per
 * turn, choosing each from the Goal's state as the run's own `todo.list` results show it.
 *
 * Rules it keeps:
 * - Its answer is a function of the run's history only (the messages of the request), never of a
 *   clock, a counter or anything read outside the run, so a run resumed in another process gets
 *   exactly the answer it would have had.
 * - Without a `todo.list` result in the history it calls `todo.list`. Otherwise it reads the newest
 *   one: the first Todo listed that is still to do (not `done` or `deferred`: `open` or `blocked`)
 *   and that this run has not already tried to update is marked done with `todo.update`, followed by
 *   `todo.list` in the same turn. When none is left it answers with a final text and no tool calls:
 *   the Todos its updates finished (and those the work owner refused), or that nothing was left.
 * - A Todo whose update was refused is not tried again by the same run: a refusal never loops.
 * - It never invents state: a `todo.list` answered with an error, a history it cannot read, or a
 *   tool plan without the Goal work tools fails the run with a typed code.
 * - Its identity hashes this module's built source, so a run it started continues only under the
 *   same code.
 */
import { LOOPX_VERSION, rejected } from '../../core/index.js';
import type { ComponentIdentity, Message, ToolCallPart, ToolResultPart } from '../../snapshot/index.js';
import { sourceIdentityOf } from '../identity.js';
import type { ModelProvider, ModelRequest, ModelResponse, ModelToolCall } from './provider.js';

export const GOAL_FINISHER_PROVIDER = 'goal-finisher';

const LIST = 'todo.list';
const UPDATE = 'todo.update';
/** Statuses that need no more work (the work owner's terminal statuses). */
const FINISHED = new Set(['done', 'deferred']);

let cachedIdentity: ComponentIdentity | undefined;

/** The provider's component identity: static, from this module's built source and loopx's version. */
export const goalFinisherIdentity = (): ComponentIdentity =>
  (cachedIdentity ??= {
    kind: 'provider',
    name: GOAL_FINISHER_PROVIDER,
    module: 'loopx/engine/providers/goal-finisher',
    version: LOOPX_VERSION,
    sourceSha256: sourceIdentityOf(import.meta.url),
  });

/** The provider for one agent; `agentId` signs the note each update leaves on its Todo. */
export function goalFinisherProvider(agentId: string): ModelProvider {
  return {
    name: GOAL_FINISHER_PROVIDER,
    identity: goalFinisherIdentity(),
    async generate(request: ModelRequest): Promise<ModelResponse> {
      return nextStep(request, `finished by ${agentId}`);
    },
  };
}

interface ListedTodo {
  readonly todo_id: string;
  readonly title: string;
  readonly status: string;
}

/** What the run's history says: its calls by id, the newest `todo.list` result, and its updates' outcomes in order. */
interface Reading {
  readonly newestList: ToolResultPart | undefined;
  readonly updates: ReadonlyArray<{ readonly todoId: string; readonly result: ToolResultPart | undefined }>;
}

function read(messages: readonly Message[]): Reading {
  const results = new Map<string, ToolResultPart>();
  let newestList: ToolResultPart | undefined;
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type !== 'tool_result') continue;
      results.set(p.callId, p);
      if (p.toolName === LIST) newestList = p;
    }
  }
  const updates = messages
    .flatMap((m) => (m.role === 'assistant' ? m.parts : []))
    .filter((p): p is ToolCallPart => p.type === 'tool_call' && p.toolName === UPDATE)
    .map((call) => ({ todoId: todoIdOf(call), result: results.get(call.callId) }));
  return { newestList, updates };
}

const historyInvalid = (why: string) =>
  rejected('goal_finisher_history_invalid', `The goal-finisher cannot read the run's history: ${why}.`, {
    nextAction:
      'run the Goal work again with a new run (loopx work run --goal G --agent examples/agents/goal-finisher.json)',
  });

const parse = (json: string, what: string): unknown => {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    throw historyInvalid(`${what} is not JSON`);
  }
};

function todoIdOf(call: ToolCallPart): string {
  const args = parse(call.argumentsJson, `the arguments of ${call.callId}`) as { todo_id?: unknown } | null;
  if (typeof args?.todo_id !== 'string') throw historyInvalid(`${call.callId} names no todo_id`);
  return args.todo_id;
}

function listedTodos(result: ToolResultPart): readonly ListedTodo[] {
  if (result.status !== 'ok') {
    const error = parse(result.resultJson, `the result of ${result.callId}`) as { error?: unknown } | null;
    const code = typeof error?.error === 'string' ? error.error : 'tool_failed';
    throw rejected(
      'goal_finisher_list_failed',
      `The Goal's Todos could not be listed (${code}); the goal-finisher does not guess them.`,
      {
        nextAction: `see the run's events for the todo.list error (${code}), then run the Goal work again`,
        details: { call_id: result.callId, tool_error: code },
      },
    );
  }
  const value = parse(result.resultJson, `the result of ${result.callId}`) as { todos?: unknown } | null;
  const todos = value?.todos;
  const valid =
    Array.isArray(todos) &&
    todos.every((t: unknown) => {
      const todo = t as Partial<ListedTodo> | null;
      return typeof todo?.todo_id === 'string' && typeof todo.status === 'string' && typeof todo.title === 'string';
    });
  if (!valid) throw historyInvalid(`the result of ${result.callId} is not a list of Todos`);
  return todos as ListedTodo[];
}

function nextStep(request: ModelRequest, note: string): ModelResponse {
  const offered = new Set(request.tools.map((t) => t.name));
  if (!offered.has(LIST) || !offered.has(UPDATE)) {
    throw rejected(
      'goal_finisher_tools_missing',
      'The goal-finisher needs the Goal work tools todo.list and todo.update, which this run does not offer.',
      {
        nextAction: 'use the goal-finisher with tool_plan loopx.goal-work.v1, through loopx work run',
      },
    );
  }
  const { newestList, updates } = read(request.messages);
  const list = (): ModelToolCall => ({ toolName: LIST, arguments: {} });
  if (!newestList) return { text: "Listing the Goal's Todos.", toolCalls: [list()] };

  const tried = new Set(updates.map((u) => u.todoId));
  const next = listedTodos(newestList).find((t) => !FINISHED.has(t.status) && !tried.has(t.todo_id));
  if (next) {
    return {
      text: `Finishing ${next.todo_id} (${next.status}): ${next.title}`,
      toolCalls: [{ toolName: UPDATE, arguments: { todo_id: next.todo_id, status: 'done', note } }, list()],
    };
  }
  return { text: summary(updates), toolCalls: [] };
}

/** The final answer: what this run's updates did, in the order it made them. */
function summary(updates: Reading['updates']): string {
  const done = updates.filter((u) => u.result?.status === 'ok').map((u) => u.todoId);
  const refused = updates
    .filter((u) => u.result?.status === 'error')
    .map((u) => {
      const error = parse(u.result!.resultJson, `the result of ${u.result!.callId}`) as { error?: unknown } | null;
      return `${u.todoId} (${typeof error?.error === 'string' ? error.error : 'tool_failed'})`;
    });
  const parts: string[] = [];
  if (done.length > 0)
    parts.push(`Marked ${done.length} ${done.length === 1 ? 'Todo' : 'Todos'} done: ${done.join(', ')}.`);
  if (refused.length > 0) parts.push(`Could not finish: ${refused.join(', ')}.`);
  return parts.length > 0 ? parts.join(' ') : 'Nothing left to do.';
}
