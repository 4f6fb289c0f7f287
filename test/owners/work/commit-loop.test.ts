/**
 * What the work owner's commit loop reads before it commits, over both providers: a write after the
 * owner's own write decides over the head it committed (no load) and reads no receipt first; a head
 * another writer moved since is refused by the store's revision check and the write is decided
 * again over the fresh head; a refusal decided over the remembered head is decided again over a
 * fresh load; and a known operation id is still answered as its replay before any refusal of the
 * decision (its receipt is read once the decision refuses or the store refuses the id).
 */
import { describe, expect, it } from 'vitest';
import { openWork, type WorkProvider } from '../../../src/owners/work/index.js';
import { HARNESSES, manualClock, rejectionOf, type ProviderHarness } from './support.js';

/** `p` with its loads, receipt reads and commits counted. */
function counted(p: WorkProvider) {
  const n = { load: 0, readReceipt: 0, commit: 0 };
  const provider: WorkProvider = {
    ...p,
    load: () => (n.load++, p.load()),
    readReceipt: (id) => (n.readReceipt++, p.readReceipt(id)),
    commit: (r) => (n.commit++, p.commit(r)),
  };
  const reset = () => Object.assign(n, { load: 0, readReceipt: 0, commit: 0 });
  return { n, reset, provider };
}

async function countedOwner(h: ProviderHarness) {
  const c = counted(h.open());
  return { ...c, work: await openWork({ provider: c.provider, clock: manualClock().now }) };
}

describe.each(HARNESSES)('work owner commit loop: %s', (_name, make) => {
  it('a write after its own write reads neither the head nor a receipt before it commits', async () => {
    const { n, reset, work } = await countedOwner(make());
    await work.addTodo({ operation_id: 'add', title: 'first title' });
    expect(n).toEqual({ load: 1, readReceipt: 0, commit: 1 });
    reset();
    expect(await work.updateTodo({ operation_id: 'u1', todo_id: 't1', title: 'second title' })).toMatchObject({
      result: 'applied',
      cursor: 2,
    });
    expect(await work.updateTodo({ operation_id: 'u2', todo_id: 't1', title: 'third title' })).toMatchObject({
      result: 'applied',
      cursor: 3,
    });
    expect(n).toEqual({ load: 0, readReceipt: 0, commit: 2 });
    expect(await work.view()).toMatchObject({
      cursor: 3,
      authority_revision: 3,
      todos: [{ todo_id: 't1', title: 'third title', todo_revision: 3 }],
    });
  });

  it('a head another writer moved since is refused by the store, and the write is decided again over the fresh head', async () => {
    const h = make();
    const { n, reset, work } = await countedOwner(h);
    const other = await openWork({ provider: h.open(), clock: manualClock().now });
    await work.addTodo({ operation_id: 'mine-1', title: 'Mine' });
    await other.addTodo({ operation_id: 'other', title: 'Theirs' });
    reset();
    const r = await work.addTodo({ operation_id: 'mine-2', title: 'Mine again' });
    expect(r).toMatchObject({ result: 'applied', cursor: 3, receipt: { todo: { todo_id: 't3' } } });
    expect(n).toEqual({ load: 1, readReceipt: 1, commit: 2 });
    expect((await other.listTodos()).map((t) => [t.todo_id, t.title])).toEqual([
      ['t1', 'Mine'],
      ['t2', 'Theirs'],
      ['t3', 'Mine again'],
    ]);
  });

  it('a refusal decided over the remembered head is decided again over a fresh load', async () => {
    const h = make();
    const { work } = await countedOwner(h);
    const other = await openWork({ provider: h.open(), clock: manualClock().now });
    await work.addTodo({ operation_id: 'mine', title: 'Mine' });
    await other.addTodo({ operation_id: 'other', title: 'Theirs' });
    // Over its own last head, t2 does not exist and the authority revision is 1: both are stale.
    const r = await work.updateTodo({
      operation_id: 'u',
      todo_id: 't2',
      title: 'Theirs, renamed',
      expected_authority_revision: 2,
    });
    expect(r).toMatchObject({
      result: 'applied',
      cursor: 3,
      receipt: { todo: { todo_id: 't2', title: 'Theirs, renamed' } },
    });
    // Over a fresh head the refusal stands.
    expect((await rejectionOf(() => work.updateTodo({ operation_id: 'u2', todo_id: 't9', title: 'x' }))).code).toBe(
      'todo_not_found',
    );
    expect(
      (
        await rejectionOf(() =>
          work.updateTodo({ operation_id: 'u3', todo_id: 't1', title: 'x', expected_authority_revision: 2 }),
        )
      ).code,
    ).toBe('authority_revision_mismatch');
  });

  it('a known operation id is its replay before any refusal of the decision, from this owner or a fresh one', async () => {
    const h = make();
    const { work } = await countedOwner(h);
    const add = { operation_id: 'add', todo_id: 't1', title: 'first title', expected_authority_revision: 0 };
    const applied = await work.addTodo(add);
    await work.updateTodo({ operation_id: 'u', todo_id: 't1', title: 'second title' });
    // The same request again: its plan would refuse (t1 exists, the authority revision moved on) — the receipt answers first.
    expect(await work.addTodo(add)).toMatchObject({ result: 'already_applied', cursor: 1, receipt: applied.receipt });
    const fresh = await countedOwner(h);
    expect(await fresh.work.addTodo(add)).toMatchObject({
      result: 'already_applied',
      cursor: 1,
      receipt: applied.receipt,
    });
    expect(fresh.n.commit).toBe(0);
    // A plan that would not refuse: the store refuses the id, and the receipt answers.
    const again = { operation_id: 'u', todo_id: 't1', title: 'second title' };
    expect(await fresh.work.updateTodo(again)).toMatchObject({ result: 'already_applied', cursor: 2 });
    expect((await rejectionOf(() => fresh.work.updateTodo({ ...again, title: 'another title' }))).code).toBe(
      'operation_identity_mismatch',
    );
    expect(await work.transactionCount()).toBe(2);
  });

  it('the head a write remembers is the owner’s own copy: changing the results it handed out changes nothing it decides or stores next', async () => {
    const { work } = await countedOwner(make());
    await work.setHandoffMode({ operation_id: 'mode', handoff_mode: 'hard_lease' });
    await work.addTodo({ operation_id: 'add', title: 'first title' });
    const acquired = await work.acquireLease({
      operation_id: 'lease',
      todo_id: 't1',
      owner: 'agent',
      execution_key: 'run-1',
      ttl_ms: 60_000,
      expected_version: 0,
    });
    // A caller scribbling over what it was given, in fields the next decision does not check (a
    // changed revision or lease holder would be refused and decided again over a fresh load anyway).
    const todo = acquired.receipt.todo as unknown as Record<string, unknown>;
    Object.assign(todo, { title: 'tampered', created_at: 'tampered' });
    Object.assign(todo.lease as Record<string, unknown>, { acquired_at: 'tampered' });
    const proof = { owner: 'agent', execution_key: 'run-1', lease_epoch: 1 };
    const r = await work.updateTodo({
      operation_id: 'u',
      todo_id: 't1',
      note: 'a note',
      expected_todo_revision: 2,
      lease: proof,
    });
    const untouched = {
      title: 'first title',
      note: 'a note',
      todo_revision: 3,
      created_at: (await work.view()).todos[0]?.created_at,
      lease: { owner: 'agent', lease_epoch: 1 },
    };
    expect(r).toMatchObject({ result: 'applied', receipt: { todo: untouched } });
    expect(await work.getTodo('t1')).toMatchObject(untouched);
    expect(JSON.stringify(await work.getTodo('t1'))).not.toContain('tampered');
  });
});
