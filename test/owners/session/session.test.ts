/**
 * Session owner conformance: one suite runs the in-memory reference and the SQLite provider.
 * Generations fence executors; Turn journals are ordered prefixes; a Turn is settled once, and a
 * repeated settlement returns the original.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../../src/core/index.js';
import {
  TURN_PHASES,
  memorySessionStore,
  openSqliteSessionStore,
  type SessionStore,
  type TurnPhase,
} from '../../../src/owners/session/index.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-session-'));
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

const GOAL = { goal_id: 'g1', goal_instance_id: 'gi_1' };

const providers: Array<[string, () => SessionStore]> = [
  ['memory', () => memorySessionStore()],
  ['sqlite', () => openSqliteSessionStore(join(tempDir(), 'sessions.db'))],
];

/** A session with a bound run: returns the store, session id and the current execution generation. */
async function bound(make: () => SessionStore) {
  const store = make();
  const s = await store.openSession(GOAL);
  const b = await store.bindRun(s.session_id, 'run-1', s.execution_generation);
  return { store, id: s.session_id, gen: b.execution_generation };
}

async function recordUpTo(store: SessionStore, turnKey: string, gen: number, last: TurnPhase): Promise<void> {
  for (const p of TURN_PHASES.slice(0, TURN_PHASES.indexOf(last) + 1)) await store.recordPhase(turnKey, p, gen);
}

describe.each(providers)('session owner (%s)', (_name, make) => {
  it('a new session is active, managed_runtime, at generations 1/1 and bound to no run', async () => {
    const store = make();
    const s = await store.openSession(GOAL);
    expect(s).toMatchObject({
      ...GOAL,
      session_mode: 'managed_runtime',
      session_generation: 1,
      execution_generation: 1,
      run_id: null,
      status: 'active',
    });
    expect(s.session_id).toMatch(/^ses_[0-9a-f]{24}$/);
    expect(await store.getSession(s.session_id)).toEqual(s);
    expect(await store.getSession('ses_missing')).toBeUndefined();
    store.close();
  });

  it('opening with an existing session id returns it; the same id for another Goal lifetime is refused', async () => {
    const store = make();
    const a = await store.openSession(GOAL, { session_id: 'ses_fixed' });
    expect(await store.openSession(GOAL, { session_id: 'ses_fixed' })).toEqual(a);
    expect(
      await codeOf(() => store.openSession({ goal_id: 'g1', goal_instance_id: 'gi_2' }, { session_id: 'ses_fixed' })),
    ).toBe('session_identity_mismatch');
    expect(await store.listSessions()).toHaveLength(1);
    store.close();
  });

  it('an invalid Goal reference or run id is refused as input', async () => {
    const store = make();
    expect(await codeOf(() => store.openSession({ goal_id: '../etc', goal_instance_id: 'gi' }))).toBe(
      'session_input_invalid',
    );
    expect(await codeOf(() => store.openSession({ goal_id: 'g1', goal_instance_id: '' }))).toBe(
      'session_input_invalid',
    );
    const s = await store.openSession(GOAL);
    expect(await codeOf(() => store.bindRun(s.session_id, 'run with spaces', 1))).toBe('session_input_invalid');
    expect(await codeOf(() => store.bindRun(s.session_id, 'run-1', 0))).toBe('session_input_invalid');
    store.close();
  });

  it('bindRun bumps the execution generation; a stale generation is refused and changes nothing', async () => {
    const store = make();
    const s = await store.openSession(GOAL);
    const b = await store.bindRun(s.session_id, 'run-1', 1);
    expect(b).toMatchObject({ run_id: 'run-1', execution_generation: 2, session_generation: 1 });
    expect(await codeOf(() => store.bindRun(s.session_id, 'run-2', 1))).toBe('session_generation_stale');
    expect(await store.getSession(s.session_id)).toMatchObject({ run_id: 'run-1', execution_generation: 2 });
    expect(await codeOf(() => store.bindRun('ses_missing', 'run-2', 2))).toBe('session_not_found');
    store.close();
  });

  it('the stale-generation refusal carries the expected and current generations', async () => {
    const store = make();
    const s = await store.openSession(GOAL);
    await store.bindRun(s.session_id, 'run-1', 1);
    try {
      await store.bindRun(s.session_id, 'run-2', 1);
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({
        code: 'session_generation_stale',
        kind: 'conflict',
        details: { expected: 1, current: 2 },
      });
      expect((e as { nextAction?: string }).nextAction).toBeTruthy();
    }
    store.close();
  });

  it('retiring fences every executor; a retired session admits no run; retiring again is a readback', async () => {
    const { store, id, gen } = await bound(make);
    const { turn } = await store.beginTurn(id, 0, gen);
    const r = await store.retireSession(id, 1);
    expect(await codeOf(() => store.recordPhase(turn.turn_key, 'host_execute', gen))).toBe('session_retired');
    expect(
      await codeOf(() =>
        store.settleTurn(turn.turn_key, {
          settlement_id: 'st-1',
          status: 'stopped',
          expected_execution_generation: gen,
        }),
      ),
    ).toBe('session_generation_stale');
    expect(
      (
        await store.settleTurn(turn.turn_key, {
          settlement_id: 'st-1',
          status: 'stopped',
          expected_execution_generation: r.execution_generation,
        })
      ).settlement.status,
    ).toBe('stopped');
    expect(r).toMatchObject({ status: 'retired', execution_generation: gen + 1 });
    expect(await codeOf(() => store.bindRun(id, 'run-2', gen))).toBe('session_retired');
    expect(await codeOf(() => store.beginTurn(id, 1, r.execution_generation))).toBe('session_retired');
    expect(await codeOf(() => store.readmitSession(id, 1))).toBe('session_retired');
    expect(await store.retireSession(id, 1)).toEqual(r);
    expect(await codeOf(() => store.retireSession(id, 0))).toBe('session_input_invalid');
    store.close();
  });

  it('readmitting bumps both generations and clears the run; the earlier generations are stale', async () => {
    const { store, id, gen } = await bound(make);
    const r = await store.readmitSession(id, 1);
    expect(r).toMatchObject({ session_generation: 2, execution_generation: gen + 1, run_id: null });
    expect(await codeOf(() => store.readmitSession(id, 1))).toBe('session_generation_stale');
    expect(await codeOf(() => store.bindRun(id, 'run-2', gen))).toBe('session_generation_stale');
    expect(await codeOf(() => store.beginTurn(id, 0, r.execution_generation))).toBe('session_run_unbound');
    store.close();
  });

  it('a turn is keyed by sha256 of the session id and turn index, and records the binding it ran under', async () => {
    const { store, id, gen } = await bound(make);
    const { turn, replayed } = await store.beginTurn(id, 0, gen);
    expect(replayed).toBe(false);
    expect(turn.turn_key).toBe(sha256Hex(canonicalJson({ session_id: id, turn_index: 0 })));
    expect(turn).toMatchObject({
      session_id: id,
      ...GOAL,
      turn_index: 0,
      execution_generation: gen,
      run_id: 'run-1',
      status: 'in_progress',
      phases: [],
    });
    expect(await store.getTurn(turn.turn_key)).toEqual(turn);
    store.close();
  });

  it('beginning the same turn again is a readback; skipping an index or overlapping an in-progress turn is refused', async () => {
    const { store, id, gen } = await bound(make);
    const first = (await store.beginTurn(id, 0, gen)).turn;
    expect(await store.beginTurn(id, 0, gen)).toEqual({ turn: first, replayed: true });
    expect(await codeOf(() => store.beginTurn(id, 2, gen))).toBe('turn_index_out_of_order');
    expect(await codeOf(() => store.beginTurn(id, 1, gen))).toBe('turn_in_progress');
    expect(await store.listTurns(id)).toHaveLength(1);
    store.close();
  });

  it('phases are an ordered prefix: skipping ahead is refused, repeating a recorded phase adds nothing', async () => {
    const { store, id, gen } = await bound(make);
    const { turn } = await store.beginTurn(id, 0, gen);
    expect(await codeOf(() => store.recordPhase(turn.turn_key, 'validation', gen))).toBe('turn_phase_out_of_order');
    await store.recordPhase(turn.turn_key, 'host_execute', gen, 'eff_1#host_execute');
    await store.recordPhase(turn.turn_key, 'typed_result', gen);
    const again = await store.recordPhase(turn.turn_key, 'host_execute', gen);
    expect(again.phases.map((p) => p.phase)).toEqual(['host_execute', 'typed_result']);
    expect(again.phases[0]!.ref).toBe('eff_1#host_execute');
    expect(await codeOf(() => store.recordPhase(turn.turn_key, 'nonsense' as TurnPhase, gen))).toBe(
      'session_input_invalid',
    );
    expect(await codeOf(() => store.recordPhase('0'.repeat(64), 'host_execute', gen))).toBe('turn_not_found');
    store.close();
  });

  it('a stale executor cannot record a phase', async () => {
    const { store, id, gen } = await bound(make);
    const { turn } = await store.beginTurn(id, 0, gen);
    await store.bindRun(id, 'run-2', gen); // a newer executor takes over
    expect(await codeOf(() => store.recordPhase(turn.turn_key, 'host_execute', gen))).toBe('session_generation_stale');
    expect((await store.getTurn(turn.turn_key))!.phases).toEqual([]);
    store.close();
  });

  it('a committed settlement needs durable_writeback; a failed one names the first unrecorded phase', async () => {
    const { store, id, gen } = await bound(make);
    const { turn } = await store.beginTurn(id, 0, gen);
    await recordUpTo(store, turn.turn_key, gen, 'validation');
    const base = { expected_execution_generation: gen };
    expect(
      await codeOf(() => store.settleTurn(turn.turn_key, { ...base, settlement_id: 'st-1', status: 'committed' })),
    ).toBe('settlement_invalid');
    expect(
      await codeOf(() =>
        store.settleTurn(turn.turn_key, {
          ...base,
          settlement_id: 'st-1',
          status: 'failed',
          failed_phase: 'validation',
        }),
      ),
    ).toBe('settlement_invalid');
    expect(
      await codeOf(() =>
        store.settleTurn(turn.turn_key, {
          ...base,
          settlement_id: 'st-1',
          status: 'stopped',
          failed_phase: 'durable_writeback',
        }),
      ),
    ).toBe('settlement_invalid');
    const { settlement } = await store.settleTurn(turn.turn_key, {
      ...base,
      settlement_id: 'st-1',
      status: 'failed',
      failed_phase: 'durable_writeback',
      result_kind: 'writeback_failed',
    });
    expect(settlement).toMatchObject({
      status: 'failed',
      failed_phase: 'durable_writeback',
      result_kind: 'writeback_failed',
      phase_count: 3,
    });
    expect((await store.getTurn(turn.turn_key))!.status).toBe('failed');
    store.close();
  });

  it('a repeated settlement returns the original settlement; a turn is never settled twice', async () => {
    const { store, id, gen } = await bound(make);
    const { turn } = await store.beginTurn(id, 0, gen);
    await recordUpTo(store, turn.turn_key, gen, 'quota_spend');
    const request = {
      settlement_id: 'st-1',
      status: 'committed' as const,
      result_kind: 'validated_progress' as const,
      expected_execution_generation: gen,
    };
    const first = await store.settleTurn(turn.turn_key, request);
    expect(first.replayed).toBe(false);
    expect(first.settlement).toMatchObject({
      turn_key: turn.turn_key,
      session_id: id,
      goal_id: 'g1',
      status: 'committed',
      phase_count: 5,
    });
    const second = await store.settleTurn(turn.turn_key, request);
    expect(second).toEqual({ settlement: first.settlement, replayed: true });
    expect(
      await codeOf(() =>
        store.settleTurn(turn.turn_key, { ...request, settlement_id: 'st-2', status: 'stopped', result_kind: null }),
      ),
    ).toBe('turn_already_settled');
    expect(
      await codeOf(() => store.settleTurn(turn.turn_key, { ...request, result_kind: 'validated_completion' })),
    ).toBe('settlement_identity_mismatch');
    expect(await codeOf(() => store.recordPhase(turn.turn_key, 'scheduler_apply', gen))).toBe('turn_not_in_progress');
    expect(await store.getSettlement(turn.turn_key)).toEqual(first.settlement);
    store.close();
  });

  it('a settlement id used for one turn is refused for another', async () => {
    const { store, id, gen } = await bound(make);
    const t0 = (await store.beginTurn(id, 0, gen)).turn;
    await store.settleTurn(t0.turn_key, {
      settlement_id: 'st-1',
      status: 'stopped',
      expected_execution_generation: gen,
    });
    const t1 = (await store.beginTurn(id, 1, gen)).turn;
    expect(
      await codeOf(() =>
        store.settleTurn(t1.turn_key, { settlement_id: 'st-1', status: 'stopped', expected_execution_generation: gen }),
      ),
    ).toBe('settlement_identity_mismatch');
    expect((await store.listTurns(id)).map((t) => t.turn_index)).toEqual([0, 1]);
    store.close();
  });

  it('a fenced executor cannot settle; the current owner closes its turn as stopped but never as committed', async () => {
    const { store, id, gen } = await bound(make);
    const { turn } = await store.beginTurn(id, 0, gen);
    await recordUpTo(store, turn.turn_key, gen, 'durable_writeback');
    const next = (await store.bindRun(id, 'run-2', gen)).execution_generation;
    expect(
      await codeOf(() =>
        store.settleTurn(turn.turn_key, {
          settlement_id: 'st-old',
          status: 'committed',
          expected_execution_generation: gen,
        }),
      ),
    ).toBe('session_generation_stale');
    expect(
      await codeOf(() =>
        store.settleTurn(turn.turn_key, {
          settlement_id: 'st-new',
          status: 'committed',
          expected_execution_generation: next,
        }),
      ),
    ).toBe('turn_identity_mismatch');
    const closed = await store.settleTurn(turn.turn_key, {
      settlement_id: 'st-new',
      status: 'stopped',
      expected_execution_generation: next,
    });
    expect(closed.settlement.status).toBe('stopped');
    // The replay is a readback even though the generation has moved on since.
    await store.bindRun(id, 'run-3', next);
    expect(
      (
        await store.settleTurn(turn.turn_key, {
          settlement_id: 'st-new',
          status: 'stopped',
          expected_execution_generation: next,
        })
      ).replayed,
    ).toBe(true);
    store.close();
  });

  it('sessions list in creation order and by Goal', async () => {
    const store = make();
    const a = await store.openSession(GOAL);
    const b = await store.openSession({ goal_id: 'g2', goal_instance_id: 'gi_9' });
    const c = await store.openSession(GOAL);
    expect((await store.listSessions()).map((s) => s.session_id)).toEqual([a.session_id, b.session_id, c.session_id]);
    expect((await store.listSessions('g1')).map((s) => s.session_id)).toEqual([a.session_id, c.session_id]);
    expect(await store.listSessions('g3')).toEqual([]);
    store.close();
  });
});

describe('session owner (sqlite only)', () => {
  it('sessions.db is owner-only', () => {
    const path = join(tempDir(), 'sessions.db');
    openSqliteSessionStore(path).close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('a settlement repeated after a restart returns the original and does not settle twice', async () => {
    const path = join(tempDir(), 'sessions.db');
    const a = openSqliteSessionStore(path);
    const s = await a.openSession(GOAL);
    const gen = (await a.bindRun(s.session_id, 'run-1', 1)).execution_generation;
    const { turn } = await a.beginTurn(s.session_id, 0, gen);
    await recordUpTo(a, turn.turn_key, gen, 'durable_writeback');
    const request = { settlement_id: 'st-1', status: 'committed' as const, expected_execution_generation: gen };
    const first = (await a.settleTurn(turn.turn_key, request)).settlement;
    a.close();
    const b = openSqliteSessionStore(path);
    expect(await b.settleTurn(turn.turn_key, request)).toEqual({ settlement: first, replayed: true });
    expect((await b.getTurn(turn.turn_key))!.phases.map((p) => p.phase)).toEqual(TURN_PHASES.slice(0, 4));
    b.close();
  });

  it('two stores on one file fence each other by generation', async () => {
    const path = join(tempDir(), 'sessions.db');
    const a = openSqliteSessionStore(path);
    const b = openSqliteSessionStore(path);
    const s = await a.openSession(GOAL);
    const seenByA = (await a.getSession(s.session_id))!.execution_generation;
    await b.bindRun(s.session_id, 'run-b', seenByA);
    expect(await codeOf(() => a.bindRun(s.session_id, 'run-a', seenByA))).toBe('session_generation_stale');
    expect((await a.getSession(s.session_id))!.run_id).toBe('run-b');
    a.close();
    b.close();
  });
});
