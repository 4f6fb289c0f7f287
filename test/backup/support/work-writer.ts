// Child process for the live-capture test: commits to a Goal's work through the work owner (one
// transaction per update of one Todo, operation ids live-0, live-1, …) until it is killed,
// printing its running count after every batch. Arguments: root, goal id, Todo id.
import { openGoalWork } from '../../../src/owners/work/index.js';

const [root, goalId, todoId] = process.argv.slice(2) as [string, string, string];
const work = await openGoalWork({ root, goal_id: goalId });
const body = 'e'.repeat(1024);
let written = 0;
const batch = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) {
    await work.updateTodo({ operation_id: `live-${written}`, todo_id: todoId, text: `${written}:${body}` });
    written++;
  }
  process.stdout.write(`${written}\n`);
  setImmediate(() => void batch());
};
process.stdout.write('ready\n');
await batch();
