/** The session owner's recovery contract: `sessions.db` — or its tables of a PostgreSQL root — through its historical reader (sqlite-recovery.ts). */
import { LAYOUT } from '../layout.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey } from '../export.js';
import { sqliteOwner } from '../sqlite-recovery.js';
import { decodeSessionRows, readHistoricalFile, type SessionHistory } from './historical.js';
import { SESSION_TABLES } from './sql.js';

export const recovery = sqliteOwner<SessionHistory>({
  name: 'session',
  decides: 'agent sessions bound to a Goal, their generations, Turn journals and Turn settlement',
  file: LAYOUT.sessionsDb,
  requiredForGoal: true,
  dependsOn: ['config'],
  classification: 'historical_only',
  exportSchema: 'loopx_session_export_v0',
  maxItems: OWNER_EXPORT_MAX_ITEMS,
  read: (abs, scratchDir) => readHistoricalFile(abs, scratchDir === undefined ? {} : { scratchDir }),
  // On a root whose Goal state is in PostgreSQL: the same reader over the schema's rows.
  postgresql: { tables: SESSION_TABLES, read: (rows) => ({ ...decodeSessionRows(rows, []), schema_version: null }) },
  itemCounts: { session: 'sessions', turn: 'turns', settlement: 'settlements' },
  counts: (h) => ({ sessions: h.sessions.length, turns: h.turns.length, settlements: h.settlements.length }),
  items: (h) => [
    ...byKey(h.sessions, (s) => s.session_id).map((value) => ({ kind: 'session', value })),
    ...byKey(h.turns, (t) => t.turn_key).map((value) => ({ kind: 'turn', value })),
    ...byKey(h.settlements, (s) => s.settlement_id).map((value) => ({ kind: 'settlement', value })),
  ],
});
