/**
 * The runtime's Goal operations, in-process: a Goal is created with its documents or not at all,
 * moves through its lifecycle only from the state it was read in, and is shown with its Todo
 * counts; an unknown Goal is the goal owner's one `goal_not_found`.
 */
import { describe, expect, it } from 'vitest';
import { addTodo, createGoal, initRoot, listGoals, showGoal, transitionGoal } from '../../src/runtime/index.js';
import { tempRoot } from '../support/cli.js';

const freshRoot = () => {
  const root = tempRoot('loopx-runtime-goals-');
  initRoot(root);
  return root;
};

describe('runtime Goals', () => {
  it('a bad document name is refused before anything is created', async () => {
    const root = freshRoot();
    await expect(
      createGoal(root, 'g1', 'Ship it', [
        { name: 'ok', content: 'x' },
        { name: '../escape', content: 'y' },
      ]),
    ).rejects.toMatchObject({ code: 'goal_doc_name_invalid' });
    expect(await listGoals(root)).toEqual([]);
  });

  it('creates a Goal with its documents and shows it with Todo counts', async () => {
    const root = freshRoot();
    const created = await createGoal(root, 'g1', 'Ship it', [{ name: 'brief', content: 'the brief' }]);
    expect(created.docs.map((d) => d.name)).toEqual(['brief']);
    await addTodo(root, 'g1', { operation_id: 'a', title: 'Draft' });
    const shown = await showGoal(root, 'g1', { todos: true });
    expect(shown.counts).toEqual({ open: 1, done: 0, blocked: 0, deferred: 0 });
    expect(shown.committed_transactions).toBe(1);
    expect(shown.todos!.map((t) => t.title)).toEqual(['Draft']);
  });

  it('pause, resume and retire move the lifecycle; retire is final and a later create is a new lifetime', async () => {
    const root = freshRoot();
    const first = await createGoal(root, 'g1', 'Ship it');
    expect((await transitionGoal(root, 'g1', 'pause')).lifecycle).toBe('paused');
    expect((await transitionGoal(root, 'g1', 'pause')).lifecycle).toBe('paused'); // a replay: the target already holds
    expect((await transitionGoal(root, 'g1', 'resume')).lifecycle).toBe('active');
    expect((await transitionGoal(root, 'g1', 'retire')).lifecycle).toBe('retired');
    await expect(transitionGoal(root, 'g1', 'resume')).rejects.toMatchObject({ code: 'goal_retired' });
    const again = await createGoal(root, 'g1', 'Ship it again');
    expect(again.goal_instance_id).not.toBe(first.goal_instance_id);
  });

  it('an unknown Goal is goal_not_found wherever it is asked', async () => {
    const root = freshRoot();
    await expect(showGoal(root, 'nope')).rejects.toMatchObject({ code: 'goal_not_found' });
    await expect(transitionGoal(root, 'nope', 'pause')).rejects.toMatchObject({ code: 'goal_not_found' });
  });
});
