/**
 * `moveOut`: the last transaction of a store whose Goal work moves to another store. It releases
 * every active lease, replaces the writer fence and marks the store moved; from then on every
 * write — with a fence, a lease or neither — is refused `work_store_moved`, while a write that
 * landed before the move replays its receipt, receipts and history stay readable, and the
 * retained-prefix export still verifies and replays to the moved head. On memory, SQLite and the
 * real PostgreSQL server.
 */
import { describe, expect, it } from 'vitest';
import { openWork, verifyRetainedPrefix, type WorkOwner, type WorkProvider } from '../../../src/owners/work/index.js';
import { pgWorkHarnesses } from './pg-harness.js';
import { HARNESSES, manualClock, rejectionOf } from './support.js';

const pg = pgWorkHarnesses();
const TO = { provider: 'sqlite', store_identity: `sqlite:${'ab'.repeat(16)}` };

const opens: ReadonlyArray<[string, () => Promise<WorkProvider>]> = [
  ...HARNESSES.map(([name, make]): [string, () => Promise<WorkProvider>] => [name, async () => make().open()]),
  ['postgresql', () => pg().open()],
];

async function populated(
  open: () => Promise<WorkProvider>,
): Promise<{ w: WorkOwner; fence: { fence_id: string; epoch: number } }> {
  const w = await openWork({ provider: await open(), clock: manualClock().now });
  await w.setHandoffMode({ operation_id: 'mode', handoff_mode: 'hard_lease' });
  await w.addTodo({ operation_id: 'add-1', title: 'Draft' });
  await w.addTodo({ operation_id: 'add-2', title: 'Publish' });
  const fence = (await w.engageFence({ operation_id: 'fence' })).receipt.fence!;
  await w.acquireLease({
    operation_id: 'lease',
    todo_id: 't1',
    owner: 'agent',
    execution_key: 'k',
    ttl_ms: 60_000,
    expected_version: 0,
    fence,
  });
  return { w, fence };
}

describe.each(opens)('a store moved out: %s', (_name, open) => {
  it('takes no write after the move, replays what landed before it, and keeps its history readable', async () => {
    const { w, fence } = await populated(open);
    const before = await w.view();
    const moved = await w.moveOut({ operation_id: 'move', move_id: 'mv-1', to: TO });
    expect(moved.result).toBe('applied');
    // The same request again is its readback.
    expect((await w.moveOut({ operation_id: 'move', move_id: 'mv-1', to: TO })).result).toBe('already_applied');
    const head = await w.view();
    expect(head.cursor).toBe(before.cursor + 1);
    expect(head.moved_to).toEqual({ move_id: 'mv-1', ...TO });
    // The lease it held was released and the fence replaced in the same transaction.
    expect(head.todos.find((t) => t.todo_id === 't1')!.lease).toMatchObject({ status: 'released' });
    expect(head.fence_epoch).toBe(fence.epoch + 1);

    const lease = { owner: 'agent', execution_key: 'k', lease_epoch: 1 };
    for (const write of [
      () => w.addTodo({ operation_id: 'late-add', title: 'x' }),
      () => w.updateTodo({ operation_id: 'late-update', todo_id: 't2', note: 'x' }),
      () => w.updateTodo({ operation_id: 'late-leased', todo_id: 't1', note: 'x', lease, fence }),
      () => w.claimTodo({ operation_id: 'late-claim', todo_id: 't2', agent: 'someone' }),
      () => w.engageFence({ operation_id: 'late-fence' }),
      () => w.setHandoffMode({ operation_id: 'late-mode', handoff_mode: 'soft_claim' }),
      () => w.moveOut({ operation_id: 'move-again', move_id: 'mv-2', to: TO }),
    ]) {
      const e = await rejectionOf(write);
      expect(e.code).toBe('work_store_moved');
      expect(e.nextAction).toBe('work with the Goal where it continues, through its root: loopx todo list --goal g1');
    }
    expect((await w.view()).cursor).toBe(head.cursor);
    // A write that landed before the move answers as it did.
    const again = await w.addTodo({ operation_id: 'add-2', title: 'Publish' });
    expect(again).toMatchObject({ result: 'already_applied' });
    expect((await w.readReceipt('lease'))?.receipt.operation).toBe('acquire_lease');
    // The export verifies and replays to the moved head.
    const ex = await w.exportRetainedPrefix();
    const v = verifyRetainedPrefix(ex.records);
    expect(v.findings).toEqual([]);
    expect(v.projection).toMatchObject({ moved_to: head.moved_to, todos: head.todos });
    w.close();
  });

  it('refuses a move to itself or to a store it cannot name', async () => {
    const { w } = await populated(open);
    const self = (await w.storeIdentity()).store_identity;
    for (const to of [
      { provider: 'sqlite', store_identity: self },
      { provider: 'SQLite', store_identity: TO.store_identity },
      { provider: 'sqlite', store_identity: 'sqlite:nothex' },
    ])
      expect((await rejectionOf(() => w.moveOut({ operation_id: 'm', move_id: 'mv', to }))).code).toBe(
        'work_request_invalid',
      );
    expect((await w.view()).moved_to).toBeUndefined();
    w.close();
  });
});
