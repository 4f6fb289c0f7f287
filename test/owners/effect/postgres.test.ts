/**
 * The PostgreSQL effect port beyond its conformance suite, against the real server: the write's
 * precondition is checked in the database, so two pools racing the same write on one effect never
 * both apply; a COMMIT whose connection is terminated at the commit point is ambiguous, and the
 * journal's readback turns an intent that did not land into store_outcome_unproved, after which
 * the same request applies once; a schema `loopx db migrate` has not prepared is refused.
 */
import { expect, it } from 'vitest';
import {
  EFFECT_PG_MIGRATIONS,
  effectJournal,
  openPgEffectPort,
  type EffectRecord,
  type EffectWrite,
} from '../../../src/owners/effect/index.js';
import type { CommitResult } from '../../../src/owners/port.js';
import { describePg } from '../../support/pg.js';
import { meetingInTransaction, terminatedAtCommit } from '../conformance/pg-faults.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { rejectionOf, sha } from '../conformance/support.js';

const pg = pgHarnesses('effect', EFFECT_PG_MIGRATIONS);
const T0 = '2030-01-01T00:00:00.000Z';
const CLOCK = { now: () => new Date(T0) };
const INTENT = {
  operation_id: 'op-a',
  idempotency_key: 'key-a',
  goal_id: 'g1',
  kind: 'webhook.deliver',
  target: 'webhook:127.0.0.1:9',
  intent: { n: 1 },
};

const EFFECT: EffectRecord = {
  operation_id: 'op-1',
  idempotency_key: 'key-1',
  goal_id: 'g1',
  kind: 'webhook.deliver',
  target: 'webhook:127.0.0.1:9',
  intent: '{"n":1}',
  intent_digest: sha(1),
  outcome: 'pending',
  receipt: null,
  attempt: 0,
  dispatched_at: null,
  hold: null,
  reconcile_attempts: 0,
  created_at: T0,
  settled_at: null,
};
const CREATE: EffectWrite = {
  op: 'create_effect',
  effect: EFFECT,
  transition: {
    operation_id: 'op-1',
    seq: 1,
    event: 'intent',
    outcome: 'pending',
    receipt: null,
    reason: null,
    at: T0,
  },
  enqueued_at: T0,
};
const DISPATCHED = { ...EFFECT, attempt: 1, dispatched_at: T0 };
const DISPATCH: EffectWrite = {
  op: 'update_effect',
  effect: DISPATCHED,
  transition: {
    operation_id: 'op-1',
    seq: 2,
    event: 'dispatch',
    outcome: 'pending',
    receipt: null,
    reason: null,
    at: T0,
  },
  outbox: 'remove',
};

const statuses = (rs: readonly CommitResult[]) =>
  rs.map((r) => (r.status === 'conflict' ? `conflict:${r.reason}` : r.status)).sort();

describePg('effect port on PostgreSQL: preconditions in the database, commit-point ambiguity', () => {
  it('two pools committing the same create, then the same update, of one effect at once: exactly one applies each time, the other is a conflict', async () => {
    const db = await pg.database();
    const [a, b] = meetingInTransaction([pg.pool(db.schema), pg.pool(db.schema)]).map((p) => openPgEffectPort(p)) as [
      ReturnType<typeof openPgEffectPort>,
      ReturnType<typeof openPgEffectPort>,
    ];
    expect(statuses(await Promise.all([a.commit(CREATE), b.commit(CREATE)]))).toEqual(['applied', 'conflict:exists']);
    const [c, d] = meetingInTransaction([pg.pool(db.schema), pg.pool(db.schema)]).map((p) => openPgEffectPort(p)) as [
      typeof a,
      typeof a,
    ];
    expect(statuses(await Promise.all([c.commit(DISPATCH), d.commit(DISPATCH)]))).toEqual([
      'applied',
      'conflict:changed',
    ]);
    expect(await a.listEffects()).toEqual([DISPATCHED]);
    expect((await a.listHistory('op-1')).map((t) => t.seq)).toEqual([1, 2]);
    expect(await a.listOutbox()).toEqual([]);
    for (const p of [a, b, c, d]) p.close();
  });

  it('an intent whose COMMIT loses its connection is store_outcome_unproved (it did not land); the same request retried applies once', async () => {
    const db = await pg.database();
    const cut = terminatedAtCommit(pg.pool(db.schema), pg.pool(db.schema));
    const port = openPgEffectPort(cut.db);
    expect(await port.commit(CREATE)).toEqual({ status: 'ambiguous' });
    expect(cut.fired()).toBe(true);
    expect(await port.read({ operation_id: 'op-1' })).toEqual({});

    const again = terminatedAtCommit(pg.pool(db.schema), pg.pool(db.schema));
    const journal = effectJournal(openPgEffectPort(again.db), CLOCK);
    expect((await rejectionOf(() => journal.recordIntent(INTENT))).code).toBe('store_outcome_unproved');
    expect(again.fired()).toBe(true);
    expect(await journal.list()).toEqual([]);
    const first = await journal.recordIntent(INTENT);
    expect(first.replayed).toBe(false);
    expect(await journal.recordIntent(INTENT)).toEqual({ effect: first.effect, replayed: true });
    expect(await journal.list()).toEqual([first.effect]);
    expect((await journal.history('op-a')).map((t) => t.event)).toEqual(['intent']);
    expect((await journal.outbox()).map((o) => o.operation_id)).toEqual(['op-a']);
    journal.close();
    port.close();
  });

  it('a schema loopx db migrate has not prepared is refused on first use, never created by the port', async () => {
    const port = openPgEffectPort(pg.pool(pg.schema()));
    expect((await rejectionOf(() => port.read({ operation_id: 'op-1' }))).code).toBe('pg_schema_not_migrated');
    expect((await rejectionOf(() => port.commit(CREATE))).code).toBe('pg_schema_not_migrated');
    port.close();
  });
});
