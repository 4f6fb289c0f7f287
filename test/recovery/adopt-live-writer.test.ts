/**
 * An old writer that is still running when its Goal lifetime is superseded — the recovery lands in
 * the run authority while the source's run waits on its receiver — is fenced at its next write: its
 * next turn is refused before its model call (`goal_lifetime_superseded`), the run fails with that
 * code, and nothing more is spent, committed to the Todos or delivered. In process, on real SQLite
 * owners and a real loopback receiver that records the supersession while it holds the request.
 */
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addTodo,
  createGoal,
  initRoot,
  listTodos,
  parseAgentDefinition,
  runGoalWork,
  withRootEngine,
  type Engine,
} from '../../src/runtime/index.js';
import { tempRoot } from '../support/cli.js';

const AGENT = parseAgentDefinition({
  id: 'test.live-writer',
  version: '1.0.0',
  model: { provider: 'scripted', model_id: 'scripted-v1' },
  turn_limit: 12,
  tool_plan: 'loopx.goal-work.v1',
  system: 'Work the Goal.',
  script: [
    { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'first' } }] },
    { text: 'Outline done.', tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't1', status: 'done' } }] },
    { text: 'Announcing again.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'second' } }] },
    { text: 'Done.' },
  ],
});

let server: Server;
let url: string;
const received: string[] = [];
/** Called while the receiver holds the first delivery: the recovery lands meanwhile. */
let duringFirst: (() => void) | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      received.push(body);
      duringFirst?.();
      duringFirst = undefined;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"stored":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/deliveries`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('a live old writer', () => {
  it('is fenced at its next write once a recovery supersedes its lifetime mid-run', async () => {
    const root = tempRoot('loopx-live-writer-');
    initRoot(root);
    const goal = await createGoal(root, 'launch', 'Ship the launch post');
    for (const [i, title] of ['Draft the outline', 'Review with design'].entries())
      await addTodo(root, 'launch', { operation_id: `add-${i}`, todo_id: `t${i + 1}`, title });
    const result = await withRootEngine({ root, authorityDir: join(dirname(root), 'authority') }, (engine: Engine) => {
      duringFirst = () =>
        engine.authority.supersedeLifetime({
          goal_instance_id: goal.goal_instance_id,
          goal_id: 'launch',
          successor_instance_id: `ginst_${randomBytes(16).toString('hex')}`,
          goal_lineage: goal.goal_instance_id,
          fence: 2,
          recovery_id: randomBytes(32).toString('hex'),
          successor_root: `root_${randomBytes(12).toString('hex')}`,
        });
      return runGoalWork({ root, goalId: 'launch', agent: AGENT, engine, webhookUrl: url });
    });
    expect(result.run.status).toBe('failed');
    expect(result.run.failure?.code).toBe('goal_lifetime_superseded');
    // Stopped before its next turn's model call: nothing more is spent either.
    expect(result.run.completed_turns).toBe(1);
    // The delivery in flight when the recovery landed was the last: the Todo update after it never committed.
    expect(received.map((b) => (JSON.parse(b) as { message: string }).message)).toEqual(['first']);
    expect((await listTodos(root, 'launch')).find((t) => t.todo_id === 't1')?.status).toBe('open');
  }, 60_000);
});
