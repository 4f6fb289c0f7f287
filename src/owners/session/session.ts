/**
 * The session owner: the one place that decides sessions, generations, Turn journals and
 * settlements, over any `SessionPort` (port.ts). Every write validates its request, reads the rows
 * it decides on, asks the rules (rules.ts) and commits the finished rows conditionally
 * (port.ts: decideAndCommit) — a conflict re-reads and re-decides, so a racing duplicate becomes
 * the rules' readback and a fenced executor its typed refusal. Timestamps come from the injected
 * clock and are recorded facts only. Never touches another owner's store.
 */
import { randomBytes } from 'node:crypto';
import { decideAndCommit, shows, type Decided } from '../port.js';
import type {
  BeginTurnResult,
  GoalRef,
  OpenSessionOptions,
  Session,
  SessionStore,
  SessionStoreOptions,
  SettleTurnRequest,
  SettleTurnResult,
  TurnJournal,
  TurnPhase,
} from './contract.js';
import { SESSION_MODE } from './contract.js';
import { sessionIdentityMismatch, sessionNotFound, turnNotFound } from './errors.js';
import { memorySessionPort } from './memory.js';
import type { SessionPort, SessionRows, SessionWrite } from './port.js';
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
import { openSqliteSessionPort, type SqliteSessionPortOptions } from './sqlite.js';

/** What every decision of the owner uses: its port, its clock and the decide-and-commit loop. */
interface SessionContext {
  readonly port: SessionPort;
  readonly now: () => string;
  readonly run: <T>(decide: () => Promise<Decided<T, SessionWrite>>) => Promise<T>;
}

const sessionOf = (rows: SessionRows, id: string): Session => {
  if (rows.session === undefined) throw sessionNotFound(id);
  return rows.session;
};
const turnOf = (rows: SessionRows, key: string): TurnJournal => {
  if (rows.turn === undefined) throw turnNotFound(String(key));
  return rows.turn;
};

/** A session change: the write, its answer and its readback. */
function updated(c: SessionContext, s: Session, patch: Partial<Session>): Decided<Session, SessionWrite> {
  const next: Session = { ...s, ...patch, updated_at: c.now() };
  return {
    result: next,
    write: { op: 'update_session', expected_execution_generation: s.execution_generation, session: next },
    landed: async () => shows((await c.port.read({ session_id: s.session_id })).session, next),
  };
}

async function openSession(c: SessionContext, goal: GoalRef, opts: OpenSessionOptions): Promise<Session> {
  const ref = checkGoalRef(goal);
  // Minted once, before any attempt: a retried or racing attempt finds the session it created.
  const id =
    opts.session_id === undefined ? `ses_${randomBytes(12).toString('hex')}` : checkId(opts.session_id, 'session_id');
  return c.run(async () => {
    const { session: existing } = await c.port.read({ session_id: id });
    if (existing !== undefined) {
      if (existing.goal_id !== ref.goal_id || existing.goal_instance_id !== ref.goal_instance_id)
        throw sessionIdentityMismatch(id);
      return { result: existing };
    }
    const at = c.now();
    const s: Session = {
      session_id: id,
      ...ref,
      session_mode: SESSION_MODE,
      session_generation: 1,
      execution_generation: 1,
      run_id: null,
      status: 'active',
      created_at: at,
      updated_at: at,
    };
    return {
      result: s,
      write: { op: 'create_session', session: s },
      landed: async () => shows((await c.port.read({ session_id: id })).session, s),
    };
  });
}

async function beginTurn(
  c: SessionContext,
  sessionId: string,
  turnIndex: number,
  expected: number,
): Promise<BeginTurnResult> {
  checkId(sessionId, 'session_id');
  const index = checkTurnIndex(turnIndex);
  checkGeneration(expected, 'expected_execution_generation');
  const key = turnKeyOf(sessionId, index);
  return c.run<BeginTurnResult>(async () => {
    const rows = await c.port.read({ session_id: sessionId, turn_key: key });
    const s = sessionOf(rows, sessionId);
    if (decideBeginTurn(s, index, expected, rows.turn, rows.last_turn) === 'readback')
      return { result: { turn: rows.turn!, replayed: true } };
    const at = c.now();
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
    return {
      result: { turn: t, replayed: false },
      write: { op: 'begin_turn', expected_execution_generation: expected, turn: t },
      landed: async () => shows((await c.port.read({ turn_key: key })).turn, t),
    };
  });
}

async function recordPhase(
  c: SessionContext,
  turnKey: string,
  phase: TurnPhase,
  expected: number,
  ref: string | null | undefined,
): Promise<TurnJournal> {
  if (typeof turnKey !== 'string') throw turnNotFound(String(turnKey));
  const p = checkPhase(phase);
  const r = checkRef(ref);
  checkGeneration(expected, 'expected_execution_generation');
  return c.run(async () => {
    const rows = await c.port.read({ turn_key: turnKey });
    const t = turnOf(rows, turnKey);
    if (decideRecordPhase(sessionOf(rows, t.session_id), t, p, expected) === 'readback') return { result: t };
    const record = { phase: p, at: c.now(), ref: r };
    const next: TurnJournal = { ...t, phases: [...t.phases, record], updated_at: record.at };
    return {
      result: next,
      write: {
        op: 'append_phase',
        expected_execution_generation: expected,
        turn_key: t.turn_key,
        position: t.phases.length,
        phase: record,
      },
      landed: async () => shows((await c.port.read({ turn_key: t.turn_key })).turn, next),
    };
  });
}

async function settleTurn(c: SessionContext, turnKey: string, request: SettleTurnRequest): Promise<SettleTurnResult> {
  if (typeof turnKey !== 'string') throw turnNotFound(String(turnKey));
  const r = normalizeSettle(request);
  return c.run<SettleTurnResult>(async () => {
    const rows = await c.port.read({ turn_key: turnKey, settlement_id: r.settlement_id });
    const t = turnOf(rows, turnKey);
    const d = decideSettle(sessionOf(rows, t.session_id), t, r, rows.settlement, rows.settlement_by_id, c.now());
    if ('replay' in d) return { result: { settlement: d.replay, replayed: true } };
    return {
      result: { settlement: d.settle, replayed: false },
      write: {
        op: 'settle_turn',
        expected_execution_generation: r.expected_execution_generation,
        phase_count: t.phases.length,
        settlement: d.settle,
      },
      landed: async () =>
        shows((await c.port.read({ settlement_id: d.settle.settlement_id })).settlement_by_id, d.settle),
    };
  });
}

export function sessionStore(port: SessionPort, options: SessionStoreOptions = {}): SessionStore {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const run = <T>(decide: () => Promise<Decided<T, SessionWrite>>): Promise<T> =>
    decideAndCommit('session', (w: SessionWrite) => port.commit(w), decide);
  const c: SessionContext = { port, now, run };
  const readSession = async (id: string): Promise<Session> => sessionOf(await port.read({ session_id: id }), id);

  const store = {
    openSession: (goal, opts = {}) => openSession(c, goal, opts),
    getSession: async (id) => (typeof id === 'string' ? (await port.read({ session_id: id })).session : undefined),
    listSessions: (goalId) => port.listSessions(goalId),
    async bindRun(sessionId, runId, expected) {
      checkId(sessionId, 'session_id');
      const run_id = checkId(runId, 'run_id');
      checkGeneration(expected, 'expected_execution_generation');
      return run(async () => {
        const s = await readSession(sessionId);
        assertActive(s);
        assertExecutionGeneration(s, expected);
        return updated(c, s, { run_id, execution_generation: s.execution_generation + 1 });
      });
    },
    async retireSession(sessionId, expected) {
      checkId(sessionId, 'session_id');
      checkGeneration(expected, 'expected_session_generation');
      return run(async () => {
        const s = await readSession(sessionId);
        assertSessionGeneration(s, expected);
        if (s.status === 'retired') return { result: s };
        return updated(c, s, { status: 'retired', execution_generation: s.execution_generation + 1 });
      });
    },
    async readmitSession(sessionId, expected) {
      checkId(sessionId, 'session_id');
      checkGeneration(expected, 'expected_session_generation');
      return run(async () => {
        const s = await readSession(sessionId);
        assertActive(s);
        assertSessionGeneration(s, expected);
        return updated(c, s, {
          session_generation: s.session_generation + 1,
          execution_generation: s.execution_generation + 1,
          run_id: null,
        });
      });
    },

    beginTurn: (sessionId, turnIndex, expected) => beginTurn(c, sessionId, turnIndex, expected),
    recordPhase: (turnKey, phase, expected, ref) => recordPhase(c, turnKey, phase, expected, ref),
    settleTurn: (turnKey, request) => settleTurn(c, turnKey, request),
    getTurn: async (key) => (typeof key === 'string' ? (await port.read({ turn_key: key })).turn : undefined),
    listTurns: (sessionId) => port.listTurns(sessionId),
    getSettlement: async (key) =>
      typeof key === 'string' ? (await port.read({ turn_key: key })).settlement : undefined,
    close: () => port.close(),
  } satisfies SessionStore;
  return store;
}

/** The session owner over the in-memory reference port. */
export const memorySessionStore = (options: SessionStoreOptions = {}): SessionStore =>
  sessionStore(memorySessionPort(), options);

export interface SqliteSessionStoreOptions extends SessionStoreOptions, SqliteSessionPortOptions {}

/** The session owner over `sessions.db` at `path`. */
export const openSqliteSessionStore = (path: string, options: SqliteSessionStoreOptions = {}): SessionStore =>
  sessionStore(openSqliteSessionPort(path, options.synchronous ? { synchronous: options.synchronous } : {}), options);
