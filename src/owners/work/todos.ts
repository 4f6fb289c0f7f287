/**
 * Todo writes of the work owner: add, update, claim and unclaim. Each checks its request, then
 * plans over the loaded projection inside the shared commit loop (commit.ts). In hard_lease mode
 * closing a Todo and changing its claim need the Todo's active lease; closing ends the lease.
 */
import { conflict } from '../../core/index.js';
import { execute, type WorkCore } from './commit.js';
import { leaseNotHolder } from './errors.js';
import { MAX_TEXT, MAX_TITLE, actor, defined, invalid, leaseProof, nat, note, priority, status, text, todoId } from './inputs.js';
import { isTerminal, toJson, type Todo, type TodoStatus } from './model.js';
import { changed, findTodo, refuseTerminal, requireLease } from './rules.js';
import type { AddTodoRequest, ClaimRequest, UpdateTodoRequest, WorkOperationResult } from './api.js';

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
      throw conflict('todo_exists', `Todo ${id} already exists.`, { nextAction: 'choose another todo_id', details: { todo_id: id } });
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

export async function updateTodo(core: WorkCore, r: UpdateTodoRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const proof = leaseProof(r.lease);
  const fields = defined({
    title: r.title === undefined ? undefined : text('title', r.title, MAX_TITLE),
    text: r.text === undefined ? undefined : text('text', r.text, MAX_TEXT, true),
    status: r.status === undefined ? undefined : status(r.status),
    priority: r.priority === undefined ? undefined : priority(r.priority),
    note: r.note === undefined ? undefined : note(r.note),
  });
  if (Object.keys(fields).length === 0) throw invalid('update', 'name at least one of title, text, status, priority, note');
  const expectedRevision = r.expected_todo_revision === undefined ? undefined : nat('expected_todo_revision', r.expected_todo_revision);
  const params = defined({ todo_id: id, ...fields, expected_todo_revision: expectedRevision, lease: proof ? toJson(proof) : undefined });
  return execute(core, 'update_todo', r, params, ({ p, now, at }) => {
    const t = findTodo(p, id);
    if (expectedRevision !== undefined && t.todo_revision !== expectedRevision) {
      throw conflict('todo_revision_mismatch', `Todo ${id} is at revision ${t.todo_revision}, not ${expectedRevision}.`, {
        nextAction: 'read the Todo again and decide anew',
        details: { todo_id: id, expected_todo_revision: expectedRevision, todo_revision: t.todo_revision },
      });
    }
    const nextStatus = (fields.status as TodoStatus | undefined) ?? t.status;
    const closing = isTerminal(nextStatus) && nextStatus !== t.status;
    if (proof !== undefined || (closing && p.handoff_mode === 'hard_lease')) requireLease(t, proof, now, 'use');
    // Closing a Todo ends its lease; the record stays (released, same epoch and version).
    const lease = closing && t.lease?.status === 'active' ? { ...t.lease, status: 'released' as const, released_at: at } : t.lease;
    return changed(t, 'update', at, { ...(fields as Partial<Todo>), lease });
  });
}

export async function claimTodo(core: WorkCore, r: ClaimRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const agent = actor('agent', r.agent);
  const proof = leaseProof(r.lease);
  return execute(core, 'claim_todo', r, defined({ todo_id: id, agent, lease: proof ? toJson(proof) : undefined }), ({ p, now, at }) => {
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
  });
}

export async function unclaimTodo(core: WorkCore, r: ClaimRequest): Promise<WorkOperationResult> {
  const id = todoId(r.todo_id);
  const agent = actor('agent', r.agent);
  const proof = leaseProof(r.lease);
  return execute(core, 'unclaim_todo', r, defined({ todo_id: id, agent, lease: proof ? toJson(proof) : undefined }), ({ p, now, at }) => {
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
  });
}
