/**
 * The scheduler owner's SQL in each dialect, in one place beside its port (port.ts; dialects.ts):
 * `scheduler.db`'s migrations (the SQLite port and the historical reader), the `scheduler`
 * component of a PostgreSQL schema (the PostgreSQL port; applied only by `loopx db migrate`) and
 * the historical reader's query. The same columns in both, so the same decoder (schema.ts) proves
 * every row well-formed: instants as TEXT in canonical ISO form compared bytewise (`COLLATE "C"`,
 * as SQLite compares them), `enabled` as INTEGER 0/1 (which `pg` returns as a number); `seq` keeps
 * creation order (SQLite's rowid).
 */
import type { Migration, PgMigration } from '../../store/index.js';
import type { OwnerSql } from '../dialects.js';
import type { TableQueries } from '../table-rows.js';

/** `scheduler.db`: append-only; position + 1 is the `user_version` it produces. */
export const MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE timers (
     timer_id TEXT PRIMARY KEY,
     goal_id TEXT NOT NULL,
     cadence TEXT NOT NULL,
     next_due_at TEXT NOT NULL,
     enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
     reset_token TEXT NOT NULL,
     last_fired_due_at TEXT,
     create_digest TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX timers_due ON timers (enabled, next_due_at);`,
];

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

/** The timers' table, in creation order on either provider. */
export const SCHEDULER_TABLES: TableQueries<'timers'> = {
  timers: { sqlite: 'SELECT * FROM timers ORDER BY rowid', postgresql: 'SELECT * FROM timers ORDER BY seq' },
};

/** The owner's SQL, by dialect. */
export const SCHEDULER_SQL: OwnerSql<'timers'> = {
  sqlite: { migrations: MIGRATIONS },
  postgresql: { component: 'scheduler', migrations: SCHEDULER_PG_MIGRATIONS },
  tables: SCHEDULER_TABLES,
};
