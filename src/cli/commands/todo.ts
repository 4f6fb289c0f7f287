/** `loopx todo add|list|update` — a Goal's canonical work through the runtime's Todo operations (writes check the run authority: a superseded Goal lifetime takes none). */
import type { Command } from 'commander';
import { usageError } from '../../core/index.js';
import { emit, resolveRoot, runtime, withGoalWriter, type GlobalOptions, type Runtime } from '../context.js';
import { MAX_TODOS_PER_UPDATE, TODO_STATUSES } from '../runtime-facts.js';

const opId = (given: string | undefined, mint: Runtime['operatorOperationId']) => given ?? mint('cli');
type Status = (typeof TODO_STATUSES)[number];

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
      const { addTodo, operatorOperationId, todoView } = await runtime();
      const r = await withGoalWriter(g, (authority) =>
        addTodo(
          resolveRoot(g),
          o.goal,
          {
            operation_id: opId(o.operationId, operatorOperationId),
            title: o.title,
            ...(o.id ? { todo_id: o.id } : {}),
            ...(o.text ? { text: o.text } : {}),
          },
          authority,
        ),
      );
      emit(g, { result: r.result, cursor: r.cursor, todo: todoView(r.receipt.todo!) }, (d, out) =>
        out.line(`${d.result === 'applied' ? 'added' : 'already added'} ${d.todo.todo_id}: ${d.todo.title}`),
      );
    });
  todo
    .command('list')
    .description("list a Goal's Todos")
    .requiredOption('--goal <goal-id>', 'the Goal')
    .action(async (o: { goal: string }) => {
      const g = globals();
      const { listTodos, todoView } = await runtime();
      const todos = await listTodos(resolveRoot(g), o.goal);
      emit(g, { goal_id: o.goal, todos: todos.map(todoView) }, (d, out) => {
        if (d.todos.length === 0) out.line('no Todos');
        for (const t of d.todos)
          out.line(`${t.todo_id.padEnd(8)} ${t.status.padEnd(8)} ${t.title}${t.note ? `  — ${t.note}` : ''}`);
      });
    });
  registerUpdate(todo, globals);
}

/** `todo update <todo-id...>`: one Todo, or several as one transaction. */
function registerUpdate(todo: Command, globals: () => GlobalOptions): void {
  todo
    .command('update <todo-id...>')
    .description(
      `change Todos: status and/or note; several Todos (at most ${MAX_TODOS_PER_UPDATE}, each once) change alike as one transaction, all or none (in hard_lease mode the CLI takes and releases their leases)`,
    )
    .requiredOption('--goal <goal-id>', 'the Goal')
    .option('--status <status>', TODO_STATUSES.join(' | '))
    .option('--note <note>', 'a note')
    .option('--operation-id <id>', 'idempotency key: repeating it returns the original receipt')
    .action(async (todoIds: string[], o: { goal: string; status?: string; note?: string; operationId?: string }) => {
      const g = globals();
      if (o.status !== undefined && !TODO_STATUSES.includes(o.status as Status)) {
        throw usageError(
          'todo_status_invalid',
          `--status must be one of ${TODO_STATUSES.join(', ')}.`,
          'see its options: loopx todo update --help',
        );
      }
      if (o.status === undefined && o.note === undefined)
        throw usageError(
          'todo_update_empty',
          'Give --status and/or --note.',
          'see its options: loopx todo update --help',
        );
      if (new Set(todoIds).size !== todoIds.length)
        throw usageError('todo_update_repeated', 'Name each Todo once.', 'see its options: loopx todo update --help');
      if (todoIds.length > MAX_TODOS_PER_UPDATE) {
        throw usageError(
          'todo_update_too_many',
          `One update changes at most ${MAX_TODOS_PER_UPDATE} Todos.`,
          'see its options: loopx todo update --help',
        );
      }
      const { operatorOperationId, updateTodo, updateTodos, todoView } = await runtime();
      const input = {
        operation_id: opId(o.operationId, operatorOperationId),
        lease_owner: 'operator:cli',
        ...(o.status !== undefined ? { status: o.status as Status } : {}),
        ...(o.note !== undefined ? { note: o.note } : {}),
      };
      const done = (r: { result: string }) => (r.result === 'applied' ? 'updated' : 'already updated');
      if (todoIds.length > 1) {
        const r = await withGoalWriter(g, (authority) =>
          updateTodos(resolveRoot(g), o.goal, { ...input, todo_ids: todoIds }, authority),
        );
        emit(g, { result: r.result, cursor: r.cursor, todos: r.receipt.todos!.map(todoView) }, (d, out) => {
          for (const t of d.todos) out.line(`${done(d)} ${t.todo_id}: ${t.status}`);
        });
        return;
      }
      const r = await withGoalWriter(g, (authority) =>
        updateTodo(resolveRoot(g), o.goal, { ...input, todo_id: todoIds[0]! }, authority),
      );
      emit(g, { result: r.result, cursor: r.cursor, todo: todoView(r.receipt.todo!) }, (d, out) =>
        out.line(`${done(d)} ${d.todo.todo_id}: ${d.todo.status}`),
      );
    });
}
