/**
 * The work owner over both providers: Todos, operation receipts (idempotent, across restarts),
 * the writer fence, revision preconditions, ambiguous commits, contention and history contiguity.
 */
import { describe, expect, it } from 'vitest';
import { openWork, type WorkProvider } from '../../../src/owners/work/index.js';
import { GOAL, HARNESSES, errorOf, manualClock, owner, sqliteHarness } from './support.js';

describe.each(HARNESSES)('work owner: %s', (_name, make) => {
  it('adds Todos with generated ids and every field, in creation order', () => {
    const w = owner(make());
    const a = w.addTodo({ operation_id: 'add-1', title: 'Write the guide', text: 'sections 1-3', priority: 2, note: 'draft' });
    expect(a.result).toBe('applied');
    expect(a.cursor).toBe(1);
    expect(a.receipt.todo).toEqual({
      todo_id: 't1',
      title: 'Write the guide',
      text: 'sections 1-3',
      status: 'open',
      priority: 2,
      note: 'draft',
      claimed_by: null,
      created_at: '2030-01-01T00:00:00.000Z',
      updated_at: '2030-01-01T00:00:00.000Z',
      todo_revision: 1,
      lease: null,
    });
    w.addTodo({ operation_id: 'add-2', todo_id: 't2-explicit', title: 'Second' });
    w.addTodo({ operation_id: 'add-3', title: 'Third', status: 'blocked' });
    expect(w.listTodos().map((t) => [t.todo_id, t.status])).toEqual([['t1', 'open'], ['t2-explicit', 'open'], ['t2', 'blocked']]);
    expect(w.getTodo('nope')).toBeUndefined();
    expect(errorOf(() => w.addTodo({ operation_id: 'add-4', todo_id: 't1', title: 'dup' })).code).toBe('todo_exists');
    expect(errorOf(() => w.addTodo({ operation_id: 'add-5', title: '' })).code).toBe('work_request_invalid');
    expect(errorOf(() => w.addTodo({ operation_id: 'add-6', title: 'x', status: 'done' })).code).toBe('work_request_invalid');
    expect(errorOf(() => w.addTodo({ operation_id: 'bad id!', title: 'x' })).code).toBe('work_request_invalid');
    expect(w.view()).toMatchObject({ goal_id: GOAL, authority_revision: 3, cursor: 3, handoff_mode: 'soft_claim', fence_epoch: null });
  });

  it('a repeated operation returns its original receipt field for field and never applies twice', () => {
    const clock = manualClock();
    const w = owner(make(), clock);
    const first = w.addTodo({ operation_id: 'add-1', title: 'Once' });
    clock.advance(60_000);
    const again = w.addTodo({ operation_id: 'add-1', title: 'Once' });
    expect(again.result).toBe('already_applied');
    expect(again.receipt).toEqual(first.receipt);
    expect(again.cursor).toBe(first.cursor);
    expect(again.provider_revision).toBe(first.provider_revision);
    expect(w.listTodos()).toHaveLength(1);
    expect(w.transactionCount()).toBe(1);
    // Equivalent requests normalize to the same digest (defaults filled in).
    expect(w.addTodo({ operation_id: 'add-1', title: 'Once', text: '', priority: 0, note: null, status: 'open' }).result).toBe('already_applied');
    const u1 = w.updateTodo({ operation_id: 'up-1', todo_id: 't1', status: 'done' });
    const u2 = w.updateTodo({ operation_id: 'up-1', todo_id: 't1', status: 'done' });
    expect(u2).toEqual({ ...u1, result: 'already_applied' });
    expect(w.getTodo('t1')!.todo_revision).toBe(2);
  });

  it('a reused operation id with a different request is operation_identity_mismatch', () => {
    const w = owner(make());
    w.addTodo({ operation_id: 'add-1', title: 'One' });
    const e = errorOf(() => w.addTodo({ operation_id: 'add-1', title: 'Another' }));
    expect(e.code).toBe('operation_identity_mismatch');
    expect(e.kind).toBe('rejected');
    const e2 = errorOf(() => w.updateTodo({ operation_id: 'add-1', todo_id: 't1', note: 'x' }));
    expect(e2.code).toBe('operation_identity_mismatch');
    expect(w.listTodos().map((t) => t.title)).toEqual(['One']);
  });

  it('receipts are idempotent across a restart (reopened store)', () => {
    const h = make();
    const clock = manualClock();
    const w1 = openWork({ provider: h.open(), clock: clock.now });
    const add = w1.addTodo({ operation_id: 'add-1', title: 'Survive' });
    const fence = w1.engageFence({ operation_id: 'fence-1' });
    w1.close();
    clock.advance(3_600_000);
    const w2 = openWork({ provider: h.open(), clock: clock.now });
    const replay = w2.addTodo({ operation_id: 'add-1', title: 'Survive' });
    expect(replay.result).toBe('already_applied');
    expect(replay.receipt).toEqual(add.receipt);
    expect(w2.engageFence({ operation_id: 'fence-1' }).receipt.fence).toEqual(fence.receipt.fence);
    expect(w2.view().fence_epoch).toBe(1);
    expect(errorOf(() => w2.addTodo({ operation_id: 'add-1', title: 'Changed' })).code).toBe('operation_identity_mismatch');
    expect(w2.transactionCount()).toBe(2);
    expect(w2.readReceipt('add-1')).toEqual({ receipt: add.receipt, cursor: add.cursor, provider_revision: add.provider_revision });
  });

  it('updates bump the Todo revision; a stale expected revision is a conflict', () => {
    const w = owner(make());
    w.addTodo({ operation_id: 'a', title: 'T' });
    const r = w.updateTodo({ operation_id: 'u1', todo_id: 't1', status: 'blocked', note: 'waiting on review', expected_todo_revision: 1 });
    expect(r.receipt.todo).toMatchObject({ status: 'blocked', note: 'waiting on review', todo_revision: 2 });
    const e = errorOf(() => w.updateTodo({ operation_id: 'u2', todo_id: 't1', status: 'open', expected_todo_revision: 1 }));
    expect(e.code).toBe('todo_revision_mismatch');
    expect(e.kind).toBe('conflict');
    expect(errorOf(() => w.updateTodo({ operation_id: 'u3', todo_id: 'missing', note: 'x' })).code).toBe('todo_not_found');
    expect(errorOf(() => w.updateTodo({ operation_id: 'u4', todo_id: 't1' })).code).toBe('work_request_invalid');
    w.updateTodo({ operation_id: 'u5', todo_id: 't1', status: 'deferred', note: null });
    expect(w.getTodo('t1')).toMatchObject({ status: 'deferred', note: null, todo_revision: 3 });
  });

  it('a stale expected authority revision is refused', () => {
    const w = owner(make());
    w.addTodo({ operation_id: 'a', title: 'T', expected_authority_revision: 0 });
    const e = errorOf(() => w.addTodo({ operation_id: 'b', title: 'U', expected_authority_revision: 0 }));
    expect(e.code).toBe('authority_revision_mismatch');
    expect(w.addTodo({ operation_id: 'c', title: 'U', expected_authority_revision: 1 }).receipt.authority_revision).toBe(2);
  });

  it('soft claims: one claimant at a time; only the claimant unclaims; terminal Todos are not claimed', () => {
    const w = owner(make());
    w.addTodo({ operation_id: 'a', title: 'T' });
    expect(w.claimTodo({ operation_id: 'c1', todo_id: 't1', agent: 'agent-a' }).receipt.todo!.claimed_by).toBe('agent-a');
    expect(w.getTodo('t1')!.status).toBe('open'); // a claimed Todo stays open
    expect(errorOf(() => w.claimTodo({ operation_id: 'c2', todo_id: 't1', agent: 'agent-b' })).code).toBe('todo_claimed');
    expect(errorOf(() => w.unclaimTodo({ operation_id: 'c3', todo_id: 't1', agent: 'agent-b' })).code).toBe('todo_not_claimed_by_agent');
    expect(w.unclaimTodo({ operation_id: 'c4', todo_id: 't1', agent: 'agent-a' }).receipt.todo!.claimed_by).toBeNull();
    w.updateTodo({ operation_id: 'd', todo_id: 't1', status: 'done' });
    expect(errorOf(() => w.claimTodo({ operation_id: 'c5', todo_id: 't1', agent: 'agent-b' })).code).toBe('todo_terminal');
  });

  it('an old writer’s fence token is refused after the fence rotates, and nothing applies', () => {
    const w = owner(make());
    const first = w.engageFence({ operation_id: 'fence-1' }).receipt.fence!;
    expect(first.epoch).toBe(1);
    w.addTodo({ operation_id: 'a', title: 'T', fence: first });
    const second = w.engageFence({ operation_id: 'fence-2' }).receipt.fence!;
    expect(second.epoch).toBe(2);
    expect(second.fence_id).not.toBe(first.fence_id);
    const count = w.transactionCount();
    const e = errorOf(() => w.updateTodo({ operation_id: 'stale-write', todo_id: 't1', status: 'done', fence: first }));
    expect(e.code).toBe('writer_fenced');
    expect(e.kind).toBe('conflict');
    expect(e.details).toMatchObject({ presented_epoch: 1, current_epoch: 2 });
    // A fenced writer's retry of an already-applied operation is refused too: it learns nothing.
    expect(errorOf(() => w.addTodo({ operation_id: 'a', title: 'T', fence: first })).code).toBe('writer_fenced');
    // A forged token with the right epoch is refused as well.
    expect(errorOf(() => w.addTodo({ operation_id: 'b', title: 'U', fence: { fence_id: first.fence_id, epoch: 2 } })).code).toBe('writer_fenced');
    // Nor can it take the fence back with its old token.
    expect(errorOf(() => w.engageFence({ operation_id: 'fence-3', fence: first })).code).toBe('writer_fenced');
    expect(w.transactionCount()).toBe(count);
    expect(w.getTodo('t1')!.status).toBe('open');
    expect(w.updateTodo({ operation_id: 'fresh-write', todo_id: 't1', status: 'done', fence: second }).result).toBe('applied');
  });

  it('a fence token presented to a store with no fence is refused', () => {
    const w = owner(make());
    expect(errorOf(() => w.addTodo({ operation_id: 'a', title: 'T', fence: { fence_id: '0'.repeat(32), epoch: 1 } })).code).toBe('writer_fenced');
  });

  it('history pages are contiguous and iterateHistory streams every transaction', () => {
    const w = owner(make());
    for (let i = 1; i <= 12; i++) w.addTodo({ operation_id: `a${i}`, title: `T${i}` });
    const page = w.history(0, 5);
    expect(page.transactions.map((t) => t.cursor)).toEqual([1, 2, 3, 4, 5]);
    expect(page.has_more).toBe(true);
    expect(page.transactions[0]!.events[0]).toMatchObject({ type: 'todo_added', todo_seq: 1 });
    expect(page.transactions[0]!.receipt.operation_id).toBe('a1');
    expect([...w.iterateHistory(0, 5)].map((t) => t.cursor)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect([...w.iterateHistory(10, 1)].map((t) => t.operation_id)).toEqual(['a11', 'a12']);
  });
});

/** Wraps a provider, overriding some of its methods (test seam; the contract stays intact underneath). */
const wrap = (p: WorkProvider, over: Partial<WorkProvider>): WorkProvider => ({
  provider: p.provider,
  storeIdentity: () => p.storeIdentity(),
  load: () => p.load(),
  commit: (r) => p.commit(r),
  readReceipt: (id) => p.readReceipt(id),
  scanCommitted: (a, l) => p.scanCommitted(a, l),
  close: () => p.close(),
  ...over,
});

describe('work owner against provider outcomes', () => {
  it('a history gap is provider_protocol_violation', () => {
    const h = sqliteHarness();
    const w = owner(h);
    for (let i = 1; i <= 4; i++) w.addTodo({ operation_id: `a${i}`, title: `T${i}` });
    const inner = h.open();
    const gappy = openWork({
      provider: wrap(inner, {
        scanCommitted: (a, l) => {
          const page = inner.scanCommitted(a, l);
          return { ...page, transactions: page.transactions.filter((t) => t.cursor !== 3) };
        },
      }),
    });
    const e = errorOf(() => gappy.history(0, 10));
    expect(e.code).toBe('provider_protocol_violation');
    expect(e.details).toMatchObject({ cursor: 3 });
    expect(errorOf(() => [...gappy.iterateHistory()]).code).toBe('provider_protocol_violation');
  });

  it('an ambiguous commit that landed resolves by receipt readback to applied, once', () => {
    const h = sqliteHarness();
    const inner = h.open();
    const w = openWork({ provider: wrap(inner, { commit: (r) => (inner.commit(r), { status: 'ambiguous' }) }) });
    const r = w.addTodo({ operation_id: 'a', title: 'T' });
    expect(r.result).toBe('applied');
    expect(r.cursor).toBe(1);
    expect(w.transactionCount()).toBe(1);
  });

  it('an ambiguous commit that did not land is provider_outcome_unproved; a retry under the same id applies once', () => {
    const h = sqliteHarness();
    const inner = h.open();
    let fail = true;
    const w = openWork({ provider: wrap(inner, { commit: (r) => (fail ? { status: 'ambiguous' } : inner.commit(r)) }) });
    const e = errorOf(() => w.addTodo({ operation_id: 'a', title: 'T' }));
    expect(e.code).toBe('provider_outcome_unproved');
    expect(w.transactionCount()).toBe(0);
    fail = false;
    expect(w.addTodo({ operation_id: 'a', title: 'T' }).result).toBe('applied');
    expect(w.addTodo({ operation_id: 'a', title: 'T' }).result).toBe('already_applied');
    expect(w.transactionCount()).toBe(1);
  });

  it('a failed commit is work_commit_failed with the provider code and nothing applied', () => {
    const inner = sqliteHarness().open();
    const w = openWork({ provider: wrap(inner, { commit: () => ({ status: 'failed', code: 'provider_busy' }) }) });
    const e = errorOf(() => w.addTodo({ operation_id: 'a', title: 'T' }));
    expect(e.code).toBe('work_commit_failed');
    expect(e.details).toMatchObject({ provider_code: 'provider_busy' });
    expect(inner.load().cursor).toBe(0);
  });

  it('a writer that lost the race re-decides on the fresh head (two writers on one database)', () => {
    const h = sqliteHarness();
    const other = owner(h);
    const inner = h.open();
    let interleaved = false;
    const w = openWork({
      provider: wrap(inner, {
        commit: (r) => {
          if (!interleaved) {
            interleaved = true;
            other.addTodo({ operation_id: 'other', title: 'From the other writer' }); // lands first
          }
          return inner.commit(r);
        },
      }),
    });
    const r = w.addTodo({ operation_id: 'mine', title: 'Mine' });
    expect(r.result).toBe('applied');
    expect(r.cursor).toBe(2);
    expect(r.receipt.todo!.todo_id).toBe('t2'); // decided again after the other writer's t1
    expect(w.listTodos().map((t) => t.todo_id)).toEqual(['t1', 't2']);
  });

  it('a racing writer that committed the same operation id turns into a replay', () => {
    const h = sqliteHarness();
    const other = owner(h);
    const inner = h.open();
    let raced = false;
    const w = openWork({
      provider: wrap(inner, {
        commit: (r) => {
          if (!raced) {
            raced = true;
            other.addTodo({ operation_id: 'same', title: 'T' });
          }
          return inner.commit(r);
        },
      }),
    });
    expect(w.addTodo({ operation_id: 'same', title: 'T' }).result).toBe('already_applied');
    expect(w.transactionCount()).toBe(1);
  });
});
