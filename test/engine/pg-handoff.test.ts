/**
 * Runs whose state and ownership live in PostgreSQL (a real server): two engines stand in for two
 * hosts of one cluster — each with its own run authority instance (lease rows with epochs on the
 * database clock) and keys from the one scope, both on one schema's run store. A run moves
 * between them with exactly one owner at a time: a planned handoff resumes it elsewhere at
 * `last_sequence + 1` under the next epoch, and a writer whose lease another host took over fails
 * in the database — whatever it believes in memory — and writes nothing more.
 */
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/index.js';
import { openEngine, RUNS_COMPONENT, RUNS_PG_MIGRATIONS, openPgRunStore, type Engine } from '../../src/engine/index.js';
import {
  openPgRunAuthority,
  openRunAuthority,
  RUN_AUTHORITY_COMPONENT,
  RUN_AUTHORITY_PG_MIGRATIONS,
  type PgRunAuthority,
} from '../../src/run-authority/index.js';
import { effect as effectOwner } from '../../src/owners/index.js';
import { migratePostgres, type PgDatabase } from '../../src/store/index.js';
import { describePg, pgDatabases } from '../support/pg.js';
import { addTool, allEvents, call, latch, localApp, makeTool, privateDir, scriptedAgent } from './engine-support.js';

const pgDatabase = pgDatabases();
const closers: Array<() => unknown> = [];
afterEach(async () => {
  // A case that failed with a lease outstanding must not hang the others on the authority's drain.
  while (closers.length > 0) await Promise.race([closers.pop()!(), new Promise((r) => setTimeout(r, 2_000))]);
});

interface Host {
  readonly engine: Engine;
  readonly authority: PgRunAuthority;
}

/** One schema migrated for runs and their authority, and a factory of hosts on it sharing one key scope. */
async function cluster(): Promise<{
  db: PgDatabase;
  host: (tools: Parameters<typeof localApp>[0], options?: { leaseMs?: number; keyDir?: string }) => Host;
}> {
  const db = pgDatabase();
  await migratePostgres(db, RUNS_COMPONENT, RUNS_PG_MIGRATIONS);
  await migratePostgres(db, RUN_AUTHORITY_COMPONENT, RUN_AUTHORITY_PG_MIGRATIONS);
  const keyDir = join(privateDir(), 'authority');
  const host = (tools: Parameters<typeof localApp>[0], options: { leaseMs?: number; keyDir?: string } = {}): Host => {
    const keys = openRunAuthority({ dir: options.keyDir ?? keyDir, create: true });
    const authority = openPgRunAuthority({
      db,
      keys,
      ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    });
    const engine = openEngine({
      application: localApp(tools),
      authority,
      store: openPgRunStore(db, { fence: authority.fence }),
    });
    closers.push(
      () => authority.close(),
      () => engine.close(),
    );
    return { engine, authority };
  };
  return { db, host };
}

/** Who held each epoch of the run, in order (the lease history the database keeps). */
const epochs = async (db: PgDatabase, runId: string) =>
  (
    await db.query<{ epoch: string; owner_instance: string }>(
      'SELECT epoch, owner_instance FROM run_lease_history WHERE run_id = $1 ORDER BY epoch',
      [runId],
    )
  ).map((r) => ({
    epoch: Number(r.epoch),
    owner: r.owner_instance,
  }));

describePg('runs on PostgreSQL: one owner at a time, fenced in the database', () => {
  it('a planned handoff: suspended on one host, resumed on another under the next epoch at last_sequence + 1, with gapless events', async () => {
    const { db, host } = await cluster();
    const a = host([addTool()]);
    const b = host([addTool()]);
    const agent = scriptedAgent([{ toolCalls: [call('add', { a: 2, b: 40 })] }, { text: 'done: 42' }]);

    const suspended = await a.engine.start(agent, { input: 'add', suspendAfterTurns: 1 });
    expect(suspended.status).toBe('suspended');
    const resumed = await b.engine.resume(suspended.run_id);
    expect(resumed).toMatchObject({ status: 'completed', completed_turns: 2 });

    const events = await allEvents(b.engine, suspended.run_id);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'RunStarted')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'Resumed')).toHaveLength(1);
    expect(events.find((e) => e.type === 'Resumed')!.sequence).toBe(suspended.last_sequence + 1);
    // The host that suspended it reads the same history: the run lives in the database, not on a host.
    expect((await allEvents(a.engine, suspended.run_id)).map((e) => e.sequence)).toEqual(events.map((e) => e.sequence));

    // Every acquisition was a new epoch with one owner; the resuming host's epochs come after the suspending host's.
    const held = await epochs(db, suspended.run_id);
    expect(new Set(held.map((h) => h.epoch)).size).toBe(held.length);
    const lastOfA = Math.max(...held.filter((h) => h.owner === a.authority.instanceId).map((h) => h.epoch));
    const firstOfB = Math.min(...held.filter((h) => h.owner === b.authority.instanceId).map((h) => h.epoch));
    expect(firstOfB).toBeGreaterThan(lastOfA);
  });

  it('a paused owner whose lease another host took over fails its next write in the database, and writes nothing more', async () => {
    const { db, host } = await cluster();
    const gate = latch();
    const entered = latch();
    let calls = 0;
    const slow = () =>
      makeTool('slow', async () => {
        calls++;
        if (calls === 1) {
          entered.open();
          await gate.wait();
        }
        return { ok: true };
      });
    // A long lease: no renewal happens during the test, so the takeover below is the only change of owner.
    const a = host([slow()], { leaseMs: 120_000 });
    const b = host([slow()], { leaseMs: 120_000 });
    const agent = scriptedAgent([{ toolCalls: [call('slow', {})] }, { text: 'finished' }]);

    const started = a.engine.start(agent, { input: 'go', runId: 'run_fenced' });
    await entered.wait();
    const stale = a.authority.heldEpoch('run_fenced')!;
    // The owner is paused past its lease (as SIGSTOP would leave it): its expiry passes on the database clock.
    await db.query(`UPDATE run_leases SET lease_expires_at = now() - interval '1 second' WHERE run_id = 'run_fenced'`);
    const taken = await b.engine.resume('run_fenced');
    expect(taken.status).toBe('completed');
    expect(b.authority.heldEpoch('run_fenced')).toBeUndefined();
    const before = await allEvents(b.engine, 'run_fenced');

    // The paused owner wakes: its tool returns and its next commit is refused by the database.
    gate.open();
    const refusal = await started.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isLoopxError(refusal) && refusal.code).toBe('run_lease_lost');
    expect(isLoopxError(refusal) && refusal.details).toMatchObject({ run_id: 'run_fenced', epoch: stale });
    // Nothing of the stale owner landed after the takeover.
    expect(await allEvents(b.engine, 'run_fenced')).toEqual(before);
    expect(before.filter((e) => e.type === 'RunStarted')).toHaveLength(1);
    const held = await epochs(db, 'run_fenced');
    expect(held.find((h) => h.epoch === stale)?.owner).toBe(a.authority.instanceId);
    expect(held.filter((h) => h.epoch > stale).every((h) => h.owner === b.authority.instanceId)).toBe(true);
  });

  it('a snapshot signed on one host verifies on another host of the same scope, and fails closed on a host of another scope', async () => {
    const { host } = await cluster();
    const a = host([addTool()]);
    const b = host([addTool()]);
    const agent = scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 1 })] }, { text: 'done' }]);
    const suspended = await a.engine.start(agent, { input: 'x', suspendAfterTurns: 1 });
    const signed = await a.engine.exportEnvelope(suspended.run_id);
    expect(await b.engine.verifySnapshot(signed.bytes)).toMatchObject({ valid: true, record_state: 'SUSPENDED' });
    // A host of another scope, on the very same records: the claim does not verify there.
    const other = host([addTool()], { keyDir: join(privateDir(), 'authority') });
    expect(other.engine.authority.scopeId).not.toEqual(a.engine.authority.scopeId);
    expect(await other.engine.verifySnapshot(signed.bytes)).toMatchObject({ valid: false, record_state: null });
    await expect(other.engine.importSnapshot(signed.bytes, { agent })).rejects.toMatchObject({
      code: 'snapshot_claim_invalid',
    });
  });

  it('an effect of a run is written only under the run’s lease, checked in the database: after a takeover the old owner’s effect writes are refused', async () => {
    const { db, host } = await cluster();
    await migratePostgres(db, 'effect', effectOwner.EFFECT_PG_MIGRATIONS);
    const a = host([]);
    const b = host([]);
    const scoped = (authority: PgRunAuthority) =>
      effectOwner.effectJournal(
        effectOwner.openPgEffectPort(db, {
          fence: (q, write) =>
            write.effect.goal_id === 'run:run_fx' ? authority.fence(q, 'run_fx') : Promise.resolve(undefined),
        }),
      );
    const intent = (n: number) => ({
      operation_id: `run_fx:t1:k${n}`,
      idempotency_key: `key-${n}`,
      goal_id: 'run:run_fx',
      kind: 'test.effect',
      target: 'test:x',
      intent: { n },
    });
    const lease = (await a.authority.acquireRun('run_fx'))!;
    const journalA = scoped(a.authority);
    await journalA.recordIntent(intent(0));
    await db.query(`UPDATE run_leases SET lease_expires_at = now() - interval '1 second' WHERE run_id = 'run_fx'`);
    const taken = (await b.authority.acquireRun('run_fx'))!;
    // The old owner can neither dispatch the effect it journalled nor journal another.
    await expect(journalA.beginDispatch('run_fx:t1:k0')).rejects.toMatchObject({ code: 'run_lease_lost' });
    await expect(journalA.recordIntent(intent(1))).rejects.toMatchObject({ code: 'run_lease_lost' });
    const journalB = scoped(b.authority);
    expect(await journalB.get('run_fx:t1:k1')).toBeUndefined();
    expect(await journalB.get('run_fx:t1:k0')).toMatchObject({ outcome: 'pending', dispatched_at: null });
    // The new owner writes under its own epoch.
    await journalB.beginDispatch('run_fx:t1:k0');
    expect((await journalB.get('run_fx:t1:k0'))?.dispatched_at).not.toBeNull();
    await taken.release();
    await lease.release();
  });

  it('a record write under a lease taken over is refused in the database (run_lease_lost), and the record stays the new owner’s', async () => {
    const { db, host } = await cluster();
    const a = host([]);
    const b = host([]);
    const lease = (await a.authority.acquireRun('run_records'))!;
    await a.authority.writeRecord(lease, {
      runId: 'run_records',
      state: 'ACTIVE',
      transitionGeneration: 1,
      ownerRoot: 'root_a',
      updatedAt: 't0',
    });
    // A live holder's lease is never taken.
    expect(await b.authority.acquireRun('run_records')).toBeUndefined();
    await db.query(`UPDATE run_leases SET lease_expires_at = now() - interval '1 second' WHERE run_id = 'run_records'`);
    const next = (await b.authority.acquireRun('run_records'))!;
    await b.authority.writeRecord(next, {
      runId: 'run_records',
      state: 'SUSPENDED',
      transitionGeneration: 2,
      ownerRoot: 'root_a',
      updatedAt: 't1',
    });
    await expect(
      a.authority.writeRecord(lease, {
        runId: 'run_records',
        state: 'TERMINAL',
        transitionGeneration: 9,
        ownerRoot: 'root_a',
        updatedAt: 't2',
      }),
    ).rejects.toMatchObject({
      code: 'run_lease_lost',
    });
    expect(await b.authority.readRecord('run_records')).toMatchObject({ state: 'SUSPENDED', transitionGeneration: 2 });
    await next.release();
    await lease.release();
    // After both releases the run is free again, at a new epoch.
    const again = (await a.authority.acquireRun('run_records'))!;
    expect(a.authority.heldEpoch('run_records')).toBe(3);
    await again.release();
  });
});
