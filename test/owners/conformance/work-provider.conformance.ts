/**
 * The conformance suite of the work provider port (src/owners/work/contract.ts): atomic commit,
 * conditional revision (commits racing on one revision included), same-key readback, the
 * ambiguous-commit readback, ordered contiguous cursors, stable lineage, retain_all_v0 and
 * fail-closed opening — checked by observable results, never by internals. Every provider runs
 * it: `describeWorkProvider('<provider>', factory)` in test/owners/work/port.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { isStoreIdentity } from '../../../src/store/index.js';
import {
  MAX_SCAN_LIMIT,
  openWork,
  parseProviderRevision,
  type WorkCommitRequest,
  type WorkCommitResult,
  type WorkProvider,
} from '../../../src/owners/work/index.js';
import { expectRegisteredProvider, rejectionOf, sha } from './support.js';

/** The Goal a harness opens its store for unless told otherwise. */
export const WORK_GOAL = 'g1';

/**
 * `open()` opens the same backing store each time (a second call is a restart, or a second
 * connection while the first is open). It may answer a Promise: a provider whose driver is async
 * (PostgreSQL) checks the store's lineage when it opens.
 */
export interface WorkProviderHarness {
  open(options?: { expected_incarnation?: string; goal_id?: string }): WorkProvider | Promise<WorkProvider>;
}
export type WorkProviderFactory = () => WorkProviderHarness;

const request = async (
  p: WorkProvider,
  n: number,
  over: Partial<WorkCommitRequest> = {},
): Promise<WorkCommitRequest> => ({
  expected_provider_revision: (await p.load()).provider_revision,
  operation_id: `op-${n}`,
  request_digest: sha(n),
  events: [{ type: 'e', n }],
  next_projection: { n },
  receipt: { operation_id: `op-${n}`, n },
  ...over,
});

const commitN = async (p: WorkProvider, from: number, to: number): Promise<void> => {
  for (let n = from; n <= to; n++) expect((await p.commit(await request(p, n))).status).toBe('applied');
};

const revisionOf = (r: WorkCommitResult): string => (r as { provider_revision: string }).provider_revision;

/** Every method of `p`, forwarded (a test seam to override one of them). */
const forward = (p: WorkProvider): WorkProvider => ({
  provider: p.provider,
  storeIdentity: () => p.storeIdentity(),
  load: () => p.load(),
  commit: (r) => p.commit(r),
  readReceipt: (id) => p.readReceipt(id),
  scanCommitted: (a, l) => p.scanCommitted(a, l),
  scanLineage: (s, a, l) => p.scanLineage(s, a, l),
  importLineage: (r) => p.importLineage(r),
  lineage: () => p.lineage(),
  close: () => p.close(),
});

export function describeWorkProvider(name: string, make: WorkProviderFactory): void {
  describe(`work provider conformance: ${name}`, () => {
    it('a new store has cursor 0, no head, and an identity of its registered provider', async () => {
      const p = await make().open();
      const id = await p.storeIdentity();
      expectRegisteredProvider(p.provider);
      expect(id.store_identity).toMatch(new RegExp(`^${p.provider}:[0-9a-f]{32}$`));
      expect(isStoreIdentity(id.store_identity)).toBe(true);
      expect(id.incarnation).toMatch(/^[0-9a-f]{32}$/);
      expect(id.goal_id).toBe(WORK_GOAL);
      expect(await p.load()).toEqual({ head: null, cursor: 0, provider_revision: `${id.incarnation}:0` });
      expect(await p.scanCommitted(0, 10)).toEqual({ transactions: [], next_cursor: 0, has_more: false });
    });

    it('a commit lands events, projection and receipt together under the next cursor', async () => {
      const p = await make().open();
      const before = (await p.load()).provider_revision;
      const r = await p.commit(await request(p, 1));
      const revision = `${(await p.storeIdentity()).incarnation}:1`;
      expect(r).toEqual({ status: 'applied', cursor: 1, provider_revision: revision });
      expect(revisionOf(r)).not.toBe(before);
      expect(await p.load()).toEqual({ head: { n: 1 }, cursor: 1, provider_revision: revision });
      expect(await p.readReceipt('op-1')).toEqual({
        operation_id: 'op-1',
        request_digest: sha(1),
        cursor: 1,
        provider_revision: revision,
        receipt: { operation_id: 'op-1', n: 1 },
      });
      expect((await p.scanCommitted(0, 10)).transactions).toEqual([
        {
          cursor: 1,
          provider_revision: revision,
          operation_id: 'op-1',
          request_digest: sha(1),
          events: [{ type: 'e', n: 1 }],
          receipt: { operation_id: 'op-1', n: 1 },
          projection: { n: 1 },
        },
      ]);
    });

    it('a commit against a stale revision is a conflict and writes nothing', async () => {
      const p = await make().open();
      const stale = (await p.load()).provider_revision;
      await commitN(p, 1, 1);
      const r = await p.commit(await request(p, 2, { expected_provider_revision: stale }));
      expect(r).toEqual({ status: 'conflict', reason: 'provider_revision_mismatch' });
      expect((await p.load()).cursor).toBe(1);
      expect(await p.readReceipt('op-2')).toBeUndefined();
      expect((await p.scanCommitted(0, 10)).transactions).toHaveLength(1);
    });

    it('of commits racing on the same expected revision exactly one applies; the others are conflicts and write nothing', async () => {
      const h = make();
      const p = await h.open();
      const q = await h.open(); // a second connection on the same store
      const expected = (await p.load()).provider_revision;
      const racers = [p, q, p, q].map((via, i) => ({
        via,
        req: {
          expected_provider_revision: expected,
          operation_id: `race-${i}`,
          request_digest: sha(100 + i),
          events: [{ type: 'e', i }],
          next_projection: { i },
          receipt: { i },
        },
      }));
      // Every commit is in flight before any answer is looked at.
      const results = await Promise.all(racers.map(({ via, req }) => via.commit(req)));
      const applied = results.flatMap((r, i) => (r.status === 'applied' ? [i] : []));
      expect(applied).toHaveLength(1);
      for (const [i, r] of results.entries())
        if (i !== applied[0]) expect(r).toEqual({ status: 'conflict', reason: 'provider_revision_mismatch' });
      const winner = applied[0]!;
      expect(await q.load()).toMatchObject({ cursor: 1, head: { i: winner } });
      expect((await p.scanCommitted(0, 10)).transactions.map((t) => t.operation_id)).toEqual([`race-${winner}`]);
      for (const i of [0, 1, 2, 3]) expect((await p.readReceipt(`race-${i}`)) === undefined).toBe(i !== winner);
    });

    it('the same operation id racing on the same expected revision applies once; the other is operation_id_exists or provider_revision_mismatch', async () => {
      const h = make();
      const p = await h.open();
      const q = await h.open();
      const req = await request(p, 1);
      const results = await Promise.all([p.commit(req), q.commit({ ...req, receipt: { other: true } })]);
      expect(results.filter((r) => r.status === 'applied')).toHaveLength(1);
      const lost = results.find((r) => r.status !== 'applied')!;
      expect(lost.status).toBe('conflict');
      expect(['operation_id_exists', 'provider_revision_mismatch']).toContain((lost as { reason: string }).reason);
      expect((await p.load()).cursor).toBe(1);
      expect((await q.readReceipt('op-1'))!.receipt).toEqual(
        results[0]!.status === 'applied' ? { operation_id: 'op-1', n: 1 } : { other: true },
      );
    });

    it('a reused operation id is operation_id_exists even at the current revision, and the original receipt stays', async () => {
      const p = await make().open();
      await commitN(p, 1, 1);
      const r = await p.commit(await request(p, 2, { operation_id: 'op-1', receipt: { other: true } }));
      expect(r).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      // Checked before the revision: a racing duplicate with a stale revision is still reported as a duplicate.
      expect(
        await p.commit(await request(p, 3, { operation_id: 'op-1', expected_provider_revision: 'stale' })),
      ).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      expect((await p.readReceipt('op-1'))!.receipt).toEqual({ operation_id: 'op-1', n: 1 });
      expect((await p.load()).cursor).toBe(1);
    });

    it('a commit under a fence token that is not the stored head’s is writer_fenced, before any other check, and writes nothing', async () => {
      const p = await make().open();
      const fenced = { status: 'conflict', reason: 'writer_fenced' };
      const a = { fence_id: 'a'.repeat(32), epoch: 1 };
      const b = { fence_id: 'b'.repeat(32), epoch: 2 };
      expect(await p.commit(await request(p, 1, { writer_fence: a }))).toEqual(fenced); // no fence is held yet
      expect(await p.commit(await request(p, 1, { next_projection: { fence: a } }))).toMatchObject({
        status: 'applied',
      });
      expect(await p.commit(await request(p, 2, { writer_fence: a, next_projection: { fence: a } }))).toMatchObject({
        status: 'applied',
      });
      expect(await p.commit(await request(p, 3, { next_projection: { fence: b } }))).toMatchObject({
        status: 'applied',
        cursor: 3,
      });
      // At the current revision, and even under an operation id that exists: the old token is refused by the store.
      expect(await p.commit(await request(p, 4, { writer_fence: a, next_projection: { fence: a } }))).toEqual(fenced);
      expect(await p.commit(await request(p, 2, { writer_fence: a }))).toEqual(fenced);
      expect(await p.commit(await request(p, 4, { writer_fence: { ...b, epoch: 1 } }))).toEqual(fenced);
      expect(await p.commit(await request(p, 4, { writer_fence: { fence_id: '', epoch: -1 } }))).toEqual({
        status: 'failed',
        code: 'commit_writer_fence_invalid',
      });
      expect((await p.load()).cursor).toBe(3);
      expect(await p.readReceipt('op-4')).toBeUndefined();
      expect(await p.commit(await request(p, 4, { writer_fence: b, next_projection: { fence: b } }))).toMatchObject({
        status: 'applied',
        cursor: 4,
      });
    });

    it('an unknown operation id has no receipt (undefined, not an error)', async () => {
      expect(await (await make().open()).readReceipt('never')).toBeUndefined();
    });

    it('an unstorable commit fails with nothing written', async () => {
      const p = await make().open();
      expect(await p.commit(await request(p, 1, { events: [] }))).toEqual({
        status: 'failed',
        code: 'commit_events_empty',
      });
      expect(await p.commit(await request(p, 1, { request_digest: 'xyz' }))).toEqual({
        status: 'failed',
        code: 'commit_request_digest_invalid',
      });
      expect(await p.commit(await request(p, 1, { operation_id: '' }))).toEqual({
        status: 'failed',
        code: 'commit_operation_id_invalid',
      });
      expect(await p.commit(await request(p, 1, { next_projection: { bad: Number.NaN } }))).toEqual({
        status: 'failed',
        code: 'commit_not_json',
      });
      expect((await p.load()).cursor).toBe(0);
      expect(await p.readReceipt('op-1')).toBeUndefined();
    });

    it('an ambiguous commit is resolved by readReceipt: a landed one shows its receipt, one that did not land has none and then applies once under the same id', async () => {
      const h = make();
      const p = await h.open();
      const first = await request(p, 1);
      await p.commit(first); // its answer lost, as an ambiguous commit's is
      const q = await h.open(); // the readback may come from a restarted process
      expect(await q.readReceipt('op-1')).toMatchObject({ operation_id: 'op-1', request_digest: sha(1), cursor: 1 });
      expect(await q.commit({ ...first, expected_provider_revision: (await q.load()).provider_revision })).toEqual({
        status: 'conflict',
        reason: 'operation_id_exists',
      });
      expect(await q.readReceipt('op-2')).toBeUndefined(); // never landed
      expect(await q.commit(await request(q, 2))).toMatchObject({ status: 'applied', cursor: 2 });
      expect(await q.commit(await request(q, 2))).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      expect((await q.load()).cursor).toBe(2);
    });

    it('the work owner turns an ambiguous commit into applied by readback, or into store_outcome_unproved that a same-id retry resolves', async () => {
      const inner = await make().open();
      const landed = await openWork({
        provider: { ...forward(inner), commit: async (r) => (await inner.commit(r), { status: 'ambiguous' }) },
      });
      expect(await landed.addTodo({ operation_id: 'a', title: 'T' })).toMatchObject({ result: 'applied', cursor: 1 });
      let lost = true;
      const unproved = await openWork({
        provider: {
          ...forward(inner),
          commit: async (r): Promise<WorkCommitResult> => (lost ? { status: 'ambiguous' } : inner.commit(r)),
        },
      });
      expect((await rejectionOf(() => unproved.addTodo({ operation_id: 'b', title: 'U' }))).code).toBe(
        'store_outcome_unproved',
      );
      expect((await inner.load()).cursor).toBe(1);
      lost = false;
      expect(await unproved.addTodo({ operation_id: 'b', title: 'U' })).toMatchObject({ result: 'applied', cursor: 2 });
      expect((await unproved.addTodo({ operation_id: 'b', title: 'U' })).result).toBe('already_applied');
      expect((await inner.load()).cursor).toBe(2);
    });

    it('cursors are contiguous from 1 and scans page in order; only the head transaction carries the projection', async () => {
      const p = await make().open();
      await commitN(p, 1, 25);
      const seen: number[] = [];
      let after = 0;
      let pages = 0;
      for (;;) {
        const page = await p.scanCommitted(after, 10);
        pages++;
        seen.push(...page.transactions.map((t) => t.cursor));
        for (const t of page.transactions) expect('projection' in t).toBe(t.cursor === 25);
        expect(page.next_cursor).toBe(page.transactions.at(-1)?.cursor ?? after);
        after = page.next_cursor;
        if (!page.has_more) break;
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      const revs = (await p.scanCommitted(0, 25)).transactions.map(
        (t) => parseProviderRevision(t.provider_revision)!.cursor,
      );
      expect(revs).toEqual(seen);
      expect((await p.scanCommitted(20, 5)).has_more).toBe(false);
    });

    it('a scan past the head is an empty page; a bad cursor or limit is refused', async () => {
      const p = await make().open();
      await commitN(p, 1, 3);
      expect(await p.scanCommitted(3, 10)).toEqual({ transactions: [], next_cursor: 3, has_more: false });
      expect(await p.scanCommitted(99, 10)).toEqual({ transactions: [], next_cursor: 99, has_more: false });
      expect((await rejectionOf(() => p.scanCommitted(0, 0))).code).toBe('scan_limit_invalid');
      expect((await rejectionOf(() => p.scanCommitted(0, MAX_SCAN_LIMIT + 1))).code).toBe('scan_limit_invalid');
      expect((await rejectionOf(() => p.scanCommitted(-1, 10))).code).toBe('scan_cursor_invalid');
    });

    it('identity, head, receipts and history survive a restart (durable same-key readback)', async () => {
      const h = make();
      const p = await h.open();
      await commitN(p, 1, 5);
      const id = await p.storeIdentity();
      const head = await p.load();
      const receipt = await p.readReceipt('op-3');
      const history = await p.scanCommitted(0, 100);
      p.close();
      const q = await h.open();
      expect(await q.storeIdentity()).toEqual(id);
      expect(await q.load()).toEqual(head);
      expect(await q.readReceipt('op-3')).toEqual(receipt);
      expect(await q.scanCommitted(0, 100)).toEqual(history);
      expect(await q.commit(await request(q, 3))).toEqual({ status: 'conflict', reason: 'operation_id_exists' });
      expect(await q.commit(await request(q, 6))).toMatchObject({ status: 'applied', cursor: 6 });
    });

    it('retain_all_v0: nothing committed is pruned or rewritten — every receipt and transaction reads back as committed, and the identity stays', async () => {
      const p = await make().open();
      const id = await p.storeIdentity();
      await commitN(p, 1, 12);
      const early = (await p.scanCommitted(0, 12)).transactions.map(({ projection: _head, ...t }) => t);
      await commitN(p, 13, 30);
      expect(await p.storeIdentity()).toEqual(id);
      expect((await p.scanCommitted(0, 12)).transactions).toEqual(early);
      for (let n = 1; n <= 30; n++) {
        expect(await p.readReceipt(`op-${n}`)).toEqual({
          operation_id: `op-${n}`,
          request_digest: sha(n),
          cursor: n,
          provider_revision: `${id.incarnation}:${n}`,
          receipt: { operation_id: `op-${n}`, n },
        });
      }
    });

    it('a closed provider fails commits and rejects reads', async () => {
      const p = await make().open();
      p.close();
      expect(
        await p.commit({
          expected_provider_revision: 'x',
          operation_id: 'a',
          request_digest: sha(1),
          events: [{}],
          next_projection: {},
          receipt: {},
        }),
      ).toEqual({
        status: 'failed',
        code: 'provider_closed',
      });
      expect((await rejectionOf(() => p.load())).code).toBe('provider_closed');
      expect((await rejectionOf(() => p.readReceipt('a'))).code).toBe('provider_closed');
      expect((await rejectionOf(() => p.scanCommitted(0, 1))).code).toBe('provider_closed');
      expect((await rejectionOf(() => p.storeIdentity())).code).toBe('provider_closed');
    });

    it('a store opened for another Goal or another incarnation than expected refuses', async () => {
      const h = make();
      const p = await h.open();
      const { incarnation } = await p.storeIdentity();
      p.close();
      expect((await rejectionOf(async () => h.open({ goal_id: 'other-goal' }))).code).toBe('work_store_goal_mismatch');
      const e = await rejectionOf(async () => h.open({ expected_incarnation: 'f'.repeat(32) }));
      expect(e.code).toBe('work_store_foreign_incarnation');
      expect(e.kind).toBe('rejected');
      expect((await (await h.open({ expected_incarnation: incarnation })).storeIdentity()).incarnation).toBe(
        incarnation,
      );
    });

    describeLineage(make);
  });
}

const SOURCE_INC = 'a'.repeat(32);
const lineageRows = (n: number, prefix = 'src') =>
  Array.from({ length: n }, (_, i) => ({
    cursor: i + 1,
    provider_revision: `${SOURCE_INC}:${i + 1}`,
    operation_id: `${prefix}-${i + 1}`,
    request_digest: sha(i + 100),
    events: '[{"n":1}]',
    receipt: `{"operation_id":"${prefix}-${i + 1}","store":"old"}`,
  }));
const lineageOf = (n: number, over: Record<string, unknown> = {}) => ({
  source_store_identity: 'sqlite:' + 'b'.repeat(32),
  source_incarnation: SOURCE_INC,
  source_head_cursor: n,
  source_provider_revision: `${SOURCE_INC}:${n}`,
  source_projection: '{"n":0}',
  recovery_id: 'c'.repeat(64),
  content_digest: 'd'.repeat(64),
  ...over,
});

/** lineage_import_once: another store's history, imported once, before this store's first commit. */
function describeLineage(make: WorkProviderFactory): void {
  it('imports another store’s history once, byte for byte: its receipts read back as the originals and its operation ids count as this store’s', async () => {
    const h = make();
    const p = await h.open();
    const r = await p.importLineage({ lineage: lineageOf(3), rows: lineageRows(3) });
    expect(r).toMatchObject({ status: 'applied', lineage: { source_head_cursor: 3, recovery_id: 'c'.repeat(64) } });
    expect(await p.readReceipt('src-2')).toEqual({
      operation_id: 'src-2',
      request_digest: sha(101),
      cursor: 2,
      provider_revision: `${SOURCE_INC}:2`,
      receipt: { operation_id: 'src-2', store: 'old' },
    });
    expect(await p.importLineage({ lineage: lineageOf(3), rows: lineageRows(3) })).toMatchObject({ status: 'already' });
    // The store's own cursor is untouched; an imported operation id cannot commit again.
    expect((await p.load()).cursor).toBe(0);
    expect(await p.commit(await request(p, 1, { operation_id: 'src-1' }))).toEqual({
      status: 'conflict',
      reason: 'operation_id_exists',
    });
    expect((await p.commit(await request(p, 1))).status).toBe('applied');
    p.close();
    const again = await h.open();
    expect((await again.lineage()).map((l) => l.source_store_identity)).toEqual(['sqlite:' + 'b'.repeat(32)]);
    expect((await again.readReceipt('src-3'))?.cursor).toBe(3);
    again.close();
  });

  it('refuses a lineage into a store with commits, and rows that are not contiguous in the source incarnation, writing nothing', async () => {
    const p = await make().open();
    const gap = lineageRows(3).filter((r) => r.cursor !== 2);
    expect(await p.importLineage({ lineage: lineageOf(3), rows: gap })).toEqual({
      status: 'conflict',
      reason: 'rows_invalid',
    });
    const foreign = lineageRows(2).map((r) => ({ ...r, provider_revision: `${'e'.repeat(32)}:${r.cursor}` }));
    expect(await p.importLineage({ lineage: lineageOf(2), rows: foreign })).toEqual({
      status: 'conflict',
      reason: 'rows_invalid',
    });
    expect(await p.importLineage({ lineage: lineageOf(4), rows: lineageRows(3) })).toEqual({
      status: 'conflict',
      reason: 'rows_invalid',
    });
    expect(await p.lineage()).toEqual([]);
    expect(await p.readReceipt('src-1')).toBeUndefined();
    expect((await p.commit(await request(p, 1))).status).toBe('applied');
    expect(await p.importLineage({ lineage: lineageOf(3), rows: lineageRows(3) })).toEqual({
      status: 'conflict',
      reason: 'store_not_empty',
    });
    expect(await p.lineage()).toEqual([]);
    p.close();
  });

  it('holds two lineages imported one after the other, and scans each back as imported, in pages', async () => {
    const h = make();
    const p = await h.open();
    const second = { source_store_identity: 'postgresql:' + 'f'.repeat(32), source_incarnation: 'e'.repeat(32) };
    const secondRows = lineageRows(4, 'next').map((r) => ({
      ...r,
      provider_revision: `${second.source_incarnation}:${r.cursor}`,
    }));
    expect((await p.importLineage({ lineage: lineageOf(3), rows: lineageRows(3) })).status).toBe('applied');
    const l2 = lineageOf(4, { ...second, source_provider_revision: `${second.source_incarnation}:4` });
    expect((await p.importLineage({ lineage: l2, rows: secondRows })).status).toBe('applied');
    expect((await p.lineage()).map((l) => l.source_store_identity)).toEqual([
      'sqlite:' + 'b'.repeat(32),
      second.source_store_identity,
    ]);
    expect(await p.scanLineage('sqlite:' + 'b'.repeat(32), 0, 1000)).toEqual(lineageRows(3));
    expect(await p.scanLineage(second.source_store_identity, 1, 2)).toEqual(secondRows.slice(1, 3));
    expect(await p.scanLineage(second.source_store_identity, 4, 10)).toEqual([]);
    expect(await p.scanLineage('sqlite:' + '0'.repeat(32), 0, 10)).toEqual([]);
    expect((await p.readReceipt('next-4'))?.provider_revision).toBe(`${second.source_incarnation}:4`);
    p.close();
  });
}
