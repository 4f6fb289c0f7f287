/**
 * Leases per Todo, exactly per the domain-notes transition table:
 *   acquire/takeover  version +1, epoch +1, new execution identity and expiry
 *   renew             version +1, epoch kept, expiry = clock + TTL
 *   transfer          version +1, epoch +1, new owner and key
 *   release           version and epoch kept, released status persisted
 * An expiry equal to the observation time is expired. In hard_lease mode, completing, superseding
 * and claim changes need the active lease.
 */
import { describe, expect, it } from 'vitest';
import type { WorkOwner } from '../../../src/owners/work/index.js';
import { HARNESSES, manualClock, owner, rejectionOf } from './support.js';

const TTL = 60_000;
const T0 = '2030-01-01T00:00:00.000Z';

describe.each(HARNESSES)('leases: %s', (_name, make) => {
  const setup = async (): Promise<{ w: WorkOwner; clock: ReturnType<typeof manualClock> }> => {
    const clock = manualClock(T0);
    const w = await owner(make(), clock);
    await w.addTodo({ operation_id: 'add', title: 'Leased work' });
    await w.setHandoffMode({ operation_id: 'mode', handoff_mode: 'hard_lease' });
    return { w, clock };
  };
  const acquire = (w: WorkOwner, id: string, who = 'agent-a', key = 'exec-1', expected_version = 0) =>
    w.acquireLease({ operation_id: id, todo_id: 't1', owner: who, execution_key: key, ttl_ms: TTL, expected_version });

  it('soft_claim mode refuses acquire, renew and transfer', async () => {
    const w = await owner(make());
    await w.addTodo({ operation_id: 'add', title: 'T' });
    const e = await rejectionOf(() => acquire(w, 'acq'));
    expect(e.code).toBe('handoff_mode_soft_claim');
    expect(e.kind).toBe('rejected');
    expect(
      (
        await rejectionOf(() =>
          w.renewLease({
            operation_id: 'r',
            todo_id: 't1',
            owner: 'a',
            execution_key: 'k',
            lease_epoch: 1,
            expected_version: 1,
            ttl_ms: TTL,
          }),
        )
      ).code,
    ).toBe('handoff_mode_soft_claim');
  });

  it('acquire: version +1, epoch +1, a new execution identity, expiry = clock + TTL, claimed by the owner', async () => {
    const { w } = await setup();
    const r = await acquire(w, 'acq');
    expect(r.receipt.lease).toMatchObject({
      owner: 'agent-a',
      execution_key: 'exec-1',
      lease_epoch: 1,
      version: 1,
      status: 'active',
      acquired_at: T0,
      expires_at: '2030-01-01T00:01:00.000Z',
      released_at: null,
    });
    expect(r.receipt.lease!.lease_id).toMatch(/^lease_[0-9a-f]{24}$/);
    expect(r.authorization_status).toBe('active');
    expect(await w.getTodo('t1')).toMatchObject({ claimed_by: 'agent-a', status: 'open', todo_revision: 2 });
    expect((await w.leaseStatus('t1')).authorization).toBe('active');
  });

  it('an active lease is held against others; a stale expected version is refused', async () => {
    const { w } = await setup();
    await acquire(w, 'acq');
    const held = await rejectionOf(() => acquire(w, 'acq-b', 'agent-b', 'exec-2', 1));
    expect(held.code).toBe('lease_held');
    expect(held.kind).toBe('conflict');
    expect((await rejectionOf(() => acquire(w, 'acq-c', 'agent-b', 'exec-2', 0))).code).toBe('lease_version_mismatch');
  });

  it('renew: version +1, epoch unchanged, expiry = runtime clock + TTL', async () => {
    const { w, clock } = await setup();
    await acquire(w, 'acq');
    clock.advance(30_000);
    const r = await w.renewLease({
      operation_id: 'renew',
      todo_id: 't1',
      owner: 'agent-a',
      execution_key: 'exec-1',
      lease_epoch: 1,
      expected_version: 1,
      ttl_ms: TTL,
    });
    expect(r.receipt.lease).toMatchObject({
      lease_epoch: 1,
      version: 2,
      expires_at: '2030-01-01T00:01:30.000Z',
      status: 'active',
    });
    expect(
      (
        await rejectionOf(() =>
          w.renewLease({
            operation_id: 'renew-2',
            todo_id: 't1',
            owner: 'agent-a',
            execution_key: 'exec-1',
            lease_epoch: 1,
            expected_version: 1,
            ttl_ms: TTL,
          }),
        )
      ).code,
    ).toBe('lease_version_mismatch');
    expect(
      (
        await rejectionOf(() =>
          w.renewLease({
            operation_id: 'renew-3',
            todo_id: 't1',
            owner: 'agent-b',
            execution_key: 'exec-1',
            lease_epoch: 1,
            expected_version: 2,
            ttl_ms: TTL,
          }),
        )
      ).code,
    ).toBe('lease_not_holder');
  });

  it('transfer: version +1, epoch +1, new owner and key; the old holder is stale', async () => {
    const { w } = await setup();
    await acquire(w, 'acq');
    const r = await w.transferLease({
      operation_id: 'xfer',
      todo_id: 't1',
      owner: 'agent-a',
      execution_key: 'exec-1',
      lease_epoch: 1,
      expected_version: 1,
      ttl_ms: TTL,
      to_owner: 'agent-b',
      to_execution_key: 'exec-9',
    });
    expect(r.receipt.lease).toMatchObject({
      owner: 'agent-b',
      execution_key: 'exec-9',
      lease_epoch: 2,
      version: 2,
      status: 'active',
    });
    expect((await w.getTodo('t1'))!.claimed_by).toBe('agent-b');
    const stale = await rejectionOf(() =>
      w.renewLease({
        operation_id: 'old-renew',
        todo_id: 't1',
        owner: 'agent-a',
        execution_key: 'exec-1',
        lease_epoch: 1,
        expected_version: 2,
        ttl_ms: TTL,
      }),
    );
    expect(stale.code).toBe('lease_epoch_stale');
    expect(stale.kind).toBe('conflict');
    // The original acquire receipt is history now.
    expect((await acquire(w, 'acq')).authorization_status).toBe('superseded');
  });

  it('release keeps version and epoch and persists released; re-acquire moves both on (no ABA)', async () => {
    const { w } = await setup();
    await acquire(w, 'acq');
    const rel = await w.releaseLease({
      operation_id: 'rel',
      todo_id: 't1',
      owner: 'agent-a',
      execution_key: 'exec-1',
      lease_epoch: 1,
      expected_version: 1,
    });
    expect(rel.receipt.lease).toMatchObject({ lease_epoch: 1, version: 1, status: 'released', released_at: T0 });
    expect(rel.authorization_status).toBe('released');
    expect((await w.getTodo('t1'))!.claimed_by).toBeNull();
    expect((await w.leaseStatus('t1')).authorization).toBe('released');
    expect(
      (
        await rejectionOf(() =>
          w.releaseLease({
            operation_id: 'rel-2',
            todo_id: 't1',
            owner: 'agent-a',
            execution_key: 'exec-1',
            lease_epoch: 1,
            expected_version: 1,
          }),
        )
      ).code,
    ).toBe('lease_not_active');
    const again = await acquire(w, 'acq-2', 'agent-b', 'exec-2', 1);
    expect(again.receipt.lease).toMatchObject({ owner: 'agent-b', lease_epoch: 2, version: 2, status: 'active' });
  });

  it('an expiry equal to the observation time counts as expired; one millisecond before does not', async () => {
    const { w, clock } = await setup();
    await acquire(w, 'acq');
    clock.set('2030-01-01T00:00:59.999Z');
    expect((await w.leaseStatus('t1')).authorization).toBe('active');
    expect((await rejectionOf(() => acquire(w, 'take-early', 'agent-b', 'exec-2', 1))).code).toBe('lease_held');
    clock.set('2030-01-01T00:01:00.000Z');
    expect((await w.leaseStatus('t1')).authorization).toBe('expired');
    const renew = await rejectionOf(() =>
      w.renewLease({
        operation_id: 'late-renew',
        todo_id: 't1',
        owner: 'agent-a',
        execution_key: 'exec-1',
        lease_epoch: 1,
        expected_version: 1,
        ttl_ms: TTL,
      }),
    );
    expect(renew.code).toBe('lease_expired');
    const take = await acquire(w, 'takeover', 'agent-b', 'exec-2', 1);
    expect(take.receipt.lease).toMatchObject({
      owner: 'agent-b',
      lease_epoch: 2,
      version: 2,
      expires_at: '2030-01-01T00:02:00.000Z',
    });
  });

  it('an expired lease can still be released by its holder (version and epoch kept)', async () => {
    const { w, clock } = await setup();
    await acquire(w, 'acq');
    clock.advance(TTL);
    const rel = await w.releaseLease({
      operation_id: 'rel',
      todo_id: 't1',
      owner: 'agent-a',
      execution_key: 'exec-1',
      lease_epoch: 1,
      expected_version: 1,
    });
    expect(rel.receipt.lease).toMatchObject({ status: 'released', lease_epoch: 1, version: 1 });
  });

  it('hard_lease: completing a Todo needs the active lease', async () => {
    const { w, clock } = await setup();
    const none = await rejectionOf(() => w.updateTodo({ operation_id: 'done-0', todo_id: 't1', status: 'done' }));
    expect(none.code).toBe('lease_required');
    expect(none.kind).toBe('rejected');
    await acquire(w, 'acq');
    expect(
      (await rejectionOf(() => w.updateTodo({ operation_id: 'done-1', todo_id: 't1', status: 'done' }))).code,
    ).toBe('lease_required');
    expect(
      (
        await rejectionOf(() =>
          w.updateTodo({
            operation_id: 'done-2',
            todo_id: 't1',
            status: 'done',
            lease: { owner: 'agent-a', execution_key: 'exec-1', lease_epoch: 7 },
          }),
        )
      ).code,
    ).toBe('lease_epoch_stale');
    expect(
      (
        await rejectionOf(() =>
          w.updateTodo({
            operation_id: 'done-3',
            todo_id: 't1',
            status: 'deferred',
            lease: { owner: 'agent-b', execution_key: 'exec-1', lease_epoch: 1 },
          }),
        )
      ).code,
    ).toBe('lease_not_holder');
    // Non-closing changes need no lease.
    expect((await w.updateTodo({ operation_id: 'note', todo_id: 't1', note: 'progress' })).result).toBe('applied');
    clock.advance(TTL);
    expect(
      (
        await rejectionOf(() =>
          w.updateTodo({
            operation_id: 'done-4',
            todo_id: 't1',
            status: 'done',
            lease: { owner: 'agent-a', execution_key: 'exec-1', lease_epoch: 1 },
          }),
        )
      ).code,
    ).toBe('lease_expired');
    expect((await w.getTodo('t1'))!.status).toBe('open');
  });

  it('hard_lease: completing with the lease closes the Todo and releases the lease record', async () => {
    const { w } = await setup();
    await acquire(w, 'acq');
    const r = await w.updateTodo({
      operation_id: 'done',
      todo_id: 't1',
      status: 'done',
      note: 'shipped',
      lease: { owner: 'agent-a', execution_key: 'exec-1', lease_epoch: 1 },
    });
    expect(r.receipt.todo).toMatchObject({ status: 'done', note: 'shipped', claimed_by: 'agent-a' });
    expect(r.receipt.todo!.lease).toMatchObject({ status: 'released', lease_epoch: 1, version: 1 });
    expect(r.receipt.lease).toBeNull(); // not a lease operation: it reports no lease authority
    expect(r.authorization_status).toBeUndefined();
    expect((await rejectionOf(() => acquire(w, 'acq-after', 'agent-b', 'exec-2', 1))).code).toBe('todo_terminal');
  });

  it('hard_lease: a claim change needs the lease', async () => {
    const { w } = await setup();
    expect(
      (await rejectionOf(() => w.claimTodo({ operation_id: 'claim', todo_id: 't1', agent: 'agent-a' }))).code,
    ).toBe('lease_required');
    await acquire(w, 'acq');
    expect(
      (await rejectionOf(() => w.unclaimTodo({ operation_id: 'unclaim-1', todo_id: 't1', agent: 'agent-a' }))).code,
    ).toBe('lease_required');
    expect(
      (
        await w.unclaimTodo({
          operation_id: 'unclaim-2',
          todo_id: 't1',
          agent: 'agent-a',
          lease: { owner: 'agent-a', execution_key: 'exec-1', lease_epoch: 1 },
        })
      ).receipt.todo!.claimed_by,
    ).toBeNull();
    expect(
      (
        await w.claimTodo({
          operation_id: 'claim-2',
          todo_id: 't1',
          agent: 'agent-a',
          lease: { owner: 'agent-a', execution_key: 'exec-1', lease_epoch: 1 },
        })
      ).receipt.todo!.claimed_by,
    ).toBe('agent-a');
  });

  it('the handoff mode changes only when quiescent', async () => {
    const { w } = await setup();
    await acquire(w, 'acq');
    expect((await rejectionOf(() => w.setHandoffMode({ operation_id: 'soft', handoff_mode: 'soft_claim' }))).code).toBe(
      'handoff_mode_not_quiescent',
    );
    await w.releaseLease({
      operation_id: 'rel',
      todo_id: 't1',
      owner: 'agent-a',
      execution_key: 'exec-1',
      lease_epoch: 1,
      expected_version: 1,
    });
    expect((await w.setHandoffMode({ operation_id: 'soft', handoff_mode: 'soft_claim' })).receipt.handoff_mode).toBe(
      'soft_claim',
    );
    await w.claimTodo({ operation_id: 'claim', todo_id: 't1', agent: 'agent-a' });
    expect((await rejectionOf(() => w.setHandoffMode({ operation_id: 'hard', handoff_mode: 'hard_lease' }))).code).toBe(
      'handoff_mode_not_quiescent',
    );
    expect((await w.view()).handoff_mode).toBe('soft_claim');
  });

  it('a replayed lease receipt reports the lease as expired later, never as current authority', async () => {
    const { w, clock } = await setup();
    const first = await acquire(w, 'acq');
    clock.advance(TTL);
    const replay = await acquire(w, 'acq');
    expect(replay.result).toBe('already_applied');
    expect(replay.receipt).toEqual(first.receipt);
    expect(replay.authorization_status).toBe('expired');
  });
});
