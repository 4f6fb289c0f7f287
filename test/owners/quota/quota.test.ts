/**
 * Quota owner conformance (in-memory reference and SQLite): a settlement identity debits once;
 * a replay returns the original entry, a changed request is a conflict; voids stay as history;
 * totals sum written entries in [since, until). Plus historical readback of a copied quota.db.
 */
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/core/index.js';
import {
  memoryQuotaLedger,
  openSqliteQuotaLedger,
  rollingWindow,
  type QuotaLedger,
  type SpendRequest,
} from '../../../src/owners/quota/index.js';
import { readHistoricalFile as readHistorical } from '../../../src/owners/quota/historical.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-quota-'));
  dirs.push(d);
  return d;
};
const codeOf = async (fn: () => Promise<unknown>): Promise<string | undefined> => {
  try {
    await fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

/** A clock the test moves: each call returns the current instant. */
const clock = (start = '2026-03-01T00:00:00.000Z') => {
  let t = Date.parse(start);
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
};
const MIN = 60_000;

const spend = (n: number, over: Partial<SpendRequest> = {}): SpendRequest => ({
  effect_id: `st-${n}#quota_spend`,
  goal_id: 'g1',
  goal_instance_id: 'gi_1',
  amount: 1,
  unit: 'turn',
  ...over,
});

const providers: Array<[string, (now: () => Date) => QuotaLedger]> = [
  ['memory', (now) => memoryQuotaLedger({ now })],
  ['sqlite', (now) => openSqliteQuotaLedger(join(tempDir(), 'quota.db'), { now })],
];

describe.each(providers)('quota owner (%s)', (_name, make) => {
  it('a spend is written once; the same effect id and request is replayed without a second debit', async () => {
    const c = clock();
    const q = make(c.now);
    const first = await q.spend(spend(1));
    expect(first.status).toBe('written');
    expect(first.entry).toMatchObject({
      effect_id: 'st-1#quota_spend',
      amount: 1,
      unit: 'turn',
      status: 'written',
      created_at: '2026-03-01T00:00:00.000Z',
      voided_at: null,
    });
    expect(first.entry.request_digest).toMatch(/^[0-9a-f]{64}$/);
    c.advance(MIN);
    expect(await q.spend(spend(1))).toEqual({ status: 'replayed', entry: first.entry });
    expect(await q.total('g1', { since: '2026-01-01T00:00:00Z' })).toMatchObject({ totals: { turn: 1 }, entries: 1 });
    q.close();
  });

  it('the same effect id with a different request is quota_spend_conflict and writes nothing', async () => {
    const q = make(clock().now);
    await q.spend(spend(1));
    for (const over of [{ amount: 2 }, { unit: 'token' }, { goal_instance_id: 'gi_2' }, { goal_id: 'g2' }]) {
      expect(await codeOf(() => q.spend(spend(1, over)))).toBe('quota_spend_conflict');
    }
    expect(await q.list()).toHaveLength(1);
    q.close();
  });

  it('the conflict carries both digests and one next action', async () => {
    const q = make(clock().now);
    const { entry } = await q.spend(spend(1));
    try {
      await q.spend(spend(1, { amount: 5 }));
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({
        kind: 'conflict',
        details: { effect_id: 'st-1#quota_spend', existing_digest: entry.request_digest },
      });
      expect((e as { nextAction?: string }).nextAction).toBeTruthy();
    }
    q.close();
  });

  it('a void keeps the entry as history and removes it from totals; voiding again is a readback; a voided id is never debited again', async () => {
    const c = clock();
    const q = make(c.now);
    await q.spend(spend(1, { amount: 3 }));
    c.advance(MIN);
    const v = await q.void('st-1#quota_spend', 'turn_failed');
    expect(v.status).toBe('voided');
    expect(v.entry).toMatchObject({
      status: 'voided',
      void_reason: 'turn_failed',
      voided_at: '2026-03-01T00:01:00.000Z',
    });
    c.advance(MIN);
    expect(await q.void('st-1#quota_spend', 'other_reason')).toEqual({ status: 'replayed', entry: v.entry });
    expect(await q.spend(spend(1, { amount: 3 }))).toEqual({ status: 'replayed', entry: v.entry });
    expect(await q.total('g1', { since: '2026-01-01T00:00:00Z' })).toMatchObject({ totals: {}, entries: 0 });
    expect(await codeOf(() => q.void('st-9', 'x'))).toBe('quota_spend_not_found');
    expect(await codeOf(() => q.void('st-1#quota_spend', 'Not A Code'))).toBe('quota_input_invalid');
    q.close();
  });

  it('invalid amounts, units and Goal ids are refused as input', async () => {
    const q = make(clock().now);
    for (const over of [
      { amount: 0 },
      { amount: 1.5 },
      { amount: -1 },
      { unit: 'Turns!' },
      { goal_id: '../g' },
      { effect_id: '' },
      { goal_instance_id: 'a b' },
    ]) {
      expect(await codeOf(() => q.spend(spend(1, over)))).toBe('quota_input_invalid');
    }
    expect(await q.list()).toEqual([]);
    q.close();
  });

  it('total sums written amounts per unit in [since, until), per Goal and optionally per lifetime', async () => {
    const c = clock();
    const q = make(c.now);
    await q.spend(spend(1)); // 00:00
    c.advance(10 * MIN);
    await q.spend(spend(2, { amount: 500, unit: 'token' })); // 00:10
    c.advance(10 * MIN);
    await q.spend(spend(3, { goal_instance_id: 'gi_2' })); // 00:20
    await q.spend(spend(4, { goal_id: 'g2' })); // 00:20, another Goal
    c.advance(10 * MIN);
    await q.spend(spend(5)); // 00:30
    expect(await q.total('g1', { since: '2026-03-01T00:00:00Z' })).toEqual({
      goal_id: 'g1',
      goal_instance_id: null,
      since: '2026-03-01T00:00:00.000Z',
      until: null,
      totals: { turn: 3, token: 500 },
      entries: 4,
    });
    expect(
      (await q.total({ goal_id: 'g1', goal_instance_id: 'gi_1' }, { since: '2026-03-01T00:00:00Z' })).totals,
    ).toEqual({ turn: 2, token: 500 });
    // since is inclusive, until exclusive
    expect(await q.total('g1', { since: '2026-03-01T00:10:00Z', until: '2026-03-01T00:30:00Z' })).toMatchObject({
      totals: { token: 500, turn: 1 },
      entries: 2,
    });
    expect(await q.total('g1', rollingWindow(0.25, new Date(c.now().getTime() + 1)))).toMatchObject({
      totals: { turn: 2 },
      entries: 2,
    });
    expect(await codeOf(() => q.total('g1', { since: 'yesterday' }))).toBe('quota_input_invalid');
    expect(await codeOf(() => q.total('g1', { since: '2026-03-02T00:00:00Z', until: '2026-03-01T00:00:00Z' }))).toBe(
      'quota_input_invalid',
    );
    q.close();
  });

  it('entries list in creation order, filtered by Goal and status', async () => {
    const q = make(clock().now);
    await q.spend(spend(1));
    await q.spend(spend(2, { goal_id: 'g2' }));
    await q.spend(spend(3));
    await q.void('st-3#quota_spend', 'turn_failed');
    expect((await q.list()).map((e) => e.effect_id)).toEqual([
      'st-1#quota_spend',
      'st-2#quota_spend',
      'st-3#quota_spend',
    ]);
    expect((await q.list({ goal_id: 'g1', status: 'written' })).map((e) => e.effect_id)).toEqual(['st-1#quota_spend']);
    expect((await q.get('st-2#quota_spend'))!.goal_id).toBe('g2');
    expect(await q.get('nope')).toBeUndefined();
    q.close();
  });
});

describe('quota owner (sqlite only)', () => {
  it('quota.db is owner-only, and a replay after a restart does not debit again', async () => {
    const path = join(tempDir(), 'quota.db');
    const a = openSqliteQuotaLedger(path);
    const first = (await a.spend(spend(1))).entry;
    a.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const b = openSqliteQuotaLedger(path);
    expect(await b.spend(spend(1))).toEqual({ status: 'replayed', entry: first });
    expect(await b.list()).toHaveLength(1);
    b.close();
  });

  it('two ledgers on one file debit an effect id once between them', async () => {
    const path = join(tempDir(), 'quota.db');
    const a = openSqliteQuotaLedger(path);
    const b = openSqliteQuotaLedger(path);
    expect((await a.spend(spend(1))).status).toBe('written');
    expect((await b.spend(spend(1))).status).toBe('replayed');
    expect(await codeOf(() => b.spend(spend(1, { amount: 9 })))).toBe('quota_spend_conflict');
    a.close();
    b.close();
  });
});

describe('quota readHistorical', () => {
  async function copied() {
    const live = join(tempDir(), 'quota.db');
    const q = openSqliteQuotaLedger(live);
    await q.spend(spend(1));
    await q.spend(spend(2, { amount: 40, unit: 'token' }));
    await q.void('st-2#quota_spend', 'turn_failed');
    q.close();
    const workspace = tempDir();
    const copy = join(workspace, 'quota.db');
    copyFileSync(live, copy);
    return { copy, workspace };
  }
  const damage = (path: string, sql: string) => {
    const db = new Database(path);
    db.pragma('ignore_check_constraints = ON');
    db.exec(sql);
    db.close();
  };
  const codes = (h: { findings: readonly { code: string; subject: string }[] }) =>
    h.findings.map((f) => `${f.code} ${f.subject}`).sort();

  it('decodes the ledger of a copy as history, without writing the copy', async () => {
    const { copy, workspace } = await copied();
    const before = sha256Hex(readFileSync(copy));
    const listing = readdirSync(workspace).sort();
    const h = readHistorical(copy);
    expect(h.schema_version).toBe(1);
    expect(h.entries.map((e) => [e.effect_id, e.status])).toEqual([
      ['st-1#quota_spend', 'written'],
      ['st-2#quota_spend', 'voided'],
    ]);
    expect(codes(h)).toEqual(['quota_ledger_historical file:quota.db']);
    expect(h.findings[0]!.severity).toBe('warning');
    expect(sha256Hex(readFileSync(copy))).toBe(before);
    expect(readdirSync(workspace).sort()).toEqual(listing);
  });

  it('an amount changed after the debit is quota_request_digest_mismatch', async () => {
    const { copy } = await copied();
    damage(copy, `UPDATE spends SET amount = 1000 WHERE effect_id = 'st-1#quota_spend'`);
    const h = readHistorical(copy);
    expect(codes(h)).toContain('quota_request_digest_mismatch spend:st-1#quota_spend');
    expect(h.entries.map((e) => e.effect_id)).toEqual(['st-2#quota_spend']);
  });

  it('a voided entry without a void time, or an unknown status, is quota_row_invalid', async () => {
    const { copy } = await copied();
    damage(
      copy,
      `UPDATE spends SET voided_at = NULL WHERE effect_id = 'st-2#quota_spend'; UPDATE spends SET status = 'refunded' WHERE effect_id = 'st-1#quota_spend'`,
    );
    expect(codes(readHistorical(copy))).toEqual([
      'quota_row_invalid spend:st-1#quota_spend',
      'quota_row_invalid spend:st-2#quota_spend',
    ]);
  });

  it('a file that is not SQLite is quota_copy_unreadable; a newer schema is quota_schema_unsupported', async () => {
    expect(codes(readHistorical(join(tempDir(), 'absent.db')))).toEqual(['quota_copy_unreadable file:quota.db']);
    const { copy } = await copied();
    damage(copy, 'PRAGMA user_version = 5');
    expect(codes(readHistorical(copy))).toEqual(['quota_schema_unsupported schema:5']);
  });
});
