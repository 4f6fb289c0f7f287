/**
 * The PostgreSQL session port: the same rows as `sessions.db`, in one installation's schema
 * (sql.ts). Each commit is one transaction (pg-port.ts) that checks the write's precondition
 * on the current rows before writing: the turn a phase or a settlement lands on is locked
 * `FOR UPDATE` (its status and phase count cannot move underneath), the session it acts under is
 * locked `FOR SHARE` and its execution generation compared (a re-bind waits or has already won),
 * an update of the session is conditional on its generation, and a row that must not exist yet is
 * inserted `ON CONFLICT DO NOTHING`. So a stale writer in another process or pool fails in the
 * database, never in client memory. Stores rows; decides nothing about sessions (session.ts does).
 */
import type { PgDatabase, PgQuery } from '../../store/index.js';
import type { ConflictReason } from '../port.js';
import { openPgPort } from '../pg-port.js';
import type { TurnJournal } from './contract.js';
import { SESSION_PG_MIGRATIONS } from './sql.js';
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

const SESSION_COLUMNS =
  'session_id, goal_id, goal_instance_id, session_mode, session_generation, execution_generation, run_id, status, created_at, updated_at';
const TURN_COLUMNS =
  'turn_key, session_id, goal_id, goal_instance_id, turn_index, execution_generation, run_id, status, created_at, updated_at';
const SETTLEMENT_COLUMNS =
  'turn_key, settlement_id, session_id, goal_id, status, failed_phase, result_kind, phase_count, request_digest, settled_at';

/** `$1, $2, …, $n`. */
const params = (n: number): string => Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ');

async function turnsWithPhases(q: PgQuery, rows: TurnRow[]): Promise<TurnJournal[]> {
  if (rows.length === 0) return [];
  const phases = await q<PhaseRow & Record<string, unknown>>(
    'SELECT turn_key, position, phase, at, ref FROM turn_phases WHERE turn_key = ANY($1) ORDER BY position',
    [rows.map((r) => r.turn_key)],
  );
  return rows.map((r) =>
    decodeTurn(
      r,
      phases.filter((p) => p.turn_key === r.turn_key),
    ),
  );
}

const oneTurn = async (q: PgQuery, where: string, args: unknown[]): Promise<TurnJournal | undefined> =>
  (
    await turnsWithPhases(
      q,
      await q<TurnRow & Record<string, unknown>>(`SELECT ${TURN_COLUMNS} FROM turns WHERE ${where}`, args),
    )
  )[0];

async function settlementWhere(q: PgQuery, column: 'turn_key' | 'settlement_id', value: string) {
  const [row] = await q<SettlementRow & Record<string, unknown>>(
    `SELECT ${SETTLEMENT_COLUMNS} FROM settlements WHERE ${column} = $1`,
    [value],
  );
  return row === undefined ? undefined : decodeSettlement(row);
}

/** The rows a decision reads, decoded. */
async function readRows(q: PgQuery, query: SessionQuery): Promise<SessionRows> {
  const turn = query.turn_key === undefined ? undefined : await oneTurn(q, 'turn_key = $1', [query.turn_key]);
  const sessionId = query.session_id ?? turn?.session_id;
  const [sessionRow] =
    sessionId === undefined
      ? []
      : await q<SessionRow & Record<string, unknown>>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE session_id = $1`, [
          sessionId,
        ]);
  const session = sessionRow === undefined ? undefined : decodeSession(sessionRow);
  const last =
    session === undefined
      ? undefined
      : await oneTurn(q, 'session_id = $1 ORDER BY turn_index DESC LIMIT 1', [session.session_id]);
  const settlement = query.turn_key === undefined ? undefined : await settlementWhere(q, 'turn_key', query.turn_key);
  const byId =
    query.settlement_id === undefined ? undefined : await settlementWhere(q, 'settlement_id', query.settlement_id);
  return {
    ...(session ? { session } : {}),
    ...(turn ? { turn } : {}),
    ...(last ? { last_turn: last } : {}),
    ...(settlement ? { settlement } : {}),
    ...(byId ? { settlement_by_id: byId } : {}),
  };
}

/** The session a write acts under, locked against a re-bind until this transaction ends, checked against the generation the decision saw. */
async function fenced(q: PgQuery, sessionId: string, expected: number): Promise<ConflictReason | undefined> {
  const [row] = await q<{ execution_generation: number }>(
    'SELECT execution_generation FROM sessions WHERE session_id = $1 FOR SHARE',
    [sessionId],
  );
  if (row === undefined) return 'missing';
  return row.execution_generation === expected ? undefined : 'changed';
}

/** The turn a phase or a settlement lands on, locked for this transaction: its status, session and phase count. */
async function lockedTurn(
  q: PgQuery,
  turnKey: string,
): Promise<{ status: unknown; session_id: string; phases: number } | undefined> {
  const [row] = await q<{ status: unknown; session_id: string }>(
    'SELECT status, session_id FROM turns WHERE turn_key = $1 FOR UPDATE',
    [turnKey],
  );
  if (row === undefined) return undefined;
  const [{ n }] = (await q<{ n: number }>('SELECT count(*)::int AS n FROM turn_phases WHERE turn_key = $1', [
    turnKey,
  ])) as [{ n: number }];
  return { status: row.status, session_id: row.session_id, phases: n };
}

/** Inserts `row` into `table` unless a unique key is taken; true when it was inserted. */
async function insertNew(q: PgQuery, table: string, columns: string, values: unknown[]): Promise<boolean> {
  const rows = await q(
    `INSERT INTO ${table} (${columns}) VALUES (${params(values.length)}) ON CONFLICT DO NOTHING RETURNING 1 AS inserted`,
    values,
  );
  return rows.length === 1;
}

const insertPhase = (
  q: PgQuery,
  turnKey: string,
  position: number,
  p: { phase: string; at: string; ref: string | null },
) =>
  q('INSERT INTO turn_phases (turn_key, position, phase, at, ref) VALUES ($1, $2, $3, $4, $5)', [
    turnKey,
    position,
    p.phase,
    p.at,
    p.ref,
  ]);

const setTurnStatus = (q: PgQuery, turnKey: string, status: string, at: string) =>
  q('UPDATE turns SET status = $1, updated_at = $2 WHERE turn_key = $3', [status, at, turnKey]);

async function updateSession(
  q: PgQuery,
  w: Extract<SessionWrite, { op: 'update_session' }>,
): Promise<ConflictReason | undefined> {
  const s = w.session;
  const updated = await q(
    `UPDATE sessions SET session_generation = $1, execution_generation = $2, run_id = $3, status = $4, updated_at = $5
       WHERE session_id = $6 AND execution_generation = $7 RETURNING 1 AS updated`,
    [
      s.session_generation,
      s.execution_generation,
      s.run_id,
      s.status,
      s.updated_at,
      s.session_id,
      w.expected_execution_generation,
    ],
  );
  if (updated.length === 1) return undefined;
  return (await q('SELECT 1 FROM sessions WHERE session_id = $1', [s.session_id])).length === 0 ? 'missing' : 'changed';
}

async function beginTurn(
  q: PgQuery,
  w: Extract<SessionWrite, { op: 'begin_turn' }>,
): Promise<ConflictReason | undefined> {
  const t = w.turn;
  const refused = await fenced(q, t.session_id, w.expected_execution_generation);
  if (refused) return refused;
  const row = [
    t.turn_key,
    t.session_id,
    t.goal_id,
    t.goal_instance_id,
    t.turn_index,
    t.execution_generation,
    t.run_id,
    t.status,
    t.created_at,
    t.updated_at,
  ];
  if (!(await insertNew(q, 'turns', TURN_COLUMNS, row))) return 'exists';
  for (const [i, p] of t.phases.entries()) await insertPhase(q, t.turn_key, i, p);
  return undefined;
}

async function appendPhase(
  q: PgQuery,
  w: Extract<SessionWrite, { op: 'append_phase' }>,
): Promise<ConflictReason | undefined> {
  const t = await lockedTurn(q, w.turn_key);
  if (t === undefined) return 'missing';
  if (t.status !== 'in_progress' || t.phases !== w.position) return 'changed';
  const refused = await fenced(q, t.session_id, w.expected_execution_generation);
  if (refused) return refused;
  await insertPhase(q, w.turn_key, w.position, w.phase);
  await setTurnStatus(q, w.turn_key, 'in_progress', w.phase.at);
  return undefined;
}

async function settleTurn(
  q: PgQuery,
  w: Extract<SessionWrite, { op: 'settle_turn' }>,
): Promise<ConflictReason | undefined> {
  const s = w.settlement;
  const t = await lockedTurn(q, s.turn_key);
  // A settlement of this turn lands only under its lock; one under the same id is caught by the insert below too.
  const taken = await q('SELECT 1 FROM settlements WHERE turn_key = $1 OR settlement_id = $2', [
    s.turn_key,
    s.settlement_id,
  ]);
  if (taken.length > 0) return 'exists';
  if (t === undefined) return 'missing';
  if (t.status !== 'in_progress' || t.phases !== w.phase_count) return 'changed';
  const refused = await fenced(q, t.session_id, w.expected_execution_generation);
  if (refused) return refused;
  const row = [
    s.turn_key,
    s.settlement_id,
    s.session_id,
    s.goal_id,
    s.status,
    s.failed_phase,
    s.result_kind,
    s.phase_count,
    s.request_digest,
    s.settled_at,
  ];
  if (!(await insertNew(q, 'settlements', SETTLEMENT_COLUMNS, row))) return 'exists';
  await setTurnStatus(q, s.turn_key, s.status, s.settled_at);
  return undefined;
}

/** One write inside the commit's transaction, applied only when its precondition holds on the current rows. */
async function apply(q: PgQuery, w: SessionWrite): Promise<ConflictReason | undefined> {
  switch (w.op) {
    case 'create_session': {
      const s = w.session;
      const row = [
        s.session_id,
        s.goal_id,
        s.goal_instance_id,
        s.session_mode,
        s.session_generation,
        s.execution_generation,
        s.run_id,
        s.status,
        s.created_at,
        s.updated_at,
      ];
      return (await insertNew(q, 'sessions', SESSION_COLUMNS, row)) ? undefined : 'exists';
    }
    case 'update_session':
      return updateSession(q, w);
    case 'begin_turn':
      return beginTurn(q, w);
    case 'append_phase':
      return appendPhase(q, w);
    case 'settle_turn':
      return settleTurn(q, w);
  }
}

/** The session port on `db`'s schema (migrated by `loopx db migrate`; checked on first use). `close` ends the port, not `db`. */
export function openPgSessionPort(db: PgDatabase): SessionPort {
  const base = openPgPort(db, 'session', SESSION_PG_MIGRATIONS, 'session');
  return {
    provider: base.provider,
    read: (query) => base.read((q) => readRows(q, query)),
    listSessions: (goalId) =>
      base.read(async (q) => {
        const where = goalId === undefined ? '' : 'WHERE goal_id = $1';
        const rows = await q<SessionRow & Record<string, unknown>>(
          `SELECT ${SESSION_COLUMNS} FROM sessions ${where} ORDER BY seq`,
          goalId === undefined ? [] : [goalId],
        );
        return rows.map(decodeSession);
      }),
    listTurns: (sessionId) =>
      base.read(async (q) =>
        turnsWithPhases(
          q,
          await q<TurnRow & Record<string, unknown>>(
            `SELECT ${TURN_COLUMNS} FROM turns WHERE session_id = $1 ORDER BY turn_index`,
            [sessionId],
          ),
        ),
      ),
    commit: (write) => base.commit((q) => apply(q, write)),
    close: () => base.close(),
  };
}
