/**
 * The scheduler owner's PostgreSQL table (component `scheduler`), applied only by `loopx db
 * migrate` (src/runtime/store-config.ts PG_COMPONENTS). The same columns as `scheduler.db`
 * (schema.ts), so the same decoder proves every row well-formed: instants as TEXT in canonical ISO
 * form compared bytewise (`COLLATE "C"`, as SQLite compares them), `enabled` as INTEGER 0/1 (which
 * `pg` returns as a number). `seq` keeps creation order (SQLite's rowid).
 */
import type { PgMigration } from '../../store/index.js';

export const SCHEDULER_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE timers (
     seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
     timer_id TEXT PRIMARY KEY,
     goal_id TEXT NOT NULL,
     cadence TEXT NOT NULL,
     next_due_at TEXT COLLATE "C" NOT NULL,
     enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
     reset_token TEXT NOT NULL,
     last_fired_due_at TEXT,
     create_digest TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX timers_due ON timers (enabled, next_due_at, seq);
   CREATE INDEX timers_by_goal ON timers (goal_id, seq);`,
  },
];
