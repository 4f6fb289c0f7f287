/**
 * A long-lived writer of a root on PostgreSQL, for the restore tests (a real process, as an old
 * service's writer is): for each line `add <title>` on stdin it adds a Todo to the Goal named by
 * argv through the runtime and answers one JSON line — `{ "ok": true }` or `{ "ok": false,
 * "code": … }`; `op <operation-id> add <title>` and `op <operation-id> update <todo-id> <note>` (the
 * note is the rest of the line) do
 * the same under that operation id (a test retries it later). It keeps its pool, and so its
 * admission, for its whole life.
 * Usage: node --import tsx test/support/pg-writer.ts <root> <goal-id>
 */
import { createInterface } from 'node:readline';
import { isLoopxError } from '../../src/core/index.js';
import { addTodo, operatorOperationId, updateTodo } from '../../src/runtime/index.js';

const [root, goal] = process.argv.slice(2) as [string, string];
const lines = createInterface({ input: process.stdin });
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
for await (const line of lines) {
  const [, id, verb, ...rest] = line.split(' ');
  try {
    if (line.startsWith('op ') && verb === 'update')
      await updateTodo(root, goal, {
        operation_id: id!,
        todo_id: rest[0]!,
        note: rest.slice(1).join(' '),
        lease_owner: 'operator:cli',
      });
    else if (line.startsWith('op ')) await addTodo(root, goal, { operation_id: id!, title: rest.join(' ') });
    else await addTodo(root, goal, { operation_id: operatorOperationId('writer'), title: line.replace(/^add /, '') });
    process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ ok: false, code: isLoopxError(e) ? e.code : String(e) })}\n`);
  }
}
