/**
 * SQLite session port: `sessions.db` in the runtime root. Each commit is one IMMEDIATE
 * transaction that checks the write's precondition on the current rows (sqlite-port.ts), so two
 * processes sharing the file are fenced by the same generation checks as one. Stores rows; decides
 * nothing about sessions (session.ts does).
 */
import { type ConflictReason } from '../port.js';
import { openSqlitePort, type SqlitePortOptions } from '../sqlite-port.js';
import type { SqliteDatabase } from '../../store/index.js';
import type { SessionPort, SessionQuery, SessionRows, SessionWrite } from './port.js';
import {
  decodeSession,
  decodeSettlement,
  decodeTurn,
  type PhaseRow,
  type SessionRow,
  type SettlementRow,
  type TurnRow,
} from './schema.js';
import { MIGRATIONS } from './sql.js';

export type SqliteSessionPortOptions = SqlitePortOptions;

/** Every statement the port runs, prepared once. */
function prepareStatements(db: SqliteDatabase) {
  return {
    getSession: db.prepare('SELECT * FROM sessions WHERE session_id = ?'),
    generation: db.prepare('SELECT execution_generation FROM sessions WHERE session_id = ?'),
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
    turnTaken: db.prepare('SELECT 1 FROM turns WHERE turn_key = ? OR (session_id = ? AND turn_index = ?)'),
    lastTurn: db.prepare('SELECT * FROM turns WHERE session_id = ? ORDER BY turn_index DESC LIMIT 1'),
    listTurns: db.prepare('SELECT * FROM turns WHERE session_id = ? ORDER BY turn_index'),
    phases: db.prepare('SELECT * FROM turn_phases WHERE turn_key = ? ORDER BY position'),
    phaseCount: db.prepare('SELECT count(*) AS n FROM turn_phases WHERE turn_key = ?'),
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
}

type Statements = ReturnType<typeof prepareStatements>;

const turnFromRow = (q: Statements, row: TurnRow) => decodeTurn(row, q.phases.all(row.turn_key) as PhaseRow[]);
const settlementOf = (row: unknown) => (row === undefined ? undefined : decodeSettlement(row as SettlementRow));

/** The session a write acts under, checked against the generation the decision saw. */
function fenced(q: Statements, sessionId: string, expected: number): ConflictReason | undefined {
  const row = q.generation.get(sessionId) as { execution_generation: number } | undefined;
  if (row === undefined) return 'missing';
  return row.execution_generation === expected ? undefined : 'changed';
}

function turnState(
  q: Statements,
  turnKey: string,
): { status: unknown; session_id: string; phases: number } | undefined {
  const row = q.getTurn.get(turnKey) as (TurnRow & { session_id: string }) | undefined;
  if (row === undefined) return undefined;
  return { status: row.status, session_id: row.session_id, phases: (q.phaseCount.get(turnKey) as { n: number }).n };
}

/** One write inside the commit's transaction, applied only when its precondition holds on the current rows. */
function apply(q: Statements, w: SessionWrite): ConflictReason | undefined {
  switch (w.op) {
    case 'create_session':
      if (q.getSession.get(w.session.session_id) !== undefined) return 'exists';
      q.insertSession.run(w.session);
      return undefined;
    case 'update_session': {
      const refused = fenced(q, w.session.session_id, w.expected_execution_generation);
      if (refused) return refused;
      q.updateSession.run(w.session);
      return undefined;
    }
    case 'begin_turn': {
      const refused = fenced(q, w.turn.session_id, w.expected_execution_generation);
      if (refused) return refused;
      if (q.turnTaken.get(w.turn.turn_key, w.turn.session_id, w.turn.turn_index) !== undefined) return 'exists';
      const { phases, ...row } = w.turn;
      q.insertTurn.run(row);
      phases.forEach((p, i) => q.insertPhase.run(w.turn.turn_key, i, p.phase, p.at, p.ref));
      return undefined;
    }
    case 'append_phase': {
      const t = turnState(q, w.turn_key);
      if (t === undefined) return 'missing';
      if (t.status !== 'in_progress' || t.phases !== w.position) return 'changed';
      const refused = fenced(q, t.session_id, w.expected_execution_generation);
      if (refused) return refused;
      q.insertPhase.run(w.turn_key, w.position, w.phase.phase, w.phase.at, w.phase.ref);
      q.setTurnStatus.run('in_progress', w.phase.at, w.turn_key);
      return undefined;
    }
    case 'settle_turn': {
      const s = w.settlement;
      if (q.settlementOfTurn.get(s.turn_key) !== undefined || q.settlementById.get(s.settlement_id) !== undefined)
        return 'exists';
      const t = turnState(q, s.turn_key);
      if (t === undefined) return 'missing';
      if (t.status !== 'in_progress' || t.phases !== w.phase_count) return 'changed';
      const refused = fenced(q, t.session_id, w.expected_execution_generation);
      if (refused) return refused;
      q.insertSettlement.run(s);
      q.setTurnStatus.run(s.status, s.settled_at, s.turn_key);
      return undefined;
    }
  }
}

/** The rows a decision reads, decoded. */
function readRows(q: Statements, query: SessionQuery): SessionRows {
  const turnRow = query.turn_key === undefined ? undefined : (q.getTurn.get(query.turn_key) as TurnRow | undefined);
  const turn = turnRow === undefined ? undefined : turnFromRow(q, turnRow);
  const sessionId = query.session_id ?? turn?.session_id;
  const sessionRow = sessionId === undefined ? undefined : (q.getSession.get(sessionId) as SessionRow | undefined);
  const session = sessionRow === undefined ? undefined : decodeSession(sessionRow);
  const lastRow = session === undefined ? undefined : (q.lastTurn.get(session.session_id) as TurnRow | undefined);
  const last = lastRow === undefined ? undefined : turnFromRow(q, lastRow);
  const settlement = query.turn_key === undefined ? undefined : settlementOf(q.settlementOfTurn.get(query.turn_key));
  const byId = query.settlement_id === undefined ? undefined : settlementOf(q.settlementById.get(query.settlement_id));
  return {
    ...(session ? { session } : {}),
    ...(turn ? { turn } : {}),
    ...(last ? { last_turn: last } : {}),
    ...(settlement ? { settlement } : {}),
    ...(byId ? { settlement_by_id: byId } : {}),
  };
}

export function openSqliteSessionPort(path: string, options: SqliteSessionPortOptions = {}): SessionPort {
  const base = openSqlitePort(path, MIGRATIONS, 'session', 'sessions.db', options);
  const q = prepareStatements(base.db);
  const port = {
    provider: base.provider,
    read: (query) => base.read((): SessionRows => readRows(q, query)),
    listSessions: (goalId) =>
      base.read(() =>
        ((goalId === undefined ? q.listSessions.all() : q.listSessionsOfGoal.all(goalId)) as SessionRow[]).map(
          decodeSession,
        ),
      ),
    listTurns: (sessionId) =>
      base.read(() => (q.listTurns.all(sessionId) as TurnRow[]).map((row) => turnFromRow(q, row))),
    commit: (write) => base.commit(() => apply(q, write)),
    close: () => base.close(),
  } satisfies SessionPort;
  return port;
}
