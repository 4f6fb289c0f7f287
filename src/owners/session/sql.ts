/**
 * The session owner's SQL in each dialect, in one place beside its port (port.ts; dialects.ts):
 * `sessions.db`'s migrations (the SQLite port and the historical reader), the `session` component
 * of a PostgreSQL schema (the PostgreSQL port; applied only by `loopx db migrate`) and the
 * historical reader's queries. Both dialects have the same columns, so the same row decoders
 * (schema.ts) prove every row well-formed: instants as TEXT in canonical ISO form, counters as
 * INTEGER (which `pg` returns as numbers); PostgreSQL's `seq` keeps creation order (SQLite's rowid).
 */
import type { Migration, PgMigration } from '../../store/index.js';
import type { OwnerSql } from '../dialects.js';
import type { TableQueries } from '../table-rows.js';

/** `sessions.db`: append-only; position + 1 is the `user_version` it produces. */
export const MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE sessions (
     session_id TEXT PRIMARY KEY,
     goal_id TEXT NOT NULL,
     goal_instance_id TEXT NOT NULL,
     session_mode TEXT NOT NULL CHECK (session_mode = 'managed_runtime'),
     session_generation INTEGER NOT NULL CHECK (session_generation >= 1),
     execution_generation INTEGER NOT NULL CHECK (execution_generation >= 1),
     run_id TEXT,
     status TEXT NOT NULL CHECK (status IN ('active', 'retired')),
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX sessions_by_goal ON sessions (goal_id);
   CREATE TABLE turns (
     turn_key TEXT PRIMARY KEY,
     session_id TEXT NOT NULL REFERENCES sessions (session_id),
     goal_id TEXT NOT NULL,
     goal_instance_id TEXT NOT NULL,
     turn_index INTEGER NOT NULL CHECK (turn_index >= 0),
     execution_generation INTEGER NOT NULL CHECK (execution_generation >= 1),
     run_id TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('in_progress', 'committed', 'stopped', 'failed')),
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     UNIQUE (session_id, turn_index)
   ) WITHOUT ROWID;
   CREATE TABLE turn_phases (
     turn_key TEXT NOT NULL REFERENCES turns (turn_key),
     position INTEGER NOT NULL CHECK (position >= 0),
     phase TEXT NOT NULL,
     at TEXT NOT NULL,
     ref TEXT,
     PRIMARY KEY (turn_key, position)
   ) WITHOUT ROWID;
   CREATE TABLE settlements (
     turn_key TEXT PRIMARY KEY REFERENCES turns (turn_key),
     settlement_id TEXT NOT NULL UNIQUE,
     session_id TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('committed', 'stopped', 'failed')),
     failed_phase TEXT,
     result_kind TEXT,
     phase_count INTEGER NOT NULL CHECK (phase_count >= 0),
     request_digest TEXT NOT NULL,
     settled_at TEXT NOT NULL
   ) WITHOUT ROWID;`,
];

export const SESSION_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE sessions (
     seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
     session_id TEXT PRIMARY KEY,
     goal_id TEXT NOT NULL,
     goal_instance_id TEXT NOT NULL,
     session_mode TEXT NOT NULL CHECK (session_mode = 'managed_runtime'),
     session_generation INTEGER NOT NULL CHECK (session_generation >= 1),
     execution_generation INTEGER NOT NULL CHECK (execution_generation >= 1),
     run_id TEXT,
     status TEXT NOT NULL CHECK (status IN ('active', 'retired')),
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX sessions_by_goal ON sessions (goal_id, seq);
   CREATE TABLE turns (
     turn_key TEXT PRIMARY KEY,
     session_id TEXT NOT NULL REFERENCES sessions (session_id),
     goal_id TEXT NOT NULL,
     goal_instance_id TEXT NOT NULL,
     turn_index INTEGER NOT NULL CHECK (turn_index >= 0),
     execution_generation INTEGER NOT NULL CHECK (execution_generation >= 1),
     run_id TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('in_progress', 'committed', 'stopped', 'failed')),
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     UNIQUE (session_id, turn_index)
   );
   CREATE TABLE turn_phases (
     turn_key TEXT NOT NULL REFERENCES turns (turn_key),
     position INTEGER NOT NULL CHECK (position >= 0),
     phase TEXT NOT NULL,
     at TEXT NOT NULL,
     ref TEXT,
     PRIMARY KEY (turn_key, position)
   );
   CREATE TABLE settlements (
     turn_key TEXT PRIMARY KEY REFERENCES turns (turn_key),
     settlement_id TEXT NOT NULL UNIQUE,
     session_id TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('committed', 'stopped', 'failed')),
     failed_phase TEXT,
     result_kind TEXT,
     phase_count INTEGER NOT NULL CHECK (phase_count >= 0),
     request_digest TEXT NOT NULL,
     settled_at TEXT NOT NULL
   );`,
  },
];

/** The session tables, in the reader's order on either provider (sessions in creation order: SQLite's rowid, PostgreSQL's seq). */
export const SESSION_TABLES: TableQueries<'sessions' | 'turns' | 'phases' | 'settlements'> = {
  sessions: { sqlite: 'SELECT * FROM sessions ORDER BY rowid', postgresql: 'SELECT * FROM sessions ORDER BY seq' },
  phases: {
    sqlite: 'SELECT * FROM turn_phases ORDER BY turn_key, position',
    postgresql: 'SELECT * FROM turn_phases ORDER BY turn_key COLLATE "C", position',
  },
  turns: {
    sqlite: 'SELECT * FROM turns ORDER BY session_id, turn_index',
    postgresql: 'SELECT * FROM turns ORDER BY session_id COLLATE "C", turn_index',
  },
  settlements: {
    sqlite: 'SELECT * FROM settlements ORDER BY settled_at, turn_key',
    postgresql: 'SELECT * FROM settlements ORDER BY settled_at COLLATE "C", turn_key COLLATE "C"',
  },
};

/** The owner's SQL, by dialect. */
export const SESSION_SQL: OwnerSql<'sessions' | 'turns' | 'phases' | 'settlements'> = {
  sqlite: { migrations: MIGRATIONS },
  postgresql: { component: 'session', migrations: SESSION_PG_MIGRATIONS },
  tables: SESSION_TABLES,
};
