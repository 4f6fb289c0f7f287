/**
 * `demo.goal-finisher` through the real CLI, one process per command: `loopx work run` finishes
 * the Goal's open and blocked Todos; a run suspended after its first turn and resumed turn by turn
 * in later processes answers exactly as a run that was never interrupted — the same choices, the
 * same Todos, the same final answer — because each answer is derived from the run's history.
 */
import { describe, expect, it } from 'vitest';
import { loopxAsync, loopxChild, tempRoot, todoStatuses } from '../support/cli.js';

const AGENT = 'examples/agents/goal-finisher.json';

/** A root whose Goal `launch` has t1 open, t2 blocked, t3 done and t4 open. */
async function launchRoot(): Promise<string[]> {
  const root = tempRoot('loopx-finisher-cli-');
  const at = ['--root', root, '--json'];
  expect((await loopxAsync(['init', ...at])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at])).status).toBe(0);
  for (const [id, title] of [
    ['t1', 'Draft the outline'],
    ['t2', 'Review with design'],
    ['t3', 'Book the photos'],
    ['t4', 'Publish the post'],
  ] as const) {
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--id', id, ...at])).status).toBe(0);
  }
  expect((await loopxAsync(['todo', 'update', 't2', '--goal', 'launch', '--status', 'blocked', ...at])).status).toBe(0);
  expect((await loopxAsync(['todo', 'update', 't3', '--goal', 'launch', '--status', 'done', ...at])).status).toBe(0);
  return at;
}

/** What the run's model answered, turn by turn: its text and the tools it called. */
async function answers(runId: string, at: readonly string[]): Promise<Array<[number, string, string[]]>> {
  const events = (await loopxAsync(['run', 'events', runId, ...at])).stdout.trim().split('\n');
  return events
    .map(
      (l) =>
        JSON.parse(l) as { type: string; data: { turn: number; text: string; tool_calls: { tool_name: string }[] } },
    )
    .filter((e) => e.type === 'ModelResponded')
    .map((e) => [e.data.turn, e.data.text, e.data.tool_calls.map((c) => c.tool_name)]);
}

const FINISHED: Array<[string, string]> = [
  ['t1', 'done'],
  ['t2', 'done'],
  ['t3', 'done'],
  ['t4', 'done'],
];

const UNINTERRUPTED: Array<[number, string, string[]]> = [
  [1, "Listing the Goal's Todos.", ['todo.list']],
  [2, 'Finishing t1 (open): Draft the outline', ['todo.update', 'todo.list']],
  [3, 'Finishing t2 (blocked): Review with design', ['todo.update', 'todo.list']],
  [4, 'Finishing t4 (open): Publish the post', ['todo.update', 'todo.list']],
  [5, 'Marked 3 Todos done: t1, t2, t4.', []],
];

describe('loopx work run with demo.goal-finisher', () => {
  it('finishes every open and blocked Todo and completes with its answer', async () => {
    const at = await launchRoot();
    const run = await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', AGENT, ...at]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.json()).toMatchObject({ status: 'completed', completed_turns: 5, failure: null });
    expect(await todoStatuses('launch', at)).toEqual(FINISHED);
    expect(await answers(run.json().run_id, at)).toEqual(UNINTERRUPTED);
    const notes = (await loopxAsync(['todo', 'list', '--goal', 'launch', ...at]))
      .json()
      .todos.map((t: { note: string | null }) => t.note);
    expect(notes).toEqual([
      'finished by demo.goal-finisher',
      'finished by demo.goal-finisher',
      null,
      'finished by demo.goal-finisher',
    ]);
  }, 60_000);

  it('suspended after its first turn and resumed in other processes, it ends exactly as the uninterrupted run', async () => {
    const at = await launchRoot();
    const first = await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', AGENT, '--turns', '1', ...at]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.json()).toMatchObject({ status: 'suspended', completed_turns: 1 });
    const runId: string = first.json().run_id;
    // Nothing was changed yet: the first turn only listed the Todos.
    expect((await todoStatuses('launch', at)).map(([, s]) => s)).toEqual(['open', 'blocked', 'done', 'open']);

    // One more turn in a second process: the first Todo still to do, chosen from the listed state.
    const second = await loopxChild(['run', 'resume', runId, '--turns', '1', ...at]);
    expect(second.json()).toMatchObject({ status: 'suspended', completed_turns: 2 });
    expect((await todoStatuses('launch', at)).map(([, s]) => s)).toEqual(['done', 'blocked', 'done', 'open']);

    const rest = await loopxChild(['run', 'resume', runId, ...at]);
    expect(rest.status, rest.stderr).toBe(0);
    expect(rest.json()).toMatchObject({ status: 'completed', completed_turns: 5, failure: null });
    expect(await answers(runId, at)).toEqual(UNINTERRUPTED);
    expect(await todoStatuses('launch', at)).toEqual(FINISHED);
  }, 90_000);

  it('a Goal with nothing to do: the run lists the Todos, changes nothing and says so', async () => {
    const root = tempRoot('loopx-finisher-cli-');
    const at = ['--root', root, '--json'];
    expect((await loopxAsync(['init', ...at])).status).toBe(0);
    expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at])).status).toBe(0);
    expect(
      (await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', 'Done already', '--id', 't1', ...at])).status,
    ).toBe(0);
    expect((await loopxAsync(['todo', 'update', 't1', '--goal', 'launch', '--status', 'done', ...at])).status).toBe(0);
    const run = await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', AGENT, ...at]);
    expect(run.json()).toMatchObject({ status: 'completed', completed_turns: 2 });
    expect(await answers(run.json().run_id, at)).toEqual([
      [1, "Listing the Goal's Todos.", ['todo.list']],
      [2, 'Nothing left to do.', []],
    ]);
    expect(await todoStatuses('launch', at)).toEqual([['t1', 'done']]);
  }, 60_000);
});
