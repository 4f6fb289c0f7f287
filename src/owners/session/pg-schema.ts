/**
 * The session owner's PostgreSQL tables (component `session`), applied only by `loopx db migrate`
 * (src/runtime/store-config.ts PG_COMPONENTS). The same columns as `sessions.db` (schema.ts), so
 * the same row decoders prove every row well-formed: instants as TEXT in canonical ISO form,
 * counters as INTEGER (which `pg` returns as numbers). `seq` keeps creation order (SQLite's rowid).
 */
import type { PgMigration } from '../../store/index.js';

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
