/**
 * Todo writes of the work owner: add, update (one Todo, or several as one batch), claim and unclaim. Each checks its request, then
 * plans over the loaded projection inside the shared commit loop (commit.ts). In hard_lease mode
 * closing a Todo and changing its claim need the Todo's active lease; closing ends the lease.
 */
import { conflict } from '../../core/index.js';
import { execute, type Plan, type WorkCore } from './commit.js';
import { leaseNotHolder } from './errors.js';
import {
  MAX_BATCH,
  MAX_TEXT,
  MAX_TITLE,
  actor,
  defined,
  invalid,
  leaseProof,
  nat,
  note,
  priority,
  status,
  text,
  todoId,
} from './inputs.js';
import { isTerminal, toJson, type Todo, type TodoStatus, type WorkEvent, type WorkProjection } from './model.js';
import type { JsonValue } from './contract.js';
import { changed, findTodo, refuseTerminal, requireLease } from './rules.js';
import type {
  AddTodoRequest,
  ClaimRequest,
  LeaseProof,
  TodoUpdate,
  UpdateTodoRequest,
  UpdateTodosRequest,
  WorkOperationResult,
} from './api.js';

export async function addTodo(core: WorkCore, r: AddTodoRequest): Promise<WorkOperationResult> {
  const explicitId = r.todo_id === undefined ? undefined : todoId(r.todo_id);
  const params = defined({
    todo_id: explicitId,
    title: text('title', r.title, MAX_TITLE),
    text: text('text', r.text ?? '', MAX_TEXT, true),
    status: status(r.status ?? 'open'),
    priority: priority(r.priority ?? 0),
    note: note(r.note ?? null),
  });
  if (params.status === 'done') throw invalid('status', 'a new Todo is open, blocked or deferred');
  return execute(core, 'add_todo', r, params, ({ p, at }) => {
    let seq = p.todo_seq;
    let id = explicitId;
    if (id === undefined) {
      do id = `t${++seq}`;
      while (p.todos.some((t) => t.todo_id === id));
    } else if (p.todos.some((t) => t.todo_id === id)) {
      throw conflict('todo_exists', `Todo ${id} already exists.`, {
        nextAction: 'choose another todo_id',
        details: { todo_id: id },
      });
    }
    const todo: Todo = {
      todo_id: id,
      title: params.title as string,
      text: params.text as string,
      status: params.status as TodoStatus,
      priority: params.priority as number,
      note: params.note as string | null,
      claimed_by: null,
      created_at: at,
      updated_at: at,
      todo_revision: 1,
      lease: null,
    };
    return { events: [{ type: 'todo_added', todo, todo_seq: seq }], todo };
  });
}

/** An update's fields checked, and the parameters its request digest covers. */
interface CheckedUpdate {
  readonly id: string;
  readonly proof: LeaseProof | undefined;
  readonly fields: Record<string, JsonValue>;
  readonly expectedRevision: number | undefined;
  readonly params: Record<string, JsonValue>;
}

function checkUpdate(u: TodoUpdate, field = ''): CheckedUpdate {
  if (typeof u !== 'object' || u === null)
    throw invalid(field || 'update', 'an object naming todo_id and the fields to change');
  const id = todoId(u.todo_id);
  const proof = leaseProof(u.lease);
  const fields = defined({
    title: u.title === undefined ? undefined : text('title', u.title, MAX_TITLE),
    text: u.text === undefined ? undefined : text('text', u.text, MAX_TEXT, true),
    status: u.status === undefined ? undefined : status(u.status),
    priority: u.priority === undefined ? undefined : priority(u.priority),
    note: u.note === undefined ? undefined : note(u.note),
  });
  if (Object.keys(fields).length === 0)
    throw invalid(field || 'update', 'name at least one of title, text, status, priority, note');
  const expectedRevision =
    u.expected_todo_revision === undefined ? undefined : nat('expected_todo_revision', u.expected_todo_revision);
  const params = defined({
    todo_id: id,
    ...fields,
    expected_todo_revision: expectedRevision,
    lease: proof ? toJson(proof) : undefined,
  });
  return { id, proof, fields, expectedRevision, params };
}

/** The Todo an update leaves, decided over `p` (refusals name the Todo). */
function applyUpdate(p: WorkProjection, u: CheckedUpdate, now: Date, at: string): Plan {
  const t = findTodo(p, u.id);
  if (u.expectedRevision !== undefined && t.todo_revision !== u.expectedRevision) {
    throw conflict(
      'todo_revision_mismatch',
      `Todo ${u.id} is at revision ${t.todo_revision}, not ${u.expectedRevision}.`,
      {
        nextAction: 'read the Todo again and decide anew',
        details: { todo_id: u.id, expected_todo_revision: u.expectedRevision, todo_revision: t.todo_revision },
      },
    );
  }
  const nextStatus = (u.fields.status as TodoStatus | undefined) ?? t.status;
  const closing = isTerminal(nextStatus) && nextStatus !== t.status;
  if (u.proof !== undefined || (closing && p.handoff_mode === 'hard_lease')) requireLease(t, u.proof, now, 'use');
  // Closing a Todo ends its lease; the record stays (released, same epoch and version).
  const lease =
    closing && t.lease?.status === 'active' ? { ...t.lease, status: 'released' as const, released_at: at } : t.lease;
  return changed(t, 'update', at, { ...(u.fields as Partial<Todo>), lease });
}

export async function updateTodo(core: WorkCore, r: UpdateTodoRequest): Promise<WorkOperationResult> {
  const u = checkUpdate(r);
  return execute(core, 'update_todo', r, u.params, ({ p, now, at }) => applyUpdate(p, u, now, at));
}

/** A batch's updates checked as `updateTodos` checks them (count, each update, each Todo once), before anything is decided. */
function checkBatch(list: readonly TodoUpdate[]): CheckedUpdate[] {
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_BATCH)
    throw invalid('updates', `a list of 1 to ${MAX_BATCH} Todo updates`);
  const updates = list.map((u, i) => checkUpdate(u, `updates[${i}]`));
  const seen = new Set<string>();
  for (const u of updates) {
    if (seen.has(u.id))
      throw invalid('updates', `Todo ${u.id} is named more than once; a batch changes each Todo at most once`);
    seen.add(u.id);
  }
  return updates;
}

/** Refuses a batch `updateTodos` would refuse on its input alone (`work_request_invalid`), for a caller that prepares before it commits. */
export function checkTodoUpdates(updates: readonly TodoUpdate[]): void {
  checkBatch(updates);
}

/**
 * Several Todo updates as one operation and one transaction: each is checked and decided as
 * `updateTodo` decides it, in the order given, over the Todos as the updates before it left them;
 * one refusal refuses the whole batch and nothing is committed. Each Todo at most once.
 */
export async function updateTodos(core: WorkCore, r: UpdateTodosRequest): Promise<WorkOperationResult> {
  const updates = checkBatch(r.updates);
  return execute(core, 'update_todos', r, { updates: updates.map((u) => u.params) }, ({ p, now, at }) => {
    const events: WorkEvent[] = [];
    const todos: Todo[] = [];
    let view = p;
    for (const u of updates) {
      const planned = applyUpdate(view, u, now, at);
      events.push(...planned.events);
      todos.push(planned.todo!);
      view = { ...view, todos: view.todos.map((t) => (t.todo_id === u.id ? planned.todo! : t)) };
    }
    return { events, todos };
  });
}

export async function claimTodo(core: WorkCore, r: ClaimRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const agent = actor('agent', r.agent);
  const proof = leaseProof(r.lease);
  return execute(
    core,
    'claim_todo',
    r,
    defined({ todo_id: id, agent, lease: proof ? toJson(proof) : undefined }),
    ({ p, now, at }) => {
      const t = findTodo(p, id);
      refuseTerminal(t);
      if (p.handoff_mode === 'hard_lease' || proof !== undefined) {
        const lease = requireLease(t, proof, now, 'use');
        if (lease.owner !== agent) throw leaseNotHolder(id, agent);
      } else if (t.claimed_by !== null && t.claimed_by !== agent) {
        throw conflict('todo_claimed', `Todo ${id} is claimed by another agent.`, {
          nextAction: 'pick another Todo, or ask its claimant to unclaim it',
          details: { todo_id: id, claimed_by: t.claimed_by },
        });
      }
      return changed(t, 'claim', at, { claimed_by: agent });
    },
  );
}

export async function unclaimTodo(core: WorkCore, r: ClaimRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const agent = actor('agent', r.agent);
  const proof = leaseProof(r.lease);
  return execute(
    core,
    'unclaim_todo',
    r,
    defined({ todo_id: id, agent, lease: proof ? toJson(proof) : undefined }),
    ({ p, now, at }) => {
      const t = findTodo(p, id);
      if (p.handoff_mode === 'hard_lease' || proof !== undefined) {
        const lease = requireLease(t, proof, now, 'use');
        if (lease.owner !== agent) throw leaseNotHolder(id, agent);
      }
      if (t.claimed_by !== agent) {
        throw conflict('todo_not_claimed_by_agent', `Todo ${id} is not claimed by ${agent}.`, {
          nextAction: 'read the Todo again',
          details: { todo_id: id, claimed_by: t.claimed_by },
        });
      }
      return changed(t, 'unclaim', at, { claimed_by: null });
    },
  );
}
