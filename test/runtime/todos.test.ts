/**
 * The runtime's Todo operations, called in-process as the CLI and daemon call them: an operator's
 * update in hard-lease mode takes the Todo's lease, updates under it and releases it; it is
 * refused while a session holds the lease; an operation id applies once and replays its receipt;
 * another request under the same id is refused and changes nothing.
 */
import { describe, expect, it } from 'vitest';
import {
  addTodo,
  createGoal,
  goalProgress,
  initRoot,
  listTodos,
  todoView,
  updateTodo,
  updateTodos,
  withGoalWork,
} from '../../src/runtime/index.js';
import { tempRoot } from '../support/cli.js';

async function hardLeaseGoal(): Promise<string> {
  const root = tempRoot('loopx-runtime-todos-');
  initRoot(root);
  await createGoal(root, 'g1', 'Ship it');
  await addTodo(root, 'g1', { operation_id: 'add-1', todo_id: 't1', title: 'Draft' });
  await addTodo(root, 'g1', { operation_id: 'add-2', todo_id: 't2', title: 'Review' });
  await withGoalWork(root, 'g1', async (work) => {
    const fence = (await work.engageFence({ operation_id: 'session:s1:fence' })).receipt.fence!;
    await work.setHandoffMode({ operation_id: 'session:s1:hard-lease', fence, handoff_mode: 'hard_lease' });
    const status = await work.leaseStatus('t1');
    await work.acquireLease({
      operation_id: 'session:s1:lease',
      fence,
      todo_id: 't1',
      owner: 'session:s1',
      execution_key: 'exec:s1:1',
      ttl_ms: 600_000,
      expected_version: status.lease?.version ?? 0,
    });
  });
  return root;
}

const leaseOwnerOf = async (root: string, todoId: string) =>
  (await listTodos(root, 'g1')).map(todoView).find((t) => t.todo_id === todoId)!.lease_owner;

describe('runtime Todo updates', () => {
  it('an update without hard leases applies once and replays under its operation id', async () => {
    const root = tempRoot('loopx-runtime-todos-');
    initRoot(root);
    await createGoal(root, 'g1', 'Ship it');
    await addTodo(root, 'g1', { operation_id: 'add-1', todo_id: 't1', title: 'Draft' });
    const first = await updateTodo(root, 'g1', {
      operation_id: 'op-1',
      todo_id: 't1',
      status: 'done',
      lease_owner: 'operator:test',
    });
    const again = await updateTodo(root, 'g1', {
      operation_id: 'op-1',
      todo_id: 't1',
      status: 'done',
      lease_owner: 'operator:test',
    });
    expect([first.result, again.result]).toEqual(['applied', 'already_applied']);
    expect(again.receipt).toEqual(first.receipt);
    expect(await leaseOwnerOf(root, 't1')).toBeNull();
  });

  it('in hard-lease mode the operator takes, uses and releases the lease; a repeat replays with its lease proof', async () => {
    const root = await hardLeaseGoal();
    const first = await updateTodo(root, 'g1', {
      operation_id: 'op-2',
      todo_id: 't2',
      note: 'looked at it',
      lease_owner: 'operator:test',
    });
    expect(first.result).toBe('applied');
    expect(first.receipt.todo!.note).toBe('looked at it');
    expect(await leaseOwnerOf(root, 't2')).toBeNull(); // released again
    const again = await updateTodo(root, 'g1', {
      operation_id: 'op-2',
      todo_id: 't2',
      note: 'looked at it',
      lease_owner: 'operator:test',
    });
    expect(again.result).toBe('already_applied');
    expect(again.receipt).toEqual(first.receipt);
  });

  it('is refused while a session holds the lease, and changes nothing', async () => {
    const root = await hardLeaseGoal();
    const before = await listTodos(root, 'g1');
    await expect(
      updateTodo(root, 'g1', { operation_id: 'op-3', todo_id: 't1', status: 'done', lease_owner: 'operator:test' }),
    ).rejects.toMatchObject({ code: 'lease_held' });
    expect(await listTodos(root, 'g1')).toEqual(before);
    expect(await leaseOwnerOf(root, 't1')).toBe('session:s1');
  });

  it('another request under a used operation id is refused and changes nothing', async () => {
    const root = await hardLeaseGoal();
    await updateTodo(root, 'g1', { operation_id: 'op-4', todo_id: 't2', status: 'done', lease_owner: 'operator:test' });
    const before = await listTodos(root, 'g1');
    await expect(
      updateTodo(root, 'g1', { operation_id: 'op-4', todo_id: 't2', status: 'blocked', lease_owner: 'operator:test' }),
    ).rejects.toMatchObject({
      code: 'operation_identity_mismatch',
    });
    expect(await listTodos(root, 'g1')).toEqual(before);
  });

  it('several Todos in hard-lease mode: the operator takes each lease, commits one transaction, releases them; a repeat replays', async () => {
    const root = await hardLeaseGoal();
    await addTodo(root, 'g1', { operation_id: 'add-3', todo_id: 't3', title: 'Publish' });
    const input = {
      operation_id: 'op-5',
      todo_ids: ['t3', 't2'],
      status: 'done' as const,
      note: 'shipped',
      lease_owner: 'operator:test',
    };
    const first = await updateTodos(root, 'g1', input);
    expect(first).toMatchObject({ result: 'applied', receipt: { operation: 'update_todos', todo_id: null } });
    expect(first.receipt.todos!.map((t) => [t.todo_id, t.status, t.note, t.lease?.status])).toEqual([
      ['t3', 'done', 'shipped', 'released'],
      ['t2', 'done', 'shipped', 'released'],
    ]);
    expect(await leaseOwnerOf(root, 't2')).toBeNull();
    expect(await leaseOwnerOf(root, 't3')).toBeNull();
    const again = await updateTodos(root, 'g1', input);
    expect(again).toMatchObject({ result: 'already_applied', cursor: first.cursor, receipt: first.receipt });
    // The Goal page's progress names the batch as each of its Todos' last receipt.
    const progress = await goalProgress(root, 'g1');
    expect([progress.last_receipts.t2, progress.last_receipts.t3]).toEqual(
      [0, 1].map(() => ({ cursor: first.cursor, operation: 'update_todos', committed_at: first.receipt.committed_at })),
    );
    // A note alone does not end a lease: the operator releases the ones it took.
    await addTodo(root, 'g1', { operation_id: 'add-4', todo_id: 't4', title: 'Announce' });
    await addTodo(root, 'g1', { operation_id: 'add-5', todo_id: 't5', title: 'Archive' });
    await updateTodos(root, 'g1', {
      operation_id: 'op-6',
      todo_ids: ['t4', 't5'],
      note: 'next week',
      lease_owner: 'operator:test',
    });
    expect([await leaseOwnerOf(root, 't4'), await leaseOwnerOf(root, 't5')]).toEqual([null, null]);
  });

  it('several Todos, one of them leased by a session: refused, nothing changes, and the leases the operator took are released', async () => {
    const root = await hardLeaseGoal();
    const before = await listTodos(root, 'g1');
    await expect(
      updateTodos(root, 'g1', {
        operation_id: 'op-7',
        todo_ids: ['t2', 't1'],
        status: 'done',
        lease_owner: 'operator:test',
      }),
    ).rejects.toMatchObject({
      code: 'lease_held',
    });
    // The held Todo's lease is asked for first: no lease was taken, no Todo moved, nothing was committed.
    expect(await listTodos(root, 'g1')).toEqual(before);
    const head = await withGoalWork(root, 'g1', (work) => work.transactionCount());
    // Bad input is refused before any lease is taken.
    for (const todo_ids of [['t2', 't2'], Array.from({ length: 101 }, (_, i) => `t${i}`)]) {
      await expect(
        updateTodos(root, 'g1', { operation_id: 'op-8', todo_ids, note: 'x', lease_owner: 'operator:test' }),
      ).rejects.toMatchObject({ code: 'work_request_invalid' });
    }
    expect(await withGoalWork(root, 'g1', (work) => work.transactionCount())).toBe(head);
    // Once the session lets go, the same operation id applies.
    await withGoalWork(root, 'g1', async (work) => {
      const lease = (await work.leaseStatus('t1')).lease!;
      await work.releaseLease({
        operation_id: 'session:s1:release',
        todo_id: 't1',
        owner: lease.owner,
        execution_key: lease.execution_key,
        lease_epoch: lease.lease_epoch,
        expected_version: lease.version,
      });
    });
    const applied = await updateTodos(root, 'g1', {
      operation_id: 'op-7',
      todo_ids: ['t2', 't1'],
      status: 'done',
      lease_owner: 'operator:test',
    });
    expect(applied.receipt.todos!.map((t) => [t.todo_id, t.status])).toEqual([
      ['t2', 'done'],
      ['t1', 'done'],
    ]);
  });

  it('a closed or missing Todo in the batch is refused before any lease is taken', async () => {
    const root = await hardLeaseGoal();
    await addTodo(root, 'g1', { operation_id: 'add-3', todo_id: 't3', title: 'Publish' });
    await updateTodo(root, 'g1', {
      operation_id: 'close-3',
      todo_id: 't3',
      status: 'done',
      lease_owner: 'operator:test',
    });
    const before = await listTodos(root, 'g1');
    await expect(
      updateTodos(root, 'g1', {
        operation_id: 'op-9',
        todo_ids: ['t2', 't3'],
        note: 'checked',
        lease_owner: 'operator:test',
      }),
    ).rejects.toMatchObject({
      code: 'todo_terminal',
    });
    await expect(
      updateTodos(root, 'g1', {
        operation_id: 'op-9',
        todo_ids: ['t2', 'nope'],
        note: 'checked',
        lease_owner: 'operator:test',
      }),
    ).rejects.toMatchObject({
      code: 'todo_not_found',
    });
    expect(await listTodos(root, 'g1')).toEqual(before);
  });

  it('an update whose answer was lost after its lease landed is asked again: applied once, under that lease or a new one', async () => {
    const root = await hardLeaseGoal();
    // t2: the operator's lease step committed, then the process died before the update (a failover, a crash).
    const takeAsItWould = (op: string) =>
      withGoalWork(root, 'g1', async (work) => {
        const status = await work.leaseStatus('t2');
        await work.acquireLease({
          operation_id: `${op}:lease`,
          todo_id: 't2',
          owner: 'operator:test',
          execution_key: op,
          ttl_ms: 600_000,
          expected_version: status.lease?.version ?? 0,
        });
      });
    await takeAsItWould('lost-1');
    const again = await updateTodo(root, 'g1', {
      operation_id: 'lost-1',
      todo_id: 't2',
      note: 'asked again',
      lease_owner: 'operator:test',
    });
    expect(again.result).toBe('applied');
    expect(await leaseOwnerOf(root, 't2')).toBeNull();
    // The same, but the lease it took was revoked meanwhile (a database rotation): a new lease, then the update, once.
    await takeAsItWould('lost-2');
    await withGoalWork(root, 'g1', (work) =>
      work.revokeAuthority({ operation_id: 'rotation-1', reason: 'store_rotation' }),
    );
    const input = { operation_id: 'lost-2', todo_id: 't2', note: 'after a rotation', lease_owner: 'operator:test' };
    expect((await updateTodo(root, 'g1', input)).result).toBe('applied');
    expect((await updateTodo(root, 'g1', input)).result).toBe('already_applied');
    const t2 = (await listTodos(root, 'g1')).find((t) => t.todo_id === 't2')!;
    expect(t2.note).toBe('after a rotation');
  });

  it('an unknown Goal is goal_not_found and a missing root root_not_found', async () => {
    const root = tempRoot('loopx-runtime-todos-');
    initRoot(root);
    await expect(listTodos(root, 'nope')).rejects.toMatchObject({ code: 'goal_not_found' });
    await expect(listTodos(`${root}/missing`, 'g1')).rejects.toMatchObject({ code: 'root_not_found' });
  });
});
