/**
 * The conformance suite of the work provider port (src/owners/work/contract.ts): atomic commit,
 * conditional revision, same-key readback, the ambiguous-commit readback, ordered contiguous
 * cursors, stable lineage and fail-closed opening — checked by observable results, never by
 * internals. Every provider runs it: `describeWorkProvider('<provider>', factory)` in
 * test/owners/work/port.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isStoreIdentity } from '../../../src/store/index.js';
import { MAX_SCAN_LIMIT, openWork, parseProviderRevision, type WorkCommitRequest, type WorkCommitResult, type WorkProvider } from '../../../src/owners/work/index.js';
import { errorOf, expectRegisteredProvider, sha } from './support.js';

/** The Goal a harness opens its store for unless told otherwise. */
export const WORK_GOAL = 'g1';

/** `open()` opens the same backing store each time (a second call is a restart). */
export interface WorkProviderHarness {
  open(options?: { expected_incarnation?: string; goal_id?: string }): WorkProvider;
}
export type WorkProviderFactory = () => WorkProviderHarness;

const request = (p: WorkProvider, n: number, over: Partial<WorkCommitRequest> = {}): WorkCommitRequest => ({
  expected_provider_revision: p.load().provider_revision,
  operation_id: `op-${n}`,
  request_digest: sha(n),
  events: [{ type: 'e', n }],
  next_projection: { n },
  receipt: { operation_id: `op-${n}`, n },
  ...over,
});

const commitN = (p: WorkProvider, from: number, to: number): void => {
  for (let n = from; n <= to; n++) expect(p.commit(request(p, n)).status).toBe('applied');
};

/** Every method of `p`, forwarded (a test seam to override one of them). */
const forward = (p: WorkProvider): WorkProvider => ({
  provider: p.provider,
  storeIdentity: () => p.storeIdentity(),
  load: () => p.load(),
  commit: (r) => p.commit(r),
  readReceipt: (id) => p.readReceipt(id),
  scanCommitted: (a, l) => p.scanCommitted(a, l),
  close: () => p.close(),
});

export function describeWorkProvider(name: string, make: WorkProviderFactory): void {
  describe(`work provider conformance: ${name}`, () => {
    it('a new store has cursor 0, no head, and an identity of its registered provider', () => {
      const p = make().open();
      const id = p.storeIdentity();
      expectRegisteredProvider(p.provider);
      expect(id.store_identity).toMatch(new RegExp(`^${p.provider}:[0-9a-f]{32}$`));
      expect(isStoreIdentity(id.store_identity)).toBe(true);
      expect(id.incarnation).toMatch(/^[0-9a-f]{32}$/);
      expect(id.goal_id).toBe(WORK_GOAL);
      const l = p.load();
      expect(l).toEqual({ head: null, cursor: 0, provider_revision: `${id.incarnation}:0` });
      expect(p.scanCommitted(0, 10)).toEqual({ transactions: [], next_cursor: 0, has_more: false });
    });

    it('a commit lands events, projection and receipt together under the next cursor', () => {
      const p = make().open();
      const before = p.load().provider_revision;
      const r = p.commit(request(p, 1));
      expect(r).toEqual({ status: 'applied', cursor: 1, provider_revision: `${p.storeIdentity().incarnation}:1` });
      expect(r.status === 'applied' && r.provider_revision).not.toBe(before);
      expect(p.load()).toEqual({ head: { n: 1 }, cursor: 1, provider_revision: (r as { provider_revision: string }).provider_revision });
      expect(p.readReceipt('op-1')).toEqual({ operation_id: 'op-1', request_digest: sha(1), cursor: 1, provider_revision: (r as { provider_revision: string }).provider_revision, receipt: { operation_id: 'op-1', n: 1 } });
      const page = p.scanCommitted(0, 10);
      expect(page.transactions).toEqual([
        { cursor: 1, provider_revision: (r as { provider_revision: string }).provider_revision, operation_id: 'op-1', request_digest: sha(1), events: [{ type: 'e', n: 1 }], receipt: { operation_id: 'op-1', n: 1 }, projection: { n: 1 } },
      ]);
    });

    it('a commit against a stale revision is a conflict and writes nothing', () => {
      const p = make().open();
      const stale = p.load().provider_revision;
      commitN(p, 1, 1);
      const r = p.commit(request(p, 2, { expected_provider_revision: stale }));
      expect(r).toEqual({ status: 'conflict', reason: 'provider_revision_mismatch' });
      expect(p.load().cursor).toBe(1);
      expect(p.readReceipt('op-2')).toBeUndefined();
      expect(p.scanCommitted(0, 10).transactions).toHaveLength(1);
    });

    it('a reused operation id is operation_id_exists even at the current revision, and the original receipt stays', () => {
      const p = make().open();
      commitN(p, 1, 1);
      const r = p.commit(request(p, 2, { operation_id: 'op-1', receipt: { other: true } }));
      expect(r).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      // Checked before the revision: a racing duplicate with a stale revision is still reported as a duplicate.
      expect(p.commit(request(p, 3, { operation_id: 'op-1', expected_provider_revision: 'stale' }))).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      expect(p.readReceipt('op-1')!.receipt).toEqual({ operation_id: 'op-1', n: 1 });
      expect(p.load().cursor).toBe(1);
    });

    it('an unknown operation id has no receipt (undefined, not an error)', () => {
      expect(make().open().readReceipt('never')).toBeUndefined();
    });

    it('an unstorable commit fails with nothing written', () => {
      const p = make().open();
      expect(p.commit(request(p, 1, { events: [] }))).toEqual({ status: 'failed', code: 'commit_events_empty' });
      expect(p.commit(request(p, 1, { request_digest: 'xyz' }))).toEqual({ status: 'failed', code: 'commit_request_digest_invalid' });
      expect(p.commit(request(p, 1, { operation_id: '' }))).toEqual({ status: 'failed', code: 'commit_operation_id_invalid' });
      expect(p.commit(request(p, 1, { next_projection: { bad: Number.NaN } }))).toEqual({ status: 'failed', code: 'commit_not_json' });
      expect(p.load().cursor).toBe(0);
      expect(p.readReceipt('op-1')).toBeUndefined();
    });

    it('an ambiguous commit is resolved by readReceipt: a landed one shows its receipt, one that did not land has none and then applies once under the same id', () => {
      const h = make();
      const p = h.open();
      const first = request(p, 1);
      p.commit(first); // its answer lost, as an ambiguous commit's is
      const q = h.open(); // the readback may come from a restarted process
      expect(q.readReceipt('op-1')).toMatchObject({ operation_id: 'op-1', request_digest: sha(1), cursor: 1 });
      expect(q.commit({ ...first, expected_provider_revision: q.load().provider_revision })).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      expect(q.readReceipt('op-2')).toBeUndefined(); // never landed
      expect(q.commit(request(q, 2))).toMatchObject({ status: 'applied', cursor: 2 });
      expect(q.commit(request(q, 2))).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      expect(q.load().cursor).toBe(2);
    });

    it('the work owner turns an ambiguous commit into applied by readback, or into provider_outcome_unproved that a same-id retry resolves', () => {
      const inner = make().open();
      const landed = openWork({ provider: { ...forward(inner), commit: (r) => (inner.commit(r), { status: 'ambiguous' }) } });
      expect(landed.addTodo({ operation_id: 'a', title: 'T' })).toMatchObject({ result: 'applied', cursor: 1 });
      let lost = true;
      const unproved = openWork({ provider: { ...forward(inner), commit: (r): WorkCommitResult => (lost ? { status: 'ambiguous' } : inner.commit(r)) } });
      expect(errorOf(() => unproved.addTodo({ operation_id: 'b', title: 'U' })).code).toBe('provider_outcome_unproved');
      expect(inner.load().cursor).toBe(1);
      lost = false;
      expect(unproved.addTodo({ operation_id: 'b', title: 'U' })).toMatchObject({ result: 'applied', cursor: 2 });
      expect(unproved.addTodo({ operation_id: 'b', title: 'U' }).result).toBe('already_applied');
      expect(inner.load().cursor).toBe(2);
    });

    it('cursors are contiguous from 1 and scans page in order; only the head transaction carries the projection', () => {
      const p = make().open();
      commitN(p, 1, 25);
      const seen: number[] = [];
      let after = 0;
      let pages = 0;
      for (;;) {
        const page = p.scanCommitted(after, 10);
        pages++;
        seen.push(...page.transactions.map((t) => t.cursor));
        for (const t of page.transactions) expect('projection' in t).toBe(t.cursor === 25);
        expect(page.next_cursor).toBe(page.transactions.at(-1)?.cursor ?? after);
        after = page.next_cursor;
        if (!page.has_more) break;
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      const revs = p.scanCommitted(0, 25).transactions.map((t) => parseProviderRevision(t.provider_revision)!.cursor);
      expect(revs).toEqual(seen);
      expect(p.scanCommitted(20, 5).has_more).toBe(false);
    });

    it('a scan past the head is an empty page; a bad cursor or limit is refused', () => {
      const p = make().open();
      commitN(p, 1, 3);
      expect(p.scanCommitted(3, 10)).toEqual({ transactions: [], next_cursor: 3, has_more: false });
      expect(p.scanCommitted(99, 10)).toEqual({ transactions: [], next_cursor: 99, has_more: false });
      expect(errorOf(() => p.scanCommitted(0, 0)).code).toBe('scan_limit_invalid');
      expect(errorOf(() => p.scanCommitted(0, MAX_SCAN_LIMIT + 1)).code).toBe('scan_limit_invalid');
      expect(errorOf(() => p.scanCommitted(-1, 10)).code).toBe('scan_cursor_invalid');
    });

    it('identity, head, receipts and history survive a restart (durable same-key readback)', () => {
      const h = make();
      const p = h.open();
      commitN(p, 1, 5);
      const id = p.storeIdentity();
      const head = p.load();
      const receipt = p.readReceipt('op-3');
      const history = p.scanCommitted(0, 100);
      p.close();
      const q = h.open();
      expect(q.storeIdentity()).toEqual(id);
      expect(q.load()).toEqual(head);
      expect(q.readReceipt('op-3')).toEqual(receipt);
      expect(q.scanCommitted(0, 100)).toEqual(history);
      expect(q.commit(request(q, 3))).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      expect(q.commit(request(q, 6))).toMatchObject({ status: 'applied', cursor: 6 });
    });

    it('a closed provider fails commits and refuses reads', () => {
      const p = make().open();
      p.close();
      expect(p.commit({ expected_provider_revision: 'x', operation_id: 'a', request_digest: sha(1), events: [{}], next_projection: {}, receipt: {} })).toEqual({ status: 'failed', code: 'provider_closed' });
      expect(errorOf(() => p.load()).code).toBe('provider_closed');
    });

    it('a store opened for another Goal or another incarnation than expected refuses', () => {
      const h = make();
      const p = h.open();
      const { incarnation } = p.storeIdentity();
      p.close();
      expect(errorOf(() => h.open({ goal_id: 'other-goal' })).code).toBe('work_store_goal_mismatch');
      const e = errorOf(() => h.open({ expected_incarnation: 'f'.repeat(32) }));
      expect(e.code).toBe('work_store_foreign_incarnation');
      expect(e.kind).toBe('rejected');
      expect(h.open({ expected_incarnation: incarnation }).storeIdentity().incarnation).toBe(incarnation);
    });
  });
}
