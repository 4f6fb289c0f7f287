/**
 * SQLite session store: `sessions.db` in the runtime root. Every write is one IMMEDIATE
 * transaction that re-reads the rows it decides on, so two processes sharing the file are fenced
 * by the same generation checks as one.
 */
import { randomBytes } from 'node:crypto';
import { internal } from '../../core/index.js';
import { RowInvalid, openSqlite, setup, type SqliteDatabase } from '../../store/index.js';
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
import {
  MIGRATIONS,
  decodeSession,
  decodeSettlement,
  decodeTurn,
  type PhaseRow,
  type SessionRow,
  type SettlementRow,
  type TurnRow,
} from './schema.js';

export interface SqliteSessionStoreOptions extends SessionStoreOptions {
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

export function openSqliteSessionStore(path: string, options: SqliteSessionStoreOptions = {}): SessionStore {
  const db: SqliteDatabase = openSqlite(path, options.synchronous ? { synchronous: options.synchronous } : {});
  setup(db, MIGRATIONS);
  const now = () => (options.now ?? (() => new Date()))().toISOString();

  const q = {
    getSession: db.prepare('SELECT * FROM sessions WHERE session_id = ?'),
    listSessions: db.prepare('SELECT * FROM sessions ORDER BY rowid'),
    listSessionsOfGoal: db.prepare('SELECT * FROM sessions WHERE goal_id = ? ORDER BY rowid'),
    insertSession: db.prepare(
      `INSERT INTO sessions (session_id, goal_id, goal_instance_id, session_mode, session_generation, execution_generation, run_id, status, created_at, updated_at)
       VALUES (@session_id, @goal_id, @goal_instance_id, @session_mode, @session_generation, @execution_generation, @run_id, @status, @created_at, @updated_at)`,
    ),
    updateSession: db.prepare(
      `UPDATE sessions SET session_generation = @session_generation, execution_generation = @execution_generation, run_id = @run_id,
         status = @status, updated_at = @updated_at WHERE session_id = @session_id`,
    ),
    getTurn: db.prepare('SELECT * FROM turns WHERE turn_key = ?'),
    lastTurn: db.prepare('SELECT * FROM turns WHERE session_id = ? ORDER BY turn_index DESC LIMIT 1'),
    listTurns: db.prepare('SELECT * FROM turns WHERE session_id = ? ORDER BY turn_index'),
    phases: db.prepare('SELECT * FROM turn_phases WHERE turn_key = ? ORDER BY position'),
    insertTurn: db.prepare(
      `INSERT INTO turns (turn_key, session_id, goal_id, goal_instance_id, turn_index, execution_generation, run_id, status, created_at, updated_at)
       VALUES (@turn_key, @session_id, @goal_id, @goal_instance_id, @turn_index, @execution_generation, @run_id, @status, @created_at, @updated_at)`,
    ),
    setTurnStatus: db.prepare('UPDATE turns SET status = ?, updated_at = ? WHERE turn_key = ?'),
    insertPhase: db.prepare('INSERT INTO turn_phases (turn_key, position, phase, at, ref) VALUES (?, ?, ?, ?, ?)'),
    settlementOfTurn: db.prepare('SELECT * FROM settlements WHERE turn_key = ?'),
    settlementById: db.prepare('SELECT * FROM settlements WHERE settlement_id = ?'),
    insertSettlement: db.prepare(
      `INSERT INTO settlements (turn_key, settlement_id, session_id, goal_id, status, failed_phase, result_kind, phase_count, request_digest, settled_at)
       VALUES (@turn_key, @settlement_id, @session_id, @goal_id, @status, @failed_phase, @result_kind, @phase_count, @request_digest, @settled_at)`,
    ),
  };

  // Our own rows failing to decode means the file was damaged under us: stop, never guess.
  const decoded = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (e) {
      if (e instanceof RowInvalid) {
        throw internal('session_store_corrupt', `sessions.db holds a malformed row (${e.field}).`, { nextAction: 'run the backup verifier on a copy of sessions.db', cause: e });
      }
      throw e;
    }
  };
  const readSession = (id: string): Session | undefined => {
    const row = q.getSession.get(id) as SessionRow | undefined;
    return row === undefined ? undefined : decoded(() => decodeSession(row));
  };
  const requireSession = (id: string): Session => {
    const s = readSession(checkId(id, 'session_id'));
    if (s === undefined) throw sessionNotFound(id);
    return s;
  };
  const turnFromRow = (row: TurnRow): TurnJournal => decoded(() => decodeTurn(row, q.phases.all(row.turn_key) as PhaseRow[]));
  const readTurn = (key: string): TurnJournal | undefined => {
    const row = typeof key === 'string' ? (q.getTurn.get(key) as TurnRow | undefined) : undefined;
    return row === undefined ? undefined : turnFromRow(row);
  };
  const requireTurn = (key: string): TurnJournal => {
    const t = readTurn(key);
    if (t === undefined) throw turnNotFound(String(key));
    return t;
  };
  const readSettlement = (row: SettlementRow | undefined): TurnSettlement | undefined => (row === undefined ? undefined : decoded(() => decodeSettlement(row)));
  const update = (s: Session, patch: Partial<Session>): Session => {
    const next: Session = { ...s, ...patch, updated_at: now() };
    q.updateSession.run(next);
    return next;
  };

  const tx = <A extends unknown[], R>(fn: (...args: A) => R) => {
    const t = db.transaction(fn);
    return (...args: A): R => t.immediate(...args);
  };

  const openTx = tx((ref: { goal_id: string; goal_instance_id: string }, id: string): Session => {
    const existing = readSession(id);
    if (existing !== undefined) {
      if (existing.goal_id !== ref.goal_id || existing.goal_instance_id !== ref.goal_instance_id) throw sessionIdentityMismatch(id);
      return existing;
    }
    const at = now();
    const s: Session = { session_id: id, ...ref, session_mode: SESSION_MODE, session_generation: 1, execution_generation: 1, run_id: null, status: 'active', created_at: at, updated_at: at };
    q.insertSession.run(s);
    return s;
  });

  const bindTx = tx((sessionId: string, runId: string, expected: number): Session => {
    const s = requireSession(sessionId);
    assertActive(s);
    assertExecutionGeneration(s, expected);
    return update(s, { run_id: runId, execution_generation: s.execution_generation + 1 });
  });

  const retireTx = tx((sessionId: string, expected: number): Session => {
    const s = requireSession(sessionId);
    assertSessionGeneration(s, expected);
    if (s.status === 'retired') return s;
    return update(s, { status: 'retired', execution_generation: s.execution_generation + 1 });
  });

  const readmitTx = tx((sessionId: string, expected: number): Session => {
    const s = requireSession(sessionId);
    assertActive(s);
    assertSessionGeneration(s, expected);
    return update(s, { session_generation: s.session_generation + 1, execution_generation: s.execution_generation + 1, run_id: null });
  });

  const beginTx = tx((sessionId: string, index: number, expected: number) => {
    const s = requireSession(sessionId);
    const key = turnKeyOf(s.session_id, index);
    const lastRow = q.lastTurn.get(s.session_id) as TurnRow | undefined;
    const existing = readTurn(key);
    if (decideBeginTurn(s, index, expected, existing, lastRow === undefined ? undefined : turnFromRow(lastRow)) === 'readback') {
      return { turn: existing!, replayed: true };
    }
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
    const { phases: _phases, ...row } = t;
    q.insertTurn.run(row);
    return { turn: t, replayed: false };
  });

  const phaseTx = tx((turnKey: string, phase: ReturnType<typeof checkPhase>, expected: number, ref: string | null): TurnJournal => {
    const t = requireTurn(turnKey);
    if (decideRecordPhase(requireSession(t.session_id), t, phase, expected) === 'readback') return t;
    const at = now();
    q.insertPhase.run(t.turn_key, t.phases.length, phase, at, ref);
    q.setTurnStatus.run(t.status, at, t.turn_key);
    return { ...t, phases: [...t.phases, { phase, at, ref }], updated_at: at };
  });

  const settleTx = tx((turnKey: string, r: ReturnType<typeof normalizeSettle>) => {
    const t = requireTurn(turnKey);
    const current = readSettlement(q.settlementOfTurn.get(t.turn_key) as SettlementRow | undefined);
    const byId = readSettlement(q.settlementById.get(r.settlement_id) as SettlementRow | undefined);
    const d = decideSettle(requireSession(t.session_id), t, r, current, byId, now());
    if ('replay' in d) return { settlement: d.replay, replayed: true };
    q.insertSettlement.run(d.settle);
    q.setTurnStatus.run(d.settle.status, d.settle.settled_at, t.turn_key);
    return { settlement: d.settle, replayed: false };
  });

  const store = {
    openSession(goal, opts = {}) {
      const ref = checkGoalRef(goal);
      const id = opts.session_id === undefined ? `ses_${randomBytes(12).toString('hex')}` : checkId(opts.session_id, 'session_id');
      return openTx(ref, id);
    },
    getSession: (id) => (typeof id === 'string' ? readSession(id) : undefined),
    listSessions(goalId) {
      const rows = (goalId === undefined ? q.listSessions.all() : q.listSessionsOfGoal.all(goalId)) as SessionRow[];
      return rows.map((r) => decoded(() => decodeSession(r)));
    },
    bindRun(sessionId, runId, expected) {
      checkId(sessionId, 'session_id');
      return bindTx(sessionId, checkId(runId, 'run_id'), checkGeneration(expected, 'expected_execution_generation'));
    },
    retireSession(sessionId, expected) {
      checkId(sessionId, 'session_id');
      return retireTx(sessionId, checkGeneration(expected, 'expected_session_generation'));
    },
    readmitSession(sessionId, expected) {
      checkId(sessionId, 'session_id');
      return readmitTx(sessionId, checkGeneration(expected, 'expected_session_generation'));
    },
    beginTurn(sessionId, turnIndex, expected) {
      checkId(sessionId, 'session_id');
      return beginTx(sessionId, checkTurnIndex(turnIndex), checkGeneration(expected, 'expected_execution_generation'));
    },
    recordPhase(turnKey, phase, expected, ref) {
      return phaseTx(turnKey, checkPhase(phase), checkGeneration(expected, 'expected_execution_generation'), checkRef(ref));
    },
    settleTurn(turnKey, request) {
      return settleTx(turnKey, normalizeSettle(request));
    },
    getTurn: (key) => readTurn(key),
    listTurns: (sessionId) => (q.listTurns.all(sessionId) as TurnRow[]).map(turnFromRow),
    getSettlement: (key) => readSettlement(q.settlementOfTurn.get(key) as SettlementRow | undefined),
    close() {
      db.close();
    },
  } satisfies SessionStore;
  return store;
}
