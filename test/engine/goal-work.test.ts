/**
 * Goal work runs through the real CLI: a scripted agent works a Goal's Todos through the work
 * owner (under its session's fence and hard leases) and delivers to an external system through
 * the effect owner; a crash mid-delivery never delivers twice; a superseded session cannot write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import * as workOwner from '../../src/owners/work/index.js';
import * as effectOwner from '../../src/owners/effect/index.js';
import { join } from 'node:path';
import { loopxAsync, tempRoot, rel } from '../support/cli.js';
import { agentFile } from '../recovery/support/adopt.js';

let sink: WebhookSink;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
});
afterAll(async () => {
  await sink.close();
});

const AGENT = 'examples/agents/goal-worker.json';

async function goalWithTodos(): Promise<string> {
  const root = tempRoot();
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect(
    (await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root])).status,
  ).toBe(0);
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post']) {
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root])).status).toBe(0);
  }
  return root;
}

const deliveriesFor = (runId: string) => sink.deliveries().filter((d) => d.operation_id.startsWith(`${runId}:`));

describe('loopx work run', () => {
  it("works a Goal's Todos through the work owner and delivers once through the effect owner", async () => {
    const root = await goalWithTodos();
    const r = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      AGENT,
      '--sink',
      sink.deliveriesUrl,
      '--root',
      root,
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    const out = r.json();
    expect(out).toMatchObject({
      status: 'completed',
      goal: { goal_id: 'launch' },
      session: { execution_generation: 2 },
    });
    const todos = (await loopxAsync(['todo', 'list', '--goal', 'launch', '--root', root, '--json'])).json().todos;
    expect(todos.map((t: { todo_id: string; status: string }) => [t.todo_id, t.status])).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'open'],
    ]);
    // Each update is a receipt under the engine call id; the delivery is one committed effect.
    const work = await workOwner.openGoalWork({ root, goal_id: 'launch' });
    try {
      expect((await work.readReceipt(`${out.run_id}:t2:k0`))?.receipt.todo?.status).toBe('done');
      expect((await work.view()).handoff_mode).toBe('hard_lease');
    } finally {
      work.close();
    }
    const effects = effectOwner.openSqliteEffectJournal(join(root, 'effects.db'));
    try {
      expect(await effects.get(`${out.run_id}:t3:k0`)).toMatchObject({ outcome: 'committed', kind: 'webhook.deliver' });
      // Every mutating call of the run went through the effect owner, Todo updates included.
      expect(await effects.get(`${out.run_id}:t2:k0`)).toMatchObject({
        outcome: 'committed',
        kind: 'work.todo_update',
      });
      expect(await effects.get(`${out.run_id}:t4:k0`)).toMatchObject({
        outcome: 'committed',
        kind: 'work.todo_update',
      });
    } finally {
      effects.close();
    }
    expect(deliveriesFor(out.run_id)).toHaveLength(1);
  }, 60_000);

  it('a process killed during a mutating Goal call leaves it uncertain: not guessed, not re-run, nothing delivered twice', async () => {
    const root = await goalWithTodos();
    // Killed once the engine's intent for the first mutating call (todo.update) is durable.
    const killed = await loopxAsync(
      ['work', 'run', '--goal', 'launch', '--agent', AGENT, '--sink', sink.deliveriesUrl, '--root', root, '--json'],
      {
        LOOPX_TEST_FAULT: 'engine.mutation.after-intent',
      },
    );
    expect(killed.signal).toBe('SIGKILL');
    const runId: string = (await loopxAsync(['run', 'list', '--root', root, '--json'])).json().runs[0].run_id;
    const shown = (await loopxAsync(['run', 'show', runId, '--root', root, '--json'])).json();
    expect(shown.waiting_for).toEqual({
      kind: 'resolution',
      call_ids: [`${runId}/t2/k0`],
      effects: [{ call_id: `${runId}/t2/k0`, operation_id: `${runId}:t2:k0`, outcome: 'pending' }],
    });
    const todos = (await loopxAsync(['todo', 'list', '--goal', 'launch', '--root', root, '--json'])).json().todos;
    expect(todos[0].status).toBe('open'); // the update never ran, and it is not guessed
    const before = deliveriesFor(runId).length;
    expect((await loopxAsync(['run', 'resume', runId, '--root', root, '--json'])).json().waiting_for.kind).toBe(
      'resolution',
    );
    expect(deliveriesFor(runId)).toHaveLength(before);
  }, 60_000);

  it("a superseded session's run cannot write: a newer session's fence refuses its todo.update", async () => {
    const root = await goalWithTodos();
    const first = (
      await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', AGENT, '--turns', '1', '--root', root, '--json'])
    ).json();
    expect(first.status).toBe('suspended');
    // A second session engages a new fence on the Goal's work store.
    const second = (
      await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', AGENT, '--turns', '1', '--root', root, '--json'])
    ).json();
    expect(second.status).toBe('suspended');
    const resumed = (
      await loopxAsync(['run', 'resume', first.run_id, '--turns', '1', '--root', root, '--json'])
    ).json();
    expect(resumed.status).toBe('suspended');
    const inspected = (await loopxAsync(['run', 'show', first.run_id, '--root', root, '--json'])).json();
    expect(inspected.completed_turns).toBe(2);
    const todo = (await loopxAsync(['todo', 'list', '--goal', 'launch', '--root', root, '--json'])).json().todos[0];
    expect(todo).toMatchObject({ todo_id: 't1', status: 'open' }); // the stale writer changed nothing
    const events = (await loopxAsync(['run', 'events', first.run_id, '--root', root, '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const refused = events.find(
      (e: { type: string; data: { call_id?: string } }) =>
        e.type === 'ToolResulted' && e.data.call_id === `${first.run_id}/t2/k0`,
    );
    expect(refused.data.status).toBe('error');
    const effects = effectOwner.openSqliteEffectJournal(join(root, 'effects.db'));
    try {
      // The owner refused before acting: a definite outcome, recorded as rejected, never unknown.
      expect(await effects.get(`${first.run_id}:t2:k0`)).toMatchObject({
        outcome: 'rejected',
        kind: 'work.todo_update',
      });
    } finally {
      effects.close();
    }
  }, 60_000);

  it('a repeated todo operation id returns the original receipt and applies once', async () => {
    const root = tempRoot();
    await loopxAsync(['init', '--root', root]);
    await loopxAsync(['goal', 'create', 'g1', '--title', 'G', '--root', root]);
    const a = (
      await loopxAsync([
        'todo',
        'add',
        '--goal',
        'g1',
        '--title',
        'Once',
        '--operation-id',
        'op-1',
        '--root',
        root,
        '--json',
      ])
    ).json();
    const b = (
      await loopxAsync([
        'todo',
        'add',
        '--goal',
        'g1',
        '--title',
        'Once',
        '--operation-id',
        'op-1',
        '--root',
        root,
        '--json',
      ])
    ).json();
    expect(a.result).toBe('applied');
    expect(b).toMatchObject({ result: 'already_applied', cursor: a.cursor, todo: a.todo });
    expect((await loopxAsync(['todo', 'list', '--goal', 'g1', '--root', root, '--json'])).json().todos).toHaveLength(1);
    const mismatch = await loopxAsync([
      'todo',
      'add',
      '--goal',
      'g1',
      '--title',
      'Other',
      '--operation-id',
      'op-1',
      '--root',
      root,
      '--json',
    ]);
    expect(mismatch.status).toBe(3);
    expect(mismatch.json().error.code).toBe('operation_identity_mismatch');
  });

  it('operator refusals leave nothing half-done: a bad --doc creates no Goal, a non-Goal agent is refused before any session, a paused Goal takes no work', async () => {
    const root = tempRoot();
    await loopxAsync(['init', '--root', root]);
    const bad = await loopxAsync([
      'goal',
      'create',
      'g2',
      '--title',
      'G',
      '--doc',
      '.hidden=x',
      '--root',
      root,
      '--json',
    ]);
    expect(bad.status).toBe(3);
    expect(bad.json().error.code).toBe('goal_doc_name_invalid');
    expect((await loopxAsync(['goal', 'list', '--root', root, '--json'])).json().goals).toEqual([]);
    expect(
      (await loopxAsync(['goal', 'create', 'g2', '--title', 'G', '--doc', 'brief.md=ok', '--root', root])).status,
    ).toBe(0);
    const notGoalWork = await loopxAsync([
      'work',
      'run',
      '--goal',
      'g2',
      '--agent',
      'examples/agents/researcher.json',
      '--root',
      root,
      '--json',
    ]);
    expect(notGoalWork.json().error.code).toBe('agent_not_goal_work');
    expect((await loopxAsync(['goal', 'pause', 'g2', '--root', root, '--json'])).json().lifecycle).toBe('paused');
    const paused = await loopxAsync(['work', 'run', '--goal', 'g2', '--agent', AGENT, '--root', root, '--json']);
    expect(paused.json().error).toMatchObject({
      code: 'goal_not_active',
      next_action: `resume it: loopx goal resume g2 --root ${rel(root)}`,
    });
    expect((await loopxAsync(['goal', 'resume', 'g2', '--root', root, '--json'])).json().lifecycle).toBe('active');
  });

  it('a repeated todo update after a work run (hard leases) replays its receipt instead of failing on the lease', async () => {
    const root = await goalWithTodos();
    expect(
      (
        await loopxAsync([
          'work',
          'run',
          '--goal',
          'launch',
          '--agent',
          AGENT,
          '--sink',
          sink.deliveriesUrl,
          '--root',
          root,
        ])
      ).status,
    ).toBe(0);
    // t3 was left open by the run; its lease is free.
    const first = await loopxAsync([
      'todo',
      'update',
      't3',
      '--goal',
      'launch',
      '--status',
      'done',
      '--operation-id',
      'op-close',
      '--root',
      root,
      '--json',
    ]);
    expect(first.status, first.stderr).toBe(0);
    const again = await loopxAsync([
      'todo',
      'update',
      't3',
      '--goal',
      'launch',
      '--status',
      'done',
      '--operation-id',
      'op-close',
      '--root',
      root,
      '--json',
    ]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.json()).toMatchObject({ result: 'already_applied', cursor: first.json().cursor });
  }, 60_000);

  it('a work run that ends failed prints its document and exits 5', async () => {
    const root = await goalWithTodos();
    // One turn of script and no answer after it: the second turn finds the script exhausted, and the run fails.
    const agent = agentFile(root, 'short', [{ text: 'Looking.', tool_calls: [{ name: 'todo.list', arguments: {} }] }]);
    const r = await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', agent, '--root', root, '--json']);
    expect(r.status, r.stdout + r.stderr).toBe(5);
    expect(r.json()).toMatchObject({ status: 'failed', failure: { code: 'script_exhausted' } });
    const human = await loopxAsync(['run', 'show', r.json().run_id, '--root', root]);
    expect(human.status).toBe(0);
  }, 60_000);
});
