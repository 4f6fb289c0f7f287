/**
 * The PostgreSQL quota port beyond its conformance suite, against the real server: two pools racing
 * the same debit or void never both apply (the precondition is checked in the database); a debit
 * whose COMMIT loses its connection is ambiguous, and the ledger's readback turns it into
 * store_outcome_unproved, after which the same request debits once; amounts beyond 32 bits
 * round-trip and sum exactly.
 */
import { expect, it } from 'vitest';
import type { CommitResult } from '../../../src/owners/port.js';
import { QUOTA_PG_MIGRATIONS, openPgQuotaPort, quotaLedger, type SpendEntry } from '../../../src/owners/quota/index.js';
import { describePg } from '../../support/pg.js';
import { meetingInTransaction, terminatedAtCommit } from '../conformance/pg-faults.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { rejectionOf, sha } from '../conformance/support.js';

const pg = pgHarnesses('quota', QUOTA_PG_MIGRATIONS);
const T0 = '2030-01-01T00:00:00.000Z';
const CLOCK = { now: () => new Date(T0) };
const ENTRY: SpendEntry = {
  effect_id: 'st-1#quota_spend',
  goal_id: 'g1',
  goal_instance_id: 'gi_1',
  amount: 3,
  unit: 'turn',
  request_digest: sha(1),
  status: 'written',
  created_at: T0,
  voided_at: null,
  void_reason: null,
};
const VOIDED: SpendEntry = { ...ENTRY, status: 'voided', voided_at: T0, void_reason: 'turn_failed' };
const ALL = { goal_id: 'g1', goal_instance_id: null, since: T0, until: null };

const statuses = (rs: readonly CommitResult[]) =>
  rs.map((r) => (r.status === 'conflict' ? `conflict:${r.reason}` : r.status)).sort();

describePg('quota port on PostgreSQL: preconditions in the database, commit-point ambiguity', () => {
  it('two pools committing the same debit, then the same void, at once: exactly one applies each time, the other is a conflict', async () => {
    const db = await pg.database();
    const [a, b] = meetingInTransaction([pg.pool(db.schema), pg.pool(db.schema)]).map(openPgQuotaPort) as [
      ReturnType<typeof openPgQuotaPort>,
      ReturnType<typeof openPgQuotaPort>,
    ];
    const debit = { op: 'insert_spend', entry: ENTRY } as const;
    expect(statuses(await Promise.all([a.commit(debit), b.commit(debit)]))).toEqual(['applied', 'conflict:exists']);
    const [c, d] = meetingInTransaction([pg.pool(db.schema), pg.pool(db.schema)]).map(openPgQuotaPort) as [
      typeof a,
      typeof a,
    ];
    const cancel = { op: 'void_spend', entry: VOIDED } as const;
    expect(statuses(await Promise.all([c.commit(cancel), d.commit(cancel)]))).toEqual(['applied', 'conflict:changed']);
    expect(await a.list({})).toEqual([VOIDED]);
    for (const p of [a, b, c, d]) p.close();
  });

  it('a debit whose COMMIT loses its connection is store_outcome_unproved (it did not land); the same request retried debits once', async () => {
    const db = await pg.database();
    const cut = terminatedAtCommit(pg.pool(db.schema), pg.pool(db.schema));
    const ledger = quotaLedger(openPgQuotaPort(cut.db), CLOCK);
    const request = { effect_id: 'st-a#quota_spend', goal_id: 'g1', goal_instance_id: 'gi_1', amount: 2, unit: 'turn' };
    expect((await rejectionOf(() => ledger.spend(request))).code).toBe('store_outcome_unproved');
    expect(cut.fired()).toBe(true);
    expect(await ledger.get(request.effect_id)).toBeUndefined();
    expect((await ledger.spend(request)).status).toBe('written');
    expect((await ledger.spend(request)).status).toBe('replayed');
    expect(await ledger.total({ goal_id: 'g1' }, { since: T0 })).toMatchObject({ totals: { turn: 2 }, entries: 1 });
    ledger.close();
  });

  it('amounts beyond 32 bits are stored and summed exactly', async () => {
    const port = openPgQuotaPort(await pg.database());
    const big = { ...ENTRY, unit: 'token', amount: 2 ** 40 + 1 };
    await port.commit({ op: 'insert_spend', entry: big });
    await port.commit({ op: 'insert_spend', entry: { ...big, effect_id: 'st-2#quota_spend', request_digest: sha(2) } });
    expect(await port.get(big.effect_id)).toEqual(big);
    expect(await port.sumWritten(ALL)).toEqual({ totals: { token: 2 * (2 ** 40 + 1) }, entries: 2 });
    port.close();
  });
});
