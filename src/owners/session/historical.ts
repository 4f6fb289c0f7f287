/**
 * Historical readback of a COPY of `sessions.db` (the backup verifier's owner reader), through
 * the owners' one SQLite history reader (sqlite-history.ts: a private read-only copy, never
 * written). It grants no authority. Every defect becomes a finding (code, severity, subject, one
 * next action); nothing stops at the first one and nothing is dropped.
 */
import type { OwnerFinding } from '../contract.js';
import { RowInvalid } from '../../store/index.js';
import {
  VERIFY_COPY_AGAIN as VERIFY,
  readSqliteHistory,
  type ReadSqliteHistoryOptions,
  type SqliteHistorySpec,
} from '../sqlite-history.js';
import type { TableRows } from '../table-rows.js';
import type { Session, TurnJournal, TurnSettlement } from './contract.js';
import { settlementDigest, turnKeyOf } from './rules.js';
import {
  decodeSession,
  decodeSettlement,
  decodeTurn,
  type PhaseRow,
  type SessionRow,
  type SettlementRow,
  type TurnRow,
} from './schema.js';
import { SESSION_TABLES, MIGRATIONS } from './sql.js';

/** Subjects are `<kind>:<id>` — ids only, never paths or payloads. */
export type SessionFinding = OwnerFinding;

export interface SessionHistory {
  readonly owner: 'session';
  /** The copy's schema version (`PRAGMA user_version`), or null when unreadable. */
  readonly schema_version: number | null;
  readonly sessions: readonly Session[];
  readonly turns: readonly TurnJournal[];
  readonly settlements: readonly TurnSettlement[];
  readonly findings: readonly SessionFinding[];
}

export type { ReadSqliteHistoryOptions as ReadHistoricalOptions } from '../sqlite-history.js';

/** The sessions, turns and settlements read from a copy of `sessions.db` (sqlite-history.ts). */
export const readHistoricalFile = (copiedFilePath: string, options: ReadSqliteHistoryOptions = {}): SessionHistory =>
  readSqliteHistory(SESSION_HISTORY, copiedFilePath, options);

type Rows = TableRows<'sessions' | 'turns' | 'phases' | 'settlements'>;

const rowInvalid = (findings: SessionFinding[], subject: string) =>
  findings.push({ code: 'session_row_invalid', severity: 'error', subject, next_action: VERIFY });

function decodeSessions(rows: Rows, findings: SessionFinding[]): Session[] {
  const sessions: Session[] = [];
  for (const row of rows('sessions') as unknown as SessionRow[]) {
    try {
      sessions.push(decodeSession(row));
    } catch (e) {
      if (!(e instanceof RowInvalid)) throw e;
      rowInvalid(findings, `session:${String(row.session_id)}`);
    }
  }
  return sessions;
}

/** Turns with their phases; a turn whose key or session does not match is a finding, and so is a phase without a turn. */
function decodeTurns(rows: Rows, findings: SessionFinding[], sessions: readonly Session[]): TurnJournal[] {
  const sessionById = new Map(sessions.map((s) => [s.session_id, s]));
  const phasesByTurn = new Map<unknown, PhaseRow[]>();
  for (const p of rows('phases') as unknown as PhaseRow[]) {
    phasesByTurn.set(p.turn_key, [...(phasesByTurn.get(p.turn_key) ?? []), p]);
  }
  const turns: TurnJournal[] = [];
  for (const row of rows('turns') as unknown as TurnRow[]) {
    const phaseRows = phasesByTurn.get(row.turn_key) ?? [];
    phasesByTurn.delete(row.turn_key);
    let t: TurnJournal;
    try {
      t = decodeTurn(row, phaseRows);
    } catch (e) {
      if (!(e instanceof RowInvalid)) throw e;
      rowInvalid(findings, `turn:${String(row.turn_key)}`);
      continue;
    }
    if (t.turn_key !== turnKeyOf(t.session_id, t.turn_index)) {
      findings.push({
        code: 'turn_key_mismatch',
        severity: 'error',
        subject: `turn:${t.turn_key}`,
        next_action: VERIFY,
      });
      continue;
    }
    const s = sessionById.get(t.session_id);
    if (s === undefined || s.goal_id !== t.goal_id || s.goal_instance_id !== t.goal_instance_id) {
      findings.push({
        code: 'turn_session_mismatch',
        severity: 'error',
        subject: `turn:${t.turn_key}`,
        next_action: VERIFY,
      });
      continue;
    }
    turns.push(t);
  }
  for (const orphan of phasesByTurn.keys()) rowInvalid(findings, `turn:${String(orphan)}`);
  return turns;
}

/** Settlements that match their turn (status, session, request digest); any other is a finding. */
function decodeSettlements(rows: Rows, findings: SessionFinding[], turns: readonly TurnJournal[]): TurnSettlement[] {
  const turnByKey = new Map(turns.map((t) => [t.turn_key, t]));
  const settlements: TurnSettlement[] = [];
  for (const row of rows('settlements') as unknown as SettlementRow[]) {
    let st: TurnSettlement;
    try {
      st = decodeSettlement(row);
    } catch (e) {
      if (!(e instanceof RowInvalid)) throw e;
      findings.push({
        code: 'settlement_row_invalid',
        severity: 'error',
        subject: `settlement:${String(row.settlement_id)}`,
        next_action: VERIFY,
      });
      continue;
    }
    const t = turnByKey.get(st.turn_key);
    const digestOk = st.request_digest === settlementDigest(st.turn_key, st);
    if (t === undefined || t.status !== st.status || t.session_id !== st.session_id || !digestOk) {
      findings.push({
        code: 'settlement_turn_mismatch',
        severity: 'error',
        subject: `settlement:${st.settlement_id}`,
        next_action: VERIFY,
      });
      continue;
    }
    settlements.push(st);
  }
  return settlements;
}

/** Holds for what a live owner must settle or readmit, and errors for finished turns that were never settled. */
function holdsAndGaps(
  findings: SessionFinding[],
  sessions: readonly Session[],
  turns: readonly TurnJournal[],
  settlements: readonly TurnSettlement[],
): void {
  const settled = new Set(settlements.map((st) => st.turn_key));
  for (const t of turns) {
    if (t.status === 'in_progress') {
      findings.push({
        code: 'turn_unsettled',
        severity: 'hold',
        subject: `turn:${t.turn_key}`,
        next_action:
          "reconcile the turn's effects under their original operation ids, then settle the turn through the session owner",
      });
    } else if (!settled.has(t.turn_key)) {
      findings.push({
        code: 'settlement_missing',
        severity: 'error',
        subject: `turn:${t.turn_key}`,
        next_action: VERIFY,
      });
    }
  }
  for (const s of sessions) {
    if (s.status === 'active') {
      findings.push({
        code: 'session_binding_historical',
        severity: 'hold',
        subject: `session:${s.session_id}`,
        next_action:
          'readmit the session through the session owner (a new execution generation) before any run continues',
      });
    }
  }
}

/** The sessions, turns and settlements decoded from their rows (either provider's), with holds and defects as findings. */
export function decodeSessionRows(rows: Rows, findings: SessionFinding[]): Omit<SessionHistory, 'schema_version'> {
  const sessions = decodeSessions(rows, findings);
  const turns = decodeTurns(rows, findings, sessions);
  const settlements = decodeSettlements(rows, findings, turns);
  holdsAndGaps(findings, sessions, turns, settlements);
  return { owner: 'session', sessions, turns, settlements, findings };
}

const SESSION_HISTORY: SqliteHistorySpec<'sessions' | 'turns' | 'phases' | 'settlements', SessionHistory> = {
  owner: 'session',
  file: 'sessions.db',
  version: MIGRATIONS.length,
  tables: SESSION_TABLES,
  none: () => ({ sessions: [], turns: [], settlements: [] }),
  decode: decodeSessionRows,
};
