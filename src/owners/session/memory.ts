/**
 * In-memory reference session port: the port contract without a disk, for engine and owner
 * tests. Its rows live in a plain `MemorySessionState`, so a test can "restart" by opening a new
 * port on the same state. It checks each write's precondition and stores copies; it decides
 * nothing about sessions (session.ts does).
 */
import { MEMORY_PROVIDER } from '../../store/index.js';
import { APPLIED, conflictOf, providerClosed, type CommitResult } from '../port.js';
import type { Session, TurnJournal, TurnSettlement } from './contract.js';
import type { SessionPort, SessionQuery, SessionRows, SessionWrite } from './port.js';

export interface MemorySessionState {
  /** In creation order. */
  readonly sessions: Map<string, Session>;
  readonly turns: Map<string, TurnJournal>;
  /** By turn key. */
  readonly settlements: Map<string, TurnSettlement>;
  /** Settlement id → turn key. */
  readonly settlementIds: Map<string, string>;
}

export const createMemorySessionState = (): MemorySessionState => ({
  sessions: new Map(),
  turns: new Map(),
  settlements: new Map(),
  settlementIds: new Map(),
});

export interface MemorySessionPortOptions {
  /** Open on an existing state (a restart); a fresh state otherwise. */
  readonly state?: MemorySessionState;
}

const clone = <T>(v: T): T => structuredClone(v);

const turnsOf = (state: MemorySessionState, sessionId: string): TurnJournal[] =>
  [...state.turns.values()].filter((t) => t.session_id === sessionId).sort((a, b) => a.turn_index - b.turn_index);

/** The session a write acts under, checked against the generation the decision saw. */
function fenced(state: MemorySessionState, sessionId: string, expected: number): CommitResult | undefined {
  const s = state.sessions.get(sessionId);
  if (s === undefined) return conflictOf('missing');
  return s.execution_generation === expected ? undefined : conflictOf('changed');
}

/** One write, applied only when its precondition holds. */
function apply(state: MemorySessionState, w: SessionWrite): CommitResult {
  switch (w.op) {
    case 'create_session':
      if (state.sessions.has(w.session.session_id)) return conflictOf('exists');
      state.sessions.set(w.session.session_id, clone(w.session));
      return APPLIED;
    case 'update_session': {
      const refused = fenced(state, w.session.session_id, w.expected_execution_generation);
      if (refused) return refused;
      state.sessions.set(w.session.session_id, clone(w.session));
      return APPLIED;
    }
    case 'begin_turn': {
      const refused = fenced(state, w.turn.session_id, w.expected_execution_generation);
      if (refused) return refused;
      if (
        state.turns.has(w.turn.turn_key) ||
        turnsOf(state, w.turn.session_id).some((t) => t.turn_index === w.turn.turn_index)
      )
        return conflictOf('exists');
      state.turns.set(w.turn.turn_key, clone(w.turn));
      return APPLIED;
    }
    case 'append_phase': {
      const t = state.turns.get(w.turn_key);
      if (t === undefined) return conflictOf('missing');
      if (t.status !== 'in_progress' || t.phases.length !== w.position) return conflictOf('changed');
      const refused = fenced(state, t.session_id, w.expected_execution_generation);
      if (refused) return refused;
      state.turns.set(t.turn_key, { ...t, phases: [...t.phases, clone(w.phase)], updated_at: w.phase.at });
      return APPLIED;
    }
    case 'settle_turn': {
      const s = w.settlement;
      if (state.settlements.has(s.turn_key) || state.settlementIds.has(s.settlement_id)) return conflictOf('exists');
      const t = state.turns.get(s.turn_key);
      if (t === undefined) return conflictOf('missing');
      if (t.status !== 'in_progress' || t.phases.length !== w.phase_count) return conflictOf('changed');
      const refused = fenced(state, t.session_id, w.expected_execution_generation);
      if (refused) return refused;
      state.settlements.set(s.turn_key, clone(s));
      state.settlementIds.set(s.settlement_id, s.turn_key);
      state.turns.set(t.turn_key, { ...t, status: s.status, updated_at: s.settled_at });
      return APPLIED;
    }
  }
}

/** The rows a decision reads (copies). */
function readRows(state: MemorySessionState, q: SessionQuery): SessionRows {
  const turn = q.turn_key === undefined ? undefined : state.turns.get(q.turn_key);
  const session =
    q.session_id !== undefined
      ? state.sessions.get(q.session_id)
      : turn === undefined
        ? undefined
        : state.sessions.get(turn.session_id);
  const last = session === undefined ? undefined : turnsOf(state, session.session_id).at(-1);
  const settlement = q.turn_key === undefined ? undefined : state.settlements.get(q.turn_key);
  const byIdKey = q.settlement_id === undefined ? undefined : state.settlementIds.get(q.settlement_id);
  const byId = byIdKey === undefined ? undefined : state.settlements.get(byIdKey);
  const rows: SessionRows = {
    ...(session ? { session } : {}),
    ...(turn ? { turn } : {}),
    ...(last ? { last_turn: last } : {}),
    ...(settlement ? { settlement } : {}),
    ...(byId ? { settlement_by_id: byId } : {}),
  };
  return clone(rows);
}

export function memorySessionPort(options: MemorySessionPortOptions = {}): SessionPort {
  const state = options.state ?? createMemorySessionState();
  let closed = false;
  const open = (): void => {
    if (closed) throw providerClosed('session');
  };

  const port = {
    provider: MEMORY_PROVIDER,
    async read(q) {
      open();
      return readRows(state, q);
    },
    async listSessions(goalId) {
      open();
      return clone([...state.sessions.values()].filter((s) => goalId === undefined || s.goal_id === goalId));
    },
    async listTurns(sessionId) {
      open();
      return clone(turnsOf(state, sessionId));
    },
    async commit(write) {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      return apply(state, write);
    },
    close() {
      closed = true;
    },
  } satisfies SessionPort;
  return port;
}
