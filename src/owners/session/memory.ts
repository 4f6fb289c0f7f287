/** In-memory reference session store: the contract without a disk, for engine and owner tests. */
import { randomBytes } from 'node:crypto';
import type { Session, SessionStore, SessionStoreOptions, TurnJournal, TurnSettlement } from './contract.js';
import { SESSION_MODE } from './contract.js';
import { sessionIdentityMismatch, sessionNotFound, turnNotFound } from './errors.js';
import {
  assertActive,
  assertExecutionGeneration,
  assertSessionGeneration,
  checkGeneration,
  checkGoalRef,
  checkId,
  checkPhase,
  checkRef,
  checkTurnIndex,
  decideBeginTurn,
  decideRecordPhase,
  decideSettle,
  normalizeSettle,
  turnKeyOf,
} from './rules.js';

export function memorySessionStore(options: SessionStoreOptions = {}): SessionStore {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const sessions = new Map<string, Session>();
  const turns = new Map<string, TurnJournal>();
  const settlements = new Map<string, TurnSettlement>(); // by turn_key
  const settlementsById = new Map<string, TurnSettlement>();
  const clone = <T>(v: T): T => structuredClone(v);

  const session = (id: string): Session => {
    const s = sessions.get(checkId(id, 'session_id'));
    if (s === undefined) throw sessionNotFound(id);
    return s;
  };
  const turn = (key: string): TurnJournal => {
    const t = typeof key === 'string' ? turns.get(key) : undefined;
    if (t === undefined) throw turnNotFound(String(key));
    return t;
  };
  const turnsOf = (sessionId: string) => [...turns.values()].filter((t) => t.session_id === sessionId).sort((a, b) => a.turn_index - b.turn_index);
  const update = (s: Session, patch: Partial<Session>): Session => {
    const next = { ...s, ...patch, updated_at: now() };
    sessions.set(s.session_id, next);
    return clone(next);
  };

  const store = {
    openSession(goal, opts = {}) {
      const ref = checkGoalRef(goal);
      const id = opts.session_id === undefined ? `ses_${randomBytes(12).toString('hex')}` : checkId(opts.session_id, 'session_id');
      const existing = sessions.get(id);
      if (existing !== undefined) {
        if (existing.goal_id !== ref.goal_id || existing.goal_instance_id !== ref.goal_instance_id) throw sessionIdentityMismatch(id);
        return clone(existing);
      }
      const at = now();
      const s: Session = { session_id: id, ...ref, session_mode: SESSION_MODE, session_generation: 1, execution_generation: 1, run_id: null, status: 'active', created_at: at, updated_at: at };
      sessions.set(id, s);
      return clone(s);
    },
    getSession: (id) => (sessions.has(id) ? clone(sessions.get(id)) : undefined),
    listSessions: (goalId) => [...sessions.values()].filter((s) => goalId === undefined || s.goal_id === goalId).map(clone),
    bindRun(sessionId, runId, expected) {
      const s = session(sessionId);
      const run = checkId(runId, 'run_id');
      checkGeneration(expected, 'expected_execution_generation');
      assertActive(s);
      assertExecutionGeneration(s, expected);
      return update(s, { run_id: run, execution_generation: s.execution_generation + 1 });
    },
    retireSession(sessionId, expected) {
      const s = session(sessionId);
      checkGeneration(expected, 'expected_session_generation');
      assertSessionGeneration(s, expected);
      if (s.status === 'retired') return clone(s);
      return update(s, { status: 'retired', execution_generation: s.execution_generation + 1 });
    },
    readmitSession(sessionId, expected) {
      const s = session(sessionId);
      checkGeneration(expected, 'expected_session_generation');
      assertActive(s);
      assertSessionGeneration(s, expected);
      return update(s, { session_generation: s.session_generation + 1, execution_generation: s.execution_generation + 1, run_id: null });
    },

    beginTurn(sessionId, turnIndex, expected) {
      const s = session(sessionId);
      const index = checkTurnIndex(turnIndex);
      checkGeneration(expected, 'expected_execution_generation');
      const key = turnKeyOf(s.session_id, index);
      const list = turnsOf(s.session_id);
      const decision = decideBeginTurn(s, index, expected, turns.get(key), list[list.length - 1]);
      if (decision === 'readback') return { turn: clone(turns.get(key)!), replayed: true };
      const at = now();
      const t: TurnJournal = {
        turn_key: key,
        session_id: s.session_id,
        goal_id: s.goal_id,
        goal_instance_id: s.goal_instance_id,
        turn_index: index,
        execution_generation: expected,
        run_id: s.run_id!,
        status: 'in_progress',
        phases: [],
        created_at: at,
        updated_at: at,
      };
      turns.set(key, t);
      return { turn: clone(t), replayed: false };
    },
    recordPhase(turnKey, phase, expected, ref) {
      const t = turn(turnKey);
      const p = checkPhase(phase);
      const r = checkRef(ref);
      checkGeneration(expected, 'expected_execution_generation');
      if (decideRecordPhase(session(t.session_id), t, p, expected) === 'readback') return clone(t);
      const at = now();
      const next: TurnJournal = { ...t, phases: [...t.phases, { phase: p, at, ref: r }], updated_at: at };
      turns.set(t.turn_key, next);
      return clone(next);
    },
    settleTurn(turnKey, request) {
      const t = turn(turnKey);
      const r = normalizeSettle(request);
      const d = decideSettle(session(t.session_id), t, r, settlements.get(t.turn_key), settlementsById.get(r.settlement_id), now());
      if ('replay' in d) return { settlement: clone(d.replay), replayed: true };
      settlements.set(t.turn_key, d.settle);
      settlementsById.set(d.settle.settlement_id, d.settle);
      turns.set(t.turn_key, { ...t, status: d.settle.status, updated_at: d.settle.settled_at });
      return { settlement: clone(d.settle), replayed: false };
    },
    getTurn: (key) => (turns.has(key) ? clone(turns.get(key)) : undefined),
    listTurns: (sessionId) => turnsOf(sessionId).map(clone),
    getSettlement: (key) => (settlements.has(key) ? clone(settlements.get(key)) : undefined),
    close() {},
  } satisfies SessionStore;
  return store;
}
