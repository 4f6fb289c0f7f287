/**
 * The effect owner's SQL in each dialect, in one place beside its port (port.ts; dialects.ts):
 * `effects.db`'s migrations (the SQLite port and the historical reader), the `effect` component of
 * a PostgreSQL schema (the PostgreSQL port; applied only by `loopx db migrate`) and the historical
 * reader's queries. Both dialects have the same columns (instants as canonical ISO text, JSON as
 * canonical text), so one row decoder (schema.ts) proves a row of either well-formed; creation and
 * outbox order are identity columns in PostgreSQL, the rowid in SQLite.
 */
import type { Migration, PgMigration } from '../../store/index.js';
import type { OwnerSql } from '../dialects.js';
import type { TableQueries } from '../table-rows.js';

/** `effects.db`: append-only; position + 1 is the `user_version` it produces. */
export const MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE effects (
     operation_id TEXT PRIMARY KEY,
     idempotency_key TEXT NOT NULL UNIQUE,
     goal_id TEXT NOT NULL,
     kind TEXT NOT NULL,
     target TEXT NOT NULL,
     intent TEXT NOT NULL,
     intent_digest TEXT NOT NULL,
     outcome TEXT NOT NULL CHECK (outcome IN ('pending', 'committed', 'absent', 'unknown', 'rejected', 'superseded')),
     receipt TEXT,
     attempt INTEGER NOT NULL CHECK (attempt >= 0),
     dispatched_at TEXT,
     hold TEXT,
     reconcile_attempts INTEGER NOT NULL CHECK (reconcile_attempts >= 0),
     created_at TEXT NOT NULL,
     settled_at TEXT
   );
   CREATE INDEX effects_by_goal ON effects (goal_id);
   CREATE TABLE outbox (
     operation_id TEXT PRIMARY KEY REFERENCES effects (operation_id),
     enqueued_at TEXT NOT NULL
   );
   CREATE TABLE effect_history (
     operation_id TEXT NOT NULL REFERENCES effects (operation_id),
     seq INTEGER NOT NULL CHECK (seq >= 1),
     event TEXT NOT NULL CHECK (event IN ('intent', 'dispatch', 'settle', 'hold', 'reissue')),
     outcome TEXT NOT NULL,
     receipt TEXT,
     reason TEXT,
     at TEXT NOT NULL,
     PRIMARY KEY (operation_id, seq)
   ) WITHOUT ROWID;`,
];

/** The `effect` component's tables; text that is compared or ordered is bytewise (`COLLATE "C"`), as in SQLite. */
export const EFFECT_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE effects (
       position BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
       operation_id TEXT COLLATE "C" PRIMARY KEY,
       idempotency_key TEXT COLLATE "C" NOT NULL UNIQUE,
       goal_id TEXT COLLATE "C" NOT NULL,
       kind TEXT NOT NULL,
       target TEXT NOT NULL,
       intent TEXT NOT NULL,
       intent_digest TEXT NOT NULL,
       outcome TEXT NOT NULL CHECK (outcome IN ('pending', 'committed', 'absent', 'unknown', 'rejected', 'superseded')),
       receipt TEXT,
       attempt INTEGER NOT NULL CHECK (attempt >= 0),
       dispatched_at TEXT,
       hold TEXT,
       reconcile_attempts INTEGER NOT NULL CHECK (reconcile_attempts >= 0),
       created_at TEXT NOT NULL,
       settled_at TEXT
     );
     CREATE INDEX effects_by_goal ON effects (goal_id, position);
     CREATE TABLE outbox (
       position BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
       operation_id TEXT COLLATE "C" PRIMARY KEY REFERENCES effects (operation_id),
       enqueued_at TEXT NOT NULL
     );
     CREATE TABLE effect_history (
       operation_id TEXT COLLATE "C" NOT NULL REFERENCES effects (operation_id),
       seq INTEGER NOT NULL CHECK (seq >= 1),
       event TEXT NOT NULL CHECK (event IN ('intent', 'dispatch', 'settle', 'hold', 'reissue')),
       outcome TEXT NOT NULL,
       receipt TEXT,
       reason TEXT,
       at TEXT NOT NULL,
       PRIMARY KEY (operation_id, seq)
     );`,
  },
];

/** The journal's tables. */
export type EffectTable = 'effects' | 'outbox' | 'history';

/** The journal's tables, in the reader's order on either provider (creation order: SQLite's rowid, PostgreSQL's position). */
export const EFFECT_TABLES: TableQueries<EffectTable> = {
  effects: { sqlite: 'SELECT * FROM effects ORDER BY rowid', postgresql: 'SELECT * FROM effects ORDER BY position' },
  outbox: { sqlite: 'SELECT * FROM outbox ORDER BY rowid', postgresql: 'SELECT * FROM outbox ORDER BY position' },
  history: {
    sqlite: 'SELECT * FROM effect_history ORDER BY operation_id, seq',
    postgresql: 'SELECT * FROM effect_history ORDER BY operation_id, seq',
  },
};

/** The owner's SQL, by dialect. */
export const EFFECT_SQL: OwnerSql<EffectTable> = {
  sqlite: { migrations: MIGRATIONS },
  postgresql: { component: 'effect', migrations: EFFECT_PG_MIGRATIONS },
  tables: EFFECT_TABLES,
};
