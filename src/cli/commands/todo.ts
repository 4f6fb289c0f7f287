/** `loopx todo add|list|update` — a Goal's canonical work through the work owner. */
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { usageError } from '../../core/index.js';
import { work as workOwner } from '../../owners/index.js';
import { emit, type GlobalOptions } from '../context.js';
import { withGoalWork } from './owners-context.js';

const STATUSES = ['open', 'done', 'blocked', 'deferred'];
const view = (t: workOwner.Todo) => ({ todo_id: t.todo_id, title: t.title, status: t.status, note: t.note, todo_revision: t.todo_revision, lease_owner: t.lease?.status === 'active' ? t.lease.owner : null });
const opId = (given: string | undefined) => given ?? `cli:${randomBytes(8).toString('hex')}`;

export function register(program: Command, globals: () => GlobalOptions): void {
  const todo = program.command('todo').description("a Goal's Todos (canonical work)");
  todo
    .command('add')
    .description('add a Todo')
    .requiredOption('--goal <goal-id>', 'the Goal')
    .requiredOption('--title <title>', 'the Todo')
    .option('--id <todo-id>', 'an explicit Todo id (default t<n>)')
    .option('--text <text>', 'details')
    .option('--operation-id <id>', 'idempotency key: repeating it returns the original receipt')
    .action(async (o: { goal: string; title: string; id?: string; text?: string; operationId?: string }) => {
      const g = globals();
      const r = await withGoalWork(g, o.goal, (work) =>
        work.addTodo({ operation_id: opId(o.operationId), title: o.title, ...(o.id ? { todo_id: o.id } : {}), ...(o.text ? { text: o.text } : {}) }),
      );
      emit(g, { result: r.result, cursor: r.cursor, todo: view(r.receipt.todo!) }, (d, out) => out.line(`${d.result === 'applied' ? 'added' : 'already added'} ${d.todo.todo_id}: ${d.todo.title}`));
    });
  todo
    .command('list')
    .description("list a Goal's Todos")
    .requiredOption('--goal <goal-id>', 'the Goal')
    .action(async (o: { goal: string }) => {
      const g = globals();
      const todos = await withGoalWork(g, o.goal, (work) => work.listTodos());
      emit(g, { goal_id: o.goal, todos: todos.map(view) }, (d, out) => {
        if (d.todos.length === 0) out.line('no Todos');
        for (const t of d.todos) out.line(`${t.todo_id.padEnd(8)} ${t.status.padEnd(8)} ${t.title}${t.note ? `  — ${t.note}` : ''}`);
      });
    });
  todo
    .command('update <todo-id>')
    .description('change a Todo: status and/or note (in hard_lease mode the CLI takes and releases a lease)')
    .requiredOption('--goal <goal-id>', 'the Goal')
    .option('--status <status>', STATUSES.join(' | '))
    .option('--note <note>', 'a note')
    .option('--operation-id <id>', 'idempotency key: repeating it returns the original receipt')
    .action(async (todoId: string, o: { goal: string; status?: string; note?: string; operationId?: string }) => {
      const g = globals();
      if (o.status !== undefined && !STATUSES.includes(o.status)) throw usageError('todo_status_invalid', `--status must be one of ${STATUSES.join(', ')}.`, 'see its options: loopx todo update --help');
      if (o.status === undefined && o.note === undefined) throw usageError('todo_update_empty', 'Give --status and/or --note.', 'see its options: loopx todo update --help');
      const op = opId(o.operationId);
      const r = await withGoalWork(g, o.goal, (work) => {
        const changes = { ...(o.status !== undefined ? { status: o.status as workOwner.TodoStatus } : {}), ...(o.note !== undefined ? { note: o.note } : {}) };
        if (work.readReceipt(op)) {
          // A repeat: the same request (with the lease proof it was made under) replays its original
          // receipt; a different request under this id is refused by the work owner.
          const proof = work.readReceipt(`${op}:lease`)?.receipt.lease;
          return work.updateTodo({ operation_id: op, todo_id: todoId, ...changes, ...(proof ? { lease: { owner: proof.owner, execution_key: proof.execution_key, lease_epoch: proof.lease_epoch } } : {}) });
        }
        if (work.view().handoff_mode !== 'hard_lease') return work.updateTodo({ operation_id: op, todo_id: todoId, ...changes });
        // Hard leases: the operator takes the Todo's lease (refused while a session holds it), updates, releases.
        const current = work.leaseStatus(todoId);
        const lease = work.acquireLease({ operation_id: `${op}:lease`, todo_id: todoId, owner: 'operator:cli', execution_key: op, ttl_ms: 60_000, expected_version: current.lease?.version ?? 0 }).receipt.lease!;
        const updated = work.updateTodo({ operation_id: op, todo_id: todoId, ...changes, lease: { owner: lease.owner, execution_key: lease.execution_key, lease_epoch: lease.lease_epoch } });
        const after = work.leaseStatus(todoId);
        if (after.lease?.status === 'active') work.releaseLease({ operation_id: `${op}:release`, todo_id: todoId, owner: lease.owner, execution_key: lease.execution_key, lease_epoch: after.lease.lease_epoch, expected_version: after.lease.version });
        return updated;
      });
      emit(g, { result: r.result, cursor: r.cursor, todo: view(r.receipt.todo!) }, (d, out) => out.line(`${d.result === 'applied' ? 'updated' : 'already updated'} ${d.todo.todo_id}: ${d.todo.status}`));
    });
}
