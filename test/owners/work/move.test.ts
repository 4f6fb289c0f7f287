/**
 * A Goal's work moved between stores of different providers, at the work owner: the source's last
 * transaction marks it moved (`moveOut`), the new store imports every lineage the source holds and
 * the source's own history, then adopts its head. Every receipt reads back at the destination
 * exactly as the source answered it, a write under one of those operation ids replays, the Todos
 * continue, and the delivery incarnation only grows. SQLite → PostgreSQL → SQLite, on the real
 * server, and memory → SQLite.
 */
import { describe, expect, it } from 'vitest';
import { openWork, type ReceiptReadback, type WorkOwner, type WorkProvider } from '../../../src/owners/work/index.js';
import { pgWorkHarnesses } from './pg-harness.js';
import { manualClock, memoryHarness, rejectionOf, sqliteHarness } from './support.js';

const pg = pgWorkHarnesses();
const open = async (p: WorkProvider | Promise<WorkProvider>): Promise<WorkOwner> =>
  openWork({ provider: await p, clock: manualClock().now });

async function populate(w: WorkOwner, prefix: string): Promise<string[]> {
  const ops = [`${prefix}-add-a`, `${prefix}-add-b`, `${prefix}-note`, `${prefix}-lease`, `${prefix}-mode`];
  await w.setHandoffMode({ operation_id: ops[4]!, handoff_mode: 'hard_lease' });
  await w.addTodo({ operation_id: ops[0]!, title: `${prefix} a` });
  await w.addTodo({ operation_id: ops[1]!, title: `${prefix} b` });
  const todo = (await w.listTodos()).at(-1)!.todo_id;
  await w.updateTodo({ operation_id: ops[2]!, todo_id: todo, note: 'half done' });
  await w.acquireLease({
    operation_id: ops[3]!,
    todo_id: todo,
    owner: 'agent',
    execution_key: 'k',
    ttl_ms: 60_000,
    expected_version: 0,
  });
  return ops;
}

async function receipts(w: WorkOwner, ops: readonly string[]): Promise<(ReceiptReadback | undefined)[]> {
  return Promise.all(ops.map((op) => w.readReceipt(op)));
}

async function move(from: WorkOwner, to: WorkOwner, moveId: string): Promise<void> {
  const identity = await to.storeIdentity();
  await from.moveOut({
    operation_id: `move:${moveId}:out`,
    move_id: moveId,
    to: { provider: identity.store_identity.split(':')[0]!, store_identity: identity.store_identity },
  });
  const r = await to.importMovedWork({ operation_id: `move:${moveId}:in`, move_id: moveId, source: from });
  expect(r.result).toBe('applied');
  // Again: its readback.
  expect((await to.importMovedWork({ operation_id: `move:${moveId}:in`, move_id: moveId, source: from })).result).toBe(
    'already_applied',
  );
}

describe('a Goal’s work moved to a store of another provider and back', () => {
  it('SQLite → PostgreSQL → SQLite: every receipt reads back exactly, the Todos go on, nothing applies twice', async () => {
    const first = await open(sqliteHarness().open());
    const ops1 = await populate(first, 'one');
    const before1 = await receipts(first, ops1);
    const todos1 = await first.listTodos();

    const second = await open(pg().open());
    await move(first, second, 'a'.repeat(64));
    expect(await receipts(second, ops1)).toEqual(before1);
    // The Todos continue with the lease the source held released; the source refuses every write.
    expect((await second.listTodos()).map((t) => [t.todo_id, t.title, t.note])).toEqual(
      todos1.map((t) => [t.todo_id, t.title, t.note]),
    );
    expect((await second.listTodos()).every((t) => t.lease === null || t.lease.status === 'released')).toBe(true);
    expect((await rejectionOf(() => first.addTodo({ operation_id: 'late', title: 'x' }))).code).toBe(
      'work_store_moved',
    );
    // A write under an operation id the source committed is its replay, never a second application.
    const replay = await second.addTodo({ operation_id: ops1[0]!, title: 'one a' });
    expect(replay.result).toBe('already_applied');
    expect(replay.receipt).toEqual(before1[0]!.receipt);
    expect((await second.view()).delivery_incarnation).toBe((await first.view()).delivery_incarnation + 1);

    const ops2 = await populate(second, 'two');
    const before2 = await receipts(second, [...ops1, ...ops2]);
    const third = await open(sqliteHarness().open());
    await move(second, third, 'b'.repeat(64));
    expect(await receipts(third, [...ops1, ...ops2])).toEqual(before2);
    expect((await third.lineage()).map((l) => l.recovery_id)).toEqual(['a'.repeat(64), 'b'.repeat(64)]);
    expect((await third.view()).delivery_incarnation).toBe((await second.view()).delivery_incarnation + 1);
    expect((await third.addTodo({ operation_id: 'three-add', title: 'three' })).result).toBe('applied');
    expect((await third.listTodos()).map((t) => t.title)).toEqual(['one a', 'one b', 'two a', 'two b', 'three']);
    for (const w of [first, second, third]) w.close();
  });

  it('refuses a source that this move did not mark moved to this store, writing nothing', async () => {
    const source = await open(memoryHarness().open());
    await populate(source, 'm');
    const dest = await open(sqliteHarness().open());
    expect(
      (await rejectionOf(() => dest.importMovedWork({ operation_id: 'in', move_id: 'c'.repeat(64), source }))).code,
    ).toBe('work_move_source_not_moved');
    await source.moveOut({
      operation_id: 'out',
      move_id: 'c'.repeat(64),
      to: { provider: 'sqlite', store_identity: `sqlite:${'0'.repeat(32)}` },
    });
    expect(
      (await rejectionOf(() => dest.importMovedWork({ operation_id: 'in', move_id: 'c'.repeat(64), source }))).code,
    ).toBe('work_move_source_not_moved');
    expect(await dest.lineage()).toEqual([]);
    expect((await dest.view()).cursor).toBe(0);
  });
});
