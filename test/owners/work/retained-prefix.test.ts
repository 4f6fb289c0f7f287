/**
 * Retained-prefix export: pins head cursor, revision and identity; hash-linked records; a seal.
 * Its offline verifier passes an intact export and produces the right finding for each damage.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/canonical-json.js';
import { sha256Hex } from '../../../src/core/digest.js';
import {
  openWork,
  parseRetainedPrefixNdjson,
  retainedPrefixNdjson,
  verifyRetainedPrefix,
  RETAINED_PREFIX_SCHEMA,
  type RetainedPrefixRecord,
  type WorkOwner,
  type WorkProvider,
} from '../../../src/owners/work/index.js';
import { GOAL, HARNESSES, manualClock, owner, sqliteHarness } from './support.js';

const populate = async (w: WorkOwner): Promise<void> => {
  await w.setHandoffMode({ operation_id: 'mode', handoff_mode: 'hard_lease' });
  for (let i = 1; i <= 6; i++) await w.addTodo({ operation_id: `add-${i}`, title: `Todo ${i}`, priority: i });
  await w.engageFence({ operation_id: 'fence' });
  await w.acquireLease({
    operation_id: 'lease',
    todo_id: 't2',
    owner: 'agent',
    execution_key: 'k',
    ttl_ms: 60_000,
    expected_version: 0,
  });
  await w.updateTodo({
    operation_id: 'done',
    todo_id: 't2',
    status: 'done',
    lease: { owner: 'agent', execution_key: 'k', lease_epoch: 1 },
  });
  await w.updateTodo({ operation_id: 'block', todo_id: 't3', status: 'blocked', note: 'needs input' });
  // A batch: one transaction of two Todo changes.
  await w.updateTodos({
    operation_id: 'batch',
    updates: [
      { todo_id: 't4', priority: 40 },
      { todo_id: 't1', status: 'blocked', note: 'later' },
    ],
  });
};

const codes = (records: readonly unknown[]) => verifyRetainedPrefix(records).findings.map((f) => f.code);
const clone = (records: readonly RetainedPrefixRecord[]): Array<Record<string, unknown>> =>
  JSON.parse(JSON.stringify(records));

describe.each(HARNESSES)('retained-prefix export: %s', (_name, make) => {
  it('exports a pinned, hash-linked, sealed prefix that verifies offline and replays to the live head', async () => {
    const clock = manualClock();
    const w = await owner(make(), clock);
    await populate(w);
    const view = await w.view();
    const ex = await w.exportRetainedPrefix();
    expect(ex.head_cursor).toBe(view.cursor);
    expect(ex.provider_revision).toBe(view.provider_revision);
    expect(ex.store_identity).toBe(view.store_identity);
    expect(ex.records).toHaveLength(view.cursor + 2);
    const header = ex.records[0]!;
    expect(header).toMatchObject({
      record: 'header',
      schema_version: RETAINED_PREFIX_SCHEMA,
      goal_id: GOAL,
      head_cursor: view.cursor,
      retention: 'retain_all_v0',
    });
    expect(header.record === 'header' && [header.captured_at_start, header.captured_at_end]).toEqual([
      ex.capture_interval.start,
      ex.capture_interval.end,
    ]);
    expect(ex.records.at(-1)).toMatchObject({ record: 'seal', record_count: view.cursor });
    const v = verifyRetainedPrefix(ex.records, { goal_id: GOAL });
    expect(v.findings).toEqual([]);
    expect(v.ok).toBe(true);
    expect(v.archive_sha256).toBe(ex.archive_sha256);
    expect(v.projection!.todos).toEqual(view.todos);
    // NDJSON round trip.
    const parsed = parseRetainedPrefixNdjson(retainedPrefixNdjson(ex.records));
    expect(parsed.findings).toEqual([]);
    expect(verifyRetainedPrefix(parsed.records).ok).toBe(true);
  });

  it('an empty store exports a header and a seal that verify', async () => {
    const ex = await (await owner(make())).exportRetainedPrefix();
    expect(ex.records.map((r) => r.record)).toEqual(['header', 'seal']);
    expect(verifyRetainedPrefix(ex.records).ok).toBe(true);
  });
});

describe('retained-prefix damage, one finding per defect', () => {
  const exported = async () => {
    const w = await owner(sqliteHarness());
    await populate(w);
    return (await w.exportRetainedPrefix()).records;
  };

  it('a tampered transaction record breaks the chain at the next record', async () => {
    const r = clone(await exported());
    ((r[3]!.events as Array<Record<string, unknown>>)[0]!.todo as Record<string, unknown>).title = 'rewritten';
    const v = verifyRetainedPrefix(r);
    expect(v.ok).toBe(false);
    expect(v.findings).toContainEqual(
      expect.objectContaining({ code: 'retained_prefix_chain_broken', subject: 'cursor:4' }),
    );
    expect(v.projection).toBeNull();
  });

  it('a tampered last record is caught by the seal', async () => {
    const r = clone(await exported());
    (r.at(-2)!.receipt as Record<string, unknown>).committed_at = '1999-01-01T00:00:00.000Z';
    expect(codes(r)).toContain('retained_prefix_seal_mismatch');
  });

  it('a removed record is a cursor gap and a broken chain', async () => {
    const r = clone(await exported());
    r.splice(4, 1);
    const c = codes(r);
    expect(c).toContain('retained_prefix_cursor_gap');
    expect(c).toContain('retained_prefix_chain_broken');
    expect(c).toContain('retained_prefix_seal_mismatch');
  });

  it('a changed header (head cursor) no longer chains', async () => {
    const r = clone(await exported());
    r[0]!.head_cursor = 3;
    expect(codes(r)).toEqual(expect.arrayContaining(['retained_prefix_chain_broken', 'retained_prefix_head_mismatch']));
  });

  it('a missing seal, trailing records, an unknown schema and a bad interval are each reported', async () => {
    const base = await exported();
    expect(codes(clone(base).slice(0, -1))).toContain('retained_prefix_seal_missing');
    expect(codes([...clone(base), { record: 'transaction' }])).toContain('retained_prefix_trailing_records');
    const unknown = clone(base);
    unknown[0]!.schema_version = 'loopx_work_retained_prefix_v9';
    expect(codes(unknown)).toEqual(['retained_prefix_schema_unknown']);
    const interval = clone(base);
    interval[0]!.captured_at_end = '2000-01-01T00:00:00.000Z';
    expect(codes(interval)).toContain('retained_prefix_interval_invalid');
    expect(codes([])).toEqual(['retained_prefix_record_invalid']);
    expect(parseRetainedPrefixNdjson('{"record":"header"}\nnot json\n').findings.map((f) => f.subject)).toEqual([
      'line:2',
    ]);
  });

  it('a consistently re-hashed forgery still fails replay against the header’s head digest', async () => {
    // An attacker who rewrites an event and recomputes every hash cannot match the pinned head projection.
    const r = clone(await exported());
    // Record 6 adds t5, which no later transaction changes (a later post-image of a Todo replaces it whole).
    ((r[6]!.events as Array<Record<string, unknown>>)[0]!.todo as Record<string, unknown>).title = 'forged';
    const sha = (v: unknown) => sha256Hex(canonicalJson(v));
    for (let i = 1; i < r.length - 1; i++) r[i]!.prev_sha256 = sha(r[i - 1]);
    r.at(-1)!.chain_sha256 = sha(r.at(-2));
    expect(codes(r)).toEqual(['work_projection_mismatch']);
  });

  it('an export made while a writer commits is the pinned prefix: later commits are not in it', async () => {
    const h = sqliteHarness();
    const w = await owner(h);
    await populate(w);
    const inner = h.open();
    let wrote = false;
    const racing: WorkProvider = {
      provider: inner.provider,
      storeIdentity: () => inner.storeIdentity(),
      load: () => inner.load(),
      commit: (c) => inner.commit(c),
      readReceipt: (id) => inner.readReceipt(id),
      importLineage: (r) => inner.importLineage(r),
      lineage: () => inner.lineage(),
      scanLineage: (s, a, l) => inner.scanLineage(s, a, l),
      scanCommitted: async (a, l) => {
        if (!wrote) {
          wrote = true;
          await w.addTodo({ operation_id: 'during-export', title: 'Late' });
        }
        return inner.scanCommitted(a, l);
      },
      close: () => inner.close(),
    };
    const pinnedCursor = await w.transactionCount();
    const ex = await (await openWork({ provider: racing })).exportRetainedPrefix();
    expect(wrote).toBe(true);
    expect(await w.transactionCount()).toBe(pinnedCursor + 1);
    expect(ex.head_cursor).toBe(pinnedCursor);
    expect(ex.records.some((r) => r.record === 'transaction' && r.operation_id === 'during-export')).toBe(false);
    expect(verifyRetainedPrefix(ex.records).ok).toBe(true);
  });
});
