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

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
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
function bound(make: () => SessionStore) {
  const store = make();
  const s = store.openSession(GOAL);
  const b = store.bindRun(s.session_id, 'run-1', s.execution_generation);
  return { store, id: s.session_id, gen: b.execution_generation };
}

function recordUpTo(store: SessionStore, turnKey: string, gen: number, last: TurnPhase): void {
  for (const p of TURN_PHASES.slice(0, TURN_PHASES.indexOf(last) + 1)) store.recordPhase(turnKey, p, gen);
}

describe.each(providers)('session owner (%s)', (_name, make) => {
  it('a new session is active, managed_runtime, at generations 1/1 and bound to no run', () => {
    const store = make();
    const s = store.openSession(GOAL);
    expect(s).toMatchObject({ ...GOAL, session_mode: 'managed_runtime', session_generation: 1, execution_generation: 1, run_id: null, status: 'active' });
    expect(s.session_id).toMatch(/^ses_[0-9a-f]{24}$/);
    expect(store.getSession(s.session_id)).toEqual(s);
    expect(store.getSession('ses_missing')).toBeUndefined();
    store.close();
  });

  it('opening with an existing session id returns it; the same id for another Goal lifetime is refused', () => {
    const store = make();
    const a = store.openSession(GOAL, { session_id: 'ses_fixed' });
    expect(store.openSession(GOAL, { session_id: 'ses_fixed' })).toEqual(a);
    expect(codeOf(() => store.openSession({ goal_id: 'g1', goal_instance_id: 'gi_2' }, { session_id: 'ses_fixed' }))).toBe('session_identity_mismatch');
    expect(store.listSessions()).toHaveLength(1);
    store.close();
  });

  it('an invalid Goal reference or run id is refused as input', () => {
    const store = make();
    expect(codeOf(() => store.openSession({ goal_id: '../etc', goal_instance_id: 'gi' }))).toBe('session_input_invalid');
    expect(codeOf(() => store.openSession({ goal_id: 'g1', goal_instance_id: '' }))).toBe('session_input_invalid');
    const s = store.openSession(GOAL);
    expect(codeOf(() => store.bindRun(s.session_id, 'run with spaces', 1))).toBe('session_input_invalid');
    expect(codeOf(() => store.bindRun(s.session_id, 'run-1', 0))).toBe('session_input_invalid');
    store.close();
  });

  it('bindRun bumps the execution generation; a stale generation is refused and changes nothing', () => {
    const store = make();
    const s = store.openSession(GOAL);
    const b = store.bindRun(s.session_id, 'run-1', 1);
    expect(b).toMatchObject({ run_id: 'run-1', execution_generation: 2, session_generation: 1 });
    expect(codeOf(() => store.bindRun(s.session_id, 'run-2', 1))).toBe('session_generation_stale');
    expect(store.getSession(s.session_id)).toMatchObject({ run_id: 'run-1', execution_generation: 2 });
    expect(codeOf(() => store.bindRun('ses_missing', 'run-2', 2))).toBe('session_not_found');
    store.close();
  });

  it('the stale-generation refusal carries the expected and current generations', () => {
    const store = make();
    const s = store.openSession(GOAL);
    store.bindRun(s.session_id, 'run-1', 1);
    try {
      store.bindRun(s.session_id, 'run-2', 1);
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({ code: 'session_generation_stale', kind: 'conflict', details: { expected: 1, current: 2 } });
      expect((e as { nextAction?: string }).nextAction).toBeTruthy();
    }
    store.close();
  });

  it('retiring fences every executor; a retired session admits no run; retiring again is a readback', () => {
    const { store, id, gen } = bound(make);
    const { turn } = store.beginTurn(id, 0, gen);
    const r = store.retireSession(id, 1);
    expect(codeOf(() => store.recordPhase(turn.turn_key, 'host_execute', gen))).toBe('session_retired');
    expect(codeOf(() => store.settleTurn(turn.turn_key, { settlement_id: 'st-1', status: 'stopped', expected_execution_generation: gen }))).toBe('session_generation_stale');
    expect(store.settleTurn(turn.turn_key, { settlement_id: 'st-1', status: 'stopped', expected_execution_generation: r.execution_generation }).settlement.status).toBe('stopped');
    expect(r).toMatchObject({ status: 'retired', execution_generation: gen + 1 });
    expect(codeOf(() => store.bindRun(id, 'run-2', gen))).toBe('session_retired');
    expect(codeOf(() => store.beginTurn(id, 1, r.execution_generation))).toBe('session_retired');
    expect(codeOf(() => store.readmitSession(id, 1))).toBe('session_retired');
    expect(store.retireSession(id, 1)).toEqual(r);
    expect(codeOf(() => store.retireSession(id, 0))).toBe('session_input_invalid');
    store.close();
  });

  it('readmitting bumps both generations and clears the run; the earlier generations are stale', () => {
    const { store, id, gen } = bound(make);
    const r = store.readmitSession(id, 1);
    expect(r).toMatchObject({ session_generation: 2, execution_generation: gen + 1, run_id: null });
    expect(codeOf(() => store.readmitSession(id, 1))).toBe('session_generation_stale');
    expect(codeOf(() => store.bindRun(id, 'run-2', gen))).toBe('session_generation_stale');
    expect(codeOf(() => store.beginTurn(id, 0, r.execution_generation))).toBe('session_run_unbound');
    store.close();
  });

  it('a turn is keyed by sha256 of the session id and turn index, and records the binding it ran under', () => {
    const { store, id, gen } = bound(make);
    const { turn, replayed } = store.beginTurn(id, 0, gen);
    expect(replayed).toBe(false);
    expect(turn.turn_key).toBe(sha256Hex(canonicalJson({ session_id: id, turn_index: 0 })));
    expect(turn).toMatchObject({ session_id: id, ...GOAL, turn_index: 0, execution_generation: gen, run_id: 'run-1', status: 'in_progress', phases: [] });
    expect(store.getTurn(turn.turn_key)).toEqual(turn);
    store.close();
  });

  it('beginning the same turn again is a readback; skipping an index or overlapping an in-progress turn is refused', () => {
    const { store, id, gen } = bound(make);
    const first = store.beginTurn(id, 0, gen).turn;
    expect(store.beginTurn(id, 0, gen)).toEqual({ turn: first, replayed: true });
    expect(codeOf(() => store.beginTurn(id, 2, gen))).toBe('turn_index_out_of_order');
    expect(codeOf(() => store.beginTurn(id, 1, gen))).toBe('turn_in_progress');
    expect(store.listTurns(id)).toHaveLength(1);
    store.close();
  });

  it('phases are an ordered prefix: skipping ahead is refused, repeating a recorded phase adds nothing', () => {
    const { store, id, gen } = bound(make);
    const { turn } = store.beginTurn(id, 0, gen);
    expect(codeOf(() => store.recordPhase(turn.turn_key, 'validation', gen))).toBe('turn_phase_out_of_order');
    store.recordPhase(turn.turn_key, 'host_execute', gen, 'eff_1#host_execute');
    store.recordPhase(turn.turn_key, 'typed_result', gen);
    const again = store.recordPhase(turn.turn_key, 'host_execute', gen);
    expect(again.phases.map((p) => p.phase)).toEqual(['host_execute', 'typed_result']);
    expect(again.phases[0]!.ref).toBe('eff_1#host_execute');
    expect(codeOf(() => store.recordPhase(turn.turn_key, 'nonsense' as TurnPhase, gen))).toBe('session_input_invalid');
    expect(codeOf(() => store.recordPhase('0'.repeat(64), 'host_execute', gen))).toBe('turn_not_found');
    store.close();
  });

  it('a stale executor cannot record a phase', () => {
    const { store, id, gen } = bound(make);
    const { turn } = store.beginTurn(id, 0, gen);
    store.bindRun(id, 'run-2', gen); // a newer executor takes over
    expect(codeOf(() => store.recordPhase(turn.turn_key, 'host_execute', gen))).toBe('session_generation_stale');
    expect(store.getTurn(turn.turn_key)!.phases).toEqual([]);
    store.close();
  });

  it('a committed settlement needs durable_writeback; a failed one names the first unrecorded phase', () => {
    const { store, id, gen } = bound(make);
    const { turn } = store.beginTurn(id, 0, gen);
    recordUpTo(store, turn.turn_key, gen, 'validation');
    const base = { expected_execution_generation: gen };
    expect(codeOf(() => store.settleTurn(turn.turn_key, { ...base, settlement_id: 'st-1', status: 'committed' }))).toBe('settlement_invalid');
    expect(codeOf(() => store.settleTurn(turn.turn_key, { ...base, settlement_id: 'st-1', status: 'failed', failed_phase: 'validation' }))).toBe('settlement_invalid');
    expect(codeOf(() => store.settleTurn(turn.turn_key, { ...base, settlement_id: 'st-1', status: 'stopped', failed_phase: 'durable_writeback' }))).toBe('settlement_invalid');
    const { settlement } = store.settleTurn(turn.turn_key, { ...base, settlement_id: 'st-1', status: 'failed', failed_phase: 'durable_writeback', result_kind: 'writeback_failed' });
    expect(settlement).toMatchObject({ status: 'failed', failed_phase: 'durable_writeback', result_kind: 'writeback_failed', phase_count: 3 });
    expect(store.getTurn(turn.turn_key)!.status).toBe('failed');
    store.close();
  });

  it('a repeated settlement returns the original settlement; a turn is never settled twice', () => {
    const { store, id, gen } = bound(make);
    const { turn } = store.beginTurn(id, 0, gen);
    recordUpTo(store, turn.turn_key, gen, 'quota_spend');
    const request = { settlement_id: 'st-1', status: 'committed' as const, result_kind: 'validated_progress' as const, expected_execution_generation: gen };
    const first = store.settleTurn(turn.turn_key, request);
    expect(first.replayed).toBe(false);
    expect(first.settlement).toMatchObject({ turn_key: turn.turn_key, session_id: id, goal_id: 'g1', status: 'committed', phase_count: 5 });
    const second = store.settleTurn(turn.turn_key, request);
    expect(second).toEqual({ settlement: first.settlement, replayed: true });
    expect(codeOf(() => store.settleTurn(turn.turn_key, { ...request, settlement_id: 'st-2', status: 'stopped', result_kind: null }))).toBe('turn_already_settled');
    expect(codeOf(() => store.settleTurn(turn.turn_key, { ...request, result_kind: 'validated_completion' }))).toBe('settlement_identity_mismatch');
    expect(codeOf(() => store.recordPhase(turn.turn_key, 'scheduler_apply', gen))).toBe('turn_not_in_progress');
    expect(store.getSettlement(turn.turn_key)).toEqual(first.settlement);
    store.close();
  });

  it('a settlement id used for one turn is refused for another', () => {
    const { store, id, gen } = bound(make);
    const t0 = store.beginTurn(id, 0, gen).turn;
    store.settleTurn(t0.turn_key, { settlement_id: 'st-1', status: 'stopped', expected_execution_generation: gen });
    const t1 = store.beginTurn(id, 1, gen).turn;
    expect(codeOf(() => store.settleTurn(t1.turn_key, { settlement_id: 'st-1', status: 'stopped', expected_execution_generation: gen }))).toBe('settlement_identity_mismatch');
    expect(store.listTurns(id).map((t) => t.turn_index)).toEqual([0, 1]);
    store.close();
  });

  it('a fenced executor cannot settle; the current owner closes its turn as stopped but never as committed', () => {
    const { store, id, gen } = bound(make);
    const { turn } = store.beginTurn(id, 0, gen);
    recordUpTo(store, turn.turn_key, gen, 'durable_writeback');
    const next = store.bindRun(id, 'run-2', gen).execution_generation;
    expect(codeOf(() => store.settleTurn(turn.turn_key, { settlement_id: 'st-old', status: 'committed', expected_execution_generation: gen }))).toBe('session_generation_stale');
    expect(codeOf(() => store.settleTurn(turn.turn_key, { settlement_id: 'st-new', status: 'committed', expected_execution_generation: next }))).toBe('turn_identity_mismatch');
    const closed = store.settleTurn(turn.turn_key, { settlement_id: 'st-new', status: 'stopped', expected_execution_generation: next });
    expect(closed.settlement.status).toBe('stopped');
    // The replay is a readback even though the generation has moved on since.
    store.bindRun(id, 'run-3', next);
    expect(store.settleTurn(turn.turn_key, { settlement_id: 'st-new', status: 'stopped', expected_execution_generation: next }).replayed).toBe(true);
    store.close();
  });

  it('sessions list in creation order and by Goal', () => {
    const store = make();
    const a = store.openSession(GOAL);
    const b = store.openSession({ goal_id: 'g2', goal_instance_id: 'gi_9' });
    const c = store.openSession(GOAL);
    expect(store.listSessions().map((s) => s.session_id)).toEqual([a.session_id, b.session_id, c.session_id]);
    expect(store.listSessions('g1').map((s) => s.session_id)).toEqual([a.session_id, c.session_id]);
    expect(store.listSessions('g3')).toEqual([]);
    store.close();
  });
});

describe('session owner (sqlite only)', () => {
  it('sessions.db is owner-only', () => {
    const path = join(tempDir(), 'sessions.db');
    openSqliteSessionStore(path).close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('a settlement repeated after a restart returns the original and does not settle twice', () => {
    const path = join(tempDir(), 'sessions.db');
    const a = openSqliteSessionStore(path);
    const s = a.openSession(GOAL);
    const gen = a.bindRun(s.session_id, 'run-1', 1).execution_generation;
    const { turn } = a.beginTurn(s.session_id, 0, gen);
    recordUpTo(a, turn.turn_key, gen, 'durable_writeback');
    const request = { settlement_id: 'st-1', status: 'committed' as const, expected_execution_generation: gen };
    const first = a.settleTurn(turn.turn_key, request).settlement;
    a.close();
    const b = openSqliteSessionStore(path);
    expect(b.settleTurn(turn.turn_key, request)).toEqual({ settlement: first, replayed: true });
    expect(b.getTurn(turn.turn_key)!.phases.map((p) => p.phase)).toEqual(TURN_PHASES.slice(0, 4));
    b.close();
  });

  it('two stores on one file fence each other by generation', () => {
    const path = join(tempDir(), 'sessions.db');
    const a = openSqliteSessionStore(path);
    const b = openSqliteSessionStore(path);
    const s = a.openSession(GOAL);
    const seenByA = a.getSession(s.session_id)!.execution_generation;
    b.bindRun(s.session_id, 'run-b', seenByA);
    expect(codeOf(() => a.bindRun(s.session_id, 'run-a', seenByA))).toBe('session_generation_stale');
    expect(a.getSession(s.session_id)!.run_id).toBe('run-b');
    a.close();
    b.close();
  });
});
