/**
 * The work owner over both providers: Todos, operation receipts (idempotent, across restarts),
 * the writer fence, revision preconditions, ambiguous commits, contention and history contiguity.
 */
import { describe, expect, it } from 'vitest';
import { openWork, type WorkProvider } from '../../../src/owners/work/index.js';
import { GOAL, HARNESSES, collect, manualClock, owner, rejectionOf, sqliteHarness } from './support.js';

describe.each(HARNESSES)('work owner: %s', (_name, make) => {
  it('adds Todos with generated ids and every field, in creation order', async () => {
    const w = await owner(make());
    const a = await w.addTodo({
      operation_id: 'add-1',
      title: 'Write the guide',
      text: 'sections 1-3',
      priority: 2,
      note: 'draft',
    });
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
    await w.addTodo({ operation_id: 'add-2', todo_id: 't2-explicit', title: 'Second' });
    await w.addTodo({ operation_id: 'add-3', title: 'Third', status: 'blocked' });
    expect((await w.listTodos()).map((t) => [t.todo_id, t.status])).toEqual([
      ['t1', 'open'],
      ['t2-explicit', 'open'],
      ['t2', 'blocked'],
    ]);
    expect(await w.getTodo('nope')).toBeUndefined();
    expect((await rejectionOf(() => w.addTodo({ operation_id: 'add-4', todo_id: 't1', title: 'dup' }))).code).toBe(
      'todo_exists',
    );
    expect((await rejectionOf(() => w.addTodo({ operation_id: 'add-5', title: '' }))).code).toBe(
      'work_request_invalid',
    );
    expect((await rejectionOf(() => w.addTodo({ operation_id: 'add-6', title: 'x', status: 'done' }))).code).toBe(
      'work_request_invalid',
    );
    expect((await rejectionOf(() => w.addTodo({ operation_id: 'bad id!', title: 'x' }))).code).toBe(
      'work_request_invalid',
    );
    expect(await w.view()).toMatchObject({
      goal_id: GOAL,
      authority_revision: 3,
      cursor: 3,
      handoff_mode: 'soft_claim',
      fence_epoch: null,
    });
  });

  it('a repeated operation returns its original receipt field for field and never applies twice', async () => {
    const clock = manualClock();
    const w = await owner(make(), clock);
    const first = await w.addTodo({ operation_id: 'add-1', title: 'Once' });
    clock.advance(60_000);
    const again = await w.addTodo({ operation_id: 'add-1', title: 'Once' });
    expect(again.result).toBe('already_applied');
    expect(again.receipt).toEqual(first.receipt);
    expect(again.cursor).toBe(first.cursor);
    expect(again.provider_revision).toBe(first.provider_revision);
    expect(await w.listTodos()).toHaveLength(1);
    expect(await w.transactionCount()).toBe(1);
    // Equivalent requests normalize to the same digest (defaults filled in).
    expect(
      (await w.addTodo({ operation_id: 'add-1', title: 'Once', text: '', priority: 0, note: null, status: 'open' }))
        .result,
    ).toBe('already_applied');
    const u1 = await w.updateTodo({ operation_id: 'up-1', todo_id: 't1', status: 'done' });
    const u2 = await w.updateTodo({ operation_id: 'up-1', todo_id: 't1', status: 'done' });
    expect(u2).toEqual({ ...u1, result: 'already_applied' });
    expect((await w.getTodo('t1'))!.todo_revision).toBe(2);
  });

  it('a reused operation id with a different request is operation_identity_mismatch', async () => {
    const w = await owner(make());
    await w.addTodo({ operation_id: 'add-1', title: 'One' });
    const e = await rejectionOf(() => w.addTodo({ operation_id: 'add-1', title: 'Another' }));
    expect(e.code).toBe('operation_identity_mismatch');
    expect(e.kind).toBe('rejected');
    const e2 = await rejectionOf(() => w.updateTodo({ operation_id: 'add-1', todo_id: 't1', note: 'x' }));
    expect(e2.code).toBe('operation_identity_mismatch');
    expect((await w.listTodos()).map((t) => t.title)).toEqual(['One']);
  });

  it('receipts are idempotent across a restart (reopened store)', async () => {
    const h = make();
    const clock = manualClock();
    const w1 = await openWork({ provider: h.open(), clock: clock.now });
    const add = await w1.addTodo({ operation_id: 'add-1', title: 'Survive' });
    const fence = await w1.engageFence({ operation_id: 'fence-1' });
    w1.close();
    clock.advance(3_600_000);
    const w2 = await openWork({ provider: h.open(), clock: clock.now });
    const replay = await w2.addTodo({ operation_id: 'add-1', title: 'Survive' });
    expect(replay.result).toBe('already_applied');
    expect(replay.receipt).toEqual(add.receipt);
    expect((await w2.engageFence({ operation_id: 'fence-1' })).receipt.fence).toEqual(fence.receipt.fence);
    expect((await w2.view()).fence_epoch).toBe(1);
    expect((await rejectionOf(() => w2.addTodo({ operation_id: 'add-1', title: 'Changed' }))).code).toBe(
      'operation_identity_mismatch',
    );
    expect(await w2.transactionCount()).toBe(2);
    expect(await w2.readReceipt('add-1')).toEqual({
      receipt: add.receipt,
      cursor: add.cursor,
      provider_revision: add.provider_revision,
    });
  });

  it('updates bump the Todo revision; a stale expected revision is a conflict', async () => {
    const w = await owner(make());
    await w.addTodo({ operation_id: 'a', title: 'T' });
    const r = await w.updateTodo({
      operation_id: 'u1',
      todo_id: 't1',
      status: 'blocked',
      note: 'waiting on review',
      expected_todo_revision: 1,
    });
    expect(r.receipt.todo).toMatchObject({ status: 'blocked', note: 'waiting on review', todo_revision: 2 });
    const e = await rejectionOf(() =>
      w.updateTodo({ operation_id: 'u2', todo_id: 't1', status: 'open', expected_todo_revision: 1 }),
    );
    expect(e.code).toBe('todo_revision_mismatch');
    expect(e.kind).toBe('conflict');
    expect((await rejectionOf(() => w.updateTodo({ operation_id: 'u3', todo_id: 'missing', note: 'x' }))).code).toBe(
      'todo_not_found',
    );
    expect((await rejectionOf(() => w.updateTodo({ operation_id: 'u4', todo_id: 't1' }))).code).toBe(
      'work_request_invalid',
    );
    await w.updateTodo({ operation_id: 'u5', todo_id: 't1', status: 'deferred', note: null });
    expect(await w.getTodo('t1')).toMatchObject({ status: 'deferred', note: null, todo_revision: 3 });
  });

  it('a batch updates several Todos as one transaction: one cursor, the post-images in request order, replayed whole', async () => {
    const w = await owner(make());
    for (const title of ['A', 'B', 'C']) await w.addTodo({ operation_id: `add-${title}`, title });
    const batch = {
      operation_id: 'b1',
      updates: [
        { todo_id: 't3', status: 'done' as const, note: 'shipped' },
        { todo_id: 't1', title: 'A, renamed', expected_todo_revision: 1 },
      ],
    };
    const r = await w.updateTodos(batch);
    expect(r).toMatchObject({ result: 'applied', cursor: 4, observed_authority_revision: 4 });
    expect(r.receipt).toMatchObject({ operation: 'update_todos', todo_id: null, todo: null, cursor: 4 });
    expect(r.receipt.todos!.map((t) => [t.todo_id, t.status, t.title, t.todo_revision])).toEqual([
      ['t3', 'done', 'C', 2],
      ['t1', 'open', 'A, renamed', 2],
    ]);
    const page = await w.history(3, 10);
    expect(page.transactions).toHaveLength(1);
    expect(page.transactions[0]!.events.map((e) => e.type === 'todo_changed' && [e.change, e.todo.todo_id])).toEqual([
      ['update', 't3'],
      ['update', 't1'],
    ]);
    const again = await w.updateTodos(batch);
    expect(again).toEqual({ ...r, result: 'already_applied' });
    expect(await w.transactionCount()).toBe(4);
    // Another request under the same id, even one update fewer, is not a replay.
    expect((await rejectionOf(() => w.updateTodos({ ...batch, updates: batch.updates.slice(0, 1) }))).code).toBe(
      'operation_identity_mismatch',
    );
    expect((await w.listTodos()).map((t) => t.todo_revision)).toEqual([2, 1, 2]);
  });

  it('a batch with one refused update commits nothing; a malformed batch is refused before it is decided', async () => {
    const w = await owner(make());
    await w.addTodo({ operation_id: 'a1', title: 'A' });
    await w.addTodo({ operation_id: 'a2', title: 'B' });
    const stale = await rejectionOf(() =>
      w.updateTodos({
        operation_id: 'b1',
        updates: [
          { todo_id: 't1', status: 'done' },
          { todo_id: 't2', note: 'x', expected_todo_revision: 7 },
        ],
      }),
    );
    expect(stale).toMatchObject({ code: 'todo_revision_mismatch', details: { todo_id: 't2' } });
    expect(
      (
        await rejectionOf(() =>
          w.updateTodos({
            operation_id: 'b2',
            updates: [
              { todo_id: 't1', note: 'x' },
              { todo_id: 'nope', note: 'y' },
            ],
          }),
        )
      ).code,
    ).toBe('todo_not_found');
    expect(await w.transactionCount()).toBe(2);
    expect((await w.listTodos()).map((t) => [t.status, t.note, t.todo_revision])).toEqual([
      ['open', null, 1],
      ['open', null, 1],
    ]);
    const malformed = [
      [],
      Array.from({ length: 101 }, (_, i) => ({ todo_id: `t${i + 1}`, note: 'x' })),
      [
        { todo_id: 't1', note: 'x' },
        { todo_id: 't1', status: 'done' as const },
      ],
      [{ todo_id: 't1' }],
      [{ todo_id: 't1', status: 'finished' as never }],
      [null as never],
    ];
    for (const updates of malformed) {
      expect((await rejectionOf(() => w.updateTodos({ operation_id: 'b3', updates }))).code).toBe(
        'work_request_invalid',
      );
    }
    expect((await rejectionOf(() => w.updateTodos({ operation_id: 'b3', updates: 'all' as never }))).code).toBe(
      'work_request_invalid',
    );
    // The id of a refused batch is still free: the same id with a good batch applies.
    expect((await w.updateTodos({ operation_id: 'b1', updates: [{ todo_id: 't2', note: 'x' }] })).result).toBe(
      'applied',
    );
  });

  it('a batch closing a Todo in hard_lease mode needs its lease, and the lease ends with it', async () => {
    const w = await owner(make());
    await w.addTodo({ operation_id: 'a1', title: 'A' });
    await w.addTodo({ operation_id: 'a2', title: 'B' });
    await w.setHandoffMode({ operation_id: 'hm', handoff_mode: 'hard_lease' });
    const lease = (
      await w.acquireLease({
        operation_id: 'l1',
        todo_id: 't1',
        owner: 'agent-a',
        execution_key: 'k',
        ttl_ms: 60_000,
        expected_version: 0,
      })
    ).receipt.lease!;
    expect(
      (
        await rejectionOf(() =>
          w.updateTodos({
            operation_id: 'b1',
            updates: [
              { todo_id: 't2', note: 'n' },
              { todo_id: 't1', status: 'done' },
            ],
          }),
        )
      ).code,
    ).toBe('lease_required');
    const proof = { owner: lease.owner, execution_key: lease.execution_key, lease_epoch: lease.lease_epoch };
    const r = await w.updateTodos({
      operation_id: 'b2',
      updates: [
        { todo_id: 't2', note: 'n' },
        { todo_id: 't1', status: 'done', lease: proof },
      ],
    });
    expect(r.receipt.todos!.map((t) => [t.todo_id, t.status, t.lease?.status ?? null])).toEqual([
      ['t2', 'open', null],
      ['t1', 'done', 'released'],
    ]);
    expect((await w.leaseStatus('t1')).authorization).toBe('released');
  });

  it('a stale expected authority revision is refused', async () => {
    const w = await owner(make());
    await w.addTodo({ operation_id: 'a', title: 'T', expected_authority_revision: 0 });
    const e = await rejectionOf(() => w.addTodo({ operation_id: 'b', title: 'U', expected_authority_revision: 0 }));
    expect(e.code).toBe('authority_revision_mismatch');
    expect(
      (await w.addTodo({ operation_id: 'c', title: 'U', expected_authority_revision: 1 })).receipt.authority_revision,
    ).toBe(2);
  });

  it('soft claims: one claimant at a time; only the claimant unclaims; terminal Todos are not claimed', async () => {
    const w = await owner(make());
    await w.addTodo({ operation_id: 'a', title: 'T' });
    expect((await w.claimTodo({ operation_id: 'c1', todo_id: 't1', agent: 'agent-a' })).receipt.todo!.claimed_by).toBe(
      'agent-a',
    );
    expect((await w.getTodo('t1'))!.status).toBe('open'); // a claimed Todo stays open
    expect((await rejectionOf(() => w.claimTodo({ operation_id: 'c2', todo_id: 't1', agent: 'agent-b' }))).code).toBe(
      'todo_claimed',
    );
    expect((await rejectionOf(() => w.unclaimTodo({ operation_id: 'c3', todo_id: 't1', agent: 'agent-b' }))).code).toBe(
      'todo_not_claimed_by_agent',
    );
    expect(
      (await w.unclaimTodo({ operation_id: 'c4', todo_id: 't1', agent: 'agent-a' })).receipt.todo!.claimed_by,
    ).toBeNull();
    await w.updateTodo({ operation_id: 'd', todo_id: 't1', status: 'done' });
    expect((await rejectionOf(() => w.claimTodo({ operation_id: 'c5', todo_id: 't1', agent: 'agent-b' }))).code).toBe(
      'todo_terminal',
    );
  });

  it('an old writer’s fence token is refused after the fence rotates, and nothing applies', async () => {
    const w = await owner(make());
    const first = (await w.engageFence({ operation_id: 'fence-1' })).receipt.fence!;
    expect(first.epoch).toBe(1);
    await w.addTodo({ operation_id: 'a', title: 'T', fence: first });
    const second = (await w.engageFence({ operation_id: 'fence-2' })).receipt.fence!;
    expect(second.epoch).toBe(2);
    expect(second.fence_id).not.toBe(first.fence_id);
    const count = await w.transactionCount();
    const e = await rejectionOf(() =>
      w.updateTodo({ operation_id: 'stale-write', todo_id: 't1', status: 'done', fence: first }),
    );
    expect(e.code).toBe('writer_fenced');
    expect(e.kind).toBe('conflict');
    expect(e.details).toMatchObject({ presented_epoch: 1, current_epoch: 2 });
    // A fenced writer's retry of an already-applied operation is refused too: it learns nothing.
    expect((await rejectionOf(() => w.addTodo({ operation_id: 'a', title: 'T', fence: first }))).code).toBe(
      'writer_fenced',
    );
    // A forged token with the right epoch is refused as well.
    expect(
      (
        await rejectionOf(() =>
          w.addTodo({ operation_id: 'b', title: 'U', fence: { fence_id: first.fence_id, epoch: 2 } }),
        )
      ).code,
    ).toBe('writer_fenced');
    // Nor can it take the fence back with its old token.
    expect((await rejectionOf(() => w.engageFence({ operation_id: 'fence-3', fence: first }))).code).toBe(
      'writer_fenced',
    );
    expect(await w.transactionCount()).toBe(count);
    expect((await w.getTodo('t1'))!.status).toBe('open');
    expect(
      (await w.updateTodo({ operation_id: 'fresh-write', todo_id: 't1', status: 'done', fence: second })).result,
    ).toBe('applied');
  });

  it('a fence token presented to a store with no fence is refused', async () => {
    const w = await owner(make());
    expect(
      (
        await rejectionOf(() =>
          w.addTodo({ operation_id: 'a', title: 'T', fence: { fence_id: '0'.repeat(32), epoch: 1 } }),
        )
      ).code,
    ).toBe('writer_fenced');
  });

  it('history pages are contiguous and iterateHistory streams every transaction', async () => {
    const w = await owner(make());
    for (let i = 1; i <= 12; i++) await w.addTodo({ operation_id: `a${i}`, title: `T${i}` });
    const page = await w.history(0, 5);
    expect(page.transactions.map((t) => t.cursor)).toEqual([1, 2, 3, 4, 5]);
    expect(page.has_more).toBe(true);
    expect(page.transactions[0]!.events[0]).toMatchObject({ type: 'todo_added', todo_seq: 1 });
    expect(page.transactions[0]!.receipt.operation_id).toBe('a1');
    expect((await collect(w.iterateHistory(0, 5))).map((t) => t.cursor)).toEqual(
      Array.from({ length: 12 }, (_, i) => i + 1),
    );
    expect((await collect(w.iterateHistory(10, 1))).map((t) => t.operation_id)).toEqual(['a11', 'a12']);
  });
});

/** Wraps a provider, overriding some of its methods (test seam; the contract stays intact underneath). */
const wrap = (p: WorkProvider, over: Partial<WorkProvider>): WorkProvider => ({
  provider: p.provider,
  storeIdentity: () => p.storeIdentity(),
  load: () => p.load(),
  commit: (r) => p.commit(r),
  readReceipt: (id) => p.readReceipt(id),
  importLineage: (r) => p.importLineage(r),
  lineage: () => p.lineage(),
  scanLineage: (s, a, l) => p.scanLineage(s, a, l),
  scanCommitted: (a, l) => p.scanCommitted(a, l),
  close: () => p.close(),
  ...over,
});

describe('work owner against provider outcomes', () => {
  it('a history gap is provider_protocol_violation', async () => {
    const h = sqliteHarness();
    const w = await owner(h);
    for (let i = 1; i <= 4; i++) await w.addTodo({ operation_id: `a${i}`, title: `T${i}` });
    const inner = h.open();
    const gappy = await openWork({
      provider: wrap(inner, {
        scanCommitted: async (a, l) => {
          const page = await inner.scanCommitted(a, l);
          return { ...page, transactions: page.transactions.filter((t) => t.cursor !== 3) };
        },
      }),
    });
    const e = await rejectionOf(() => gappy.history(0, 10));
    expect(e.code).toBe('provider_protocol_violation');
    expect(e.details).toMatchObject({ cursor: 3 });
    expect((await rejectionOf(() => collect(gappy.iterateHistory()))).code).toBe('provider_protocol_violation');
  });

  it('an ambiguous commit that landed resolves by receipt readback to applied, once', async () => {
    const h = sqliteHarness();
    const inner = h.open();
    const w = await openWork({
      provider: wrap(inner, { commit: async (r) => (await inner.commit(r), { status: 'ambiguous' }) }),
    });
    const r = await w.addTodo({ operation_id: 'a', title: 'T' });
    expect(r.result).toBe('applied');
    expect(r.cursor).toBe(1);
    expect(await w.transactionCount()).toBe(1);
  });

  it('an ambiguous commit that did not land is store_outcome_unproved; a retry under the same id applies once', async () => {
    const h = sqliteHarness();
    const inner = h.open();
    let fail = true;
    const w = await openWork({
      provider: wrap(inner, { commit: async (r) => (fail ? { status: 'ambiguous' } : inner.commit(r)) }),
    });
    const e = await rejectionOf(() => w.addTodo({ operation_id: 'a', title: 'T' }));
    expect(e.code).toBe('store_outcome_unproved');
    expect(await w.transactionCount()).toBe(0);
    fail = false;
    expect((await w.addTodo({ operation_id: 'a', title: 'T' })).result).toBe('applied');
    expect((await w.addTodo({ operation_id: 'a', title: 'T' })).result).toBe('already_applied');
    expect(await w.transactionCount()).toBe(1);
  });

  it('a failed commit is work_commit_failed with the provider code and nothing applied', async () => {
    const inner = sqliteHarness().open();
    const w = await openWork({
      provider: wrap(inner, { commit: async () => ({ status: 'failed', code: 'provider_busy' }) }),
    });
    const e = await rejectionOf(() => w.addTodo({ operation_id: 'a', title: 'T' }));
    expect(e.code).toBe('work_commit_failed');
    expect(e.details).toMatchObject({ provider_code: 'provider_busy' });
    expect((await inner.load()).cursor).toBe(0);
  });

  it('a writer that lost the race re-decides on the fresh head (two writers on one database)', async () => {
    const h = sqliteHarness();
    const other = await owner(h);
    const inner = h.open();
    let interleaved = false;
    const w = await openWork({
      provider: wrap(inner, {
        commit: async (r) => {
          if (!interleaved) {
            interleaved = true;
            await other.addTodo({ operation_id: 'other', title: 'From the other writer' }); // lands first
          }
          return inner.commit(r);
        },
      }),
    });
    const r = await w.addTodo({ operation_id: 'mine', title: 'Mine' });
    expect(r.result).toBe('applied');
    expect(r.cursor).toBe(2);
    expect(r.receipt.todo!.todo_id).toBe('t2'); // decided again after the other writer's t1
    expect((await w.listTodos()).map((t) => t.todo_id)).toEqual(['t1', 't2']);
  });

  it('a racing writer that committed the same operation id turns into a replay', async () => {
    const h = sqliteHarness();
    const other = await owner(h);
    const inner = h.open();
    let raced = false;
    const w = await openWork({
      provider: wrap(inner, {
        commit: async (r) => {
          if (!raced) {
            raced = true;
            await other.addTodo({ operation_id: 'same', title: 'T' });
          }
          return inner.commit(r);
        },
      }),
    });
    expect((await w.addTodo({ operation_id: 'same', title: 'T' })).result).toBe('already_applied');
    expect(await w.transactionCount()).toBe(1);
  });
});
