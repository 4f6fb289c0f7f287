/**
 * The quota owner's SQL in each dialect, in one place beside its port (port.ts; dialects.ts):
 * `quota.db`'s migrations (the SQLite port and the historical reader), the `quota` component of a
 * PostgreSQL schema (the PostgreSQL port; applied only by `loopx db migrate`) and the historical
 * reader's query. Both have the columns of `quota.db` (instants as canonical ISO text compared
 * bytewise, amounts as BIGINT decoded explicitly), so one row decoder (schema.ts) proves every
 * entry of either well-formed.
 */
import type { Migration, PgMigration } from '../../store/index.js';
import type { OwnerSql } from '../dialects.js';
import type { TableQueries } from '../table-rows.js';

/** `quota.db`: append-only; position + 1 is the `user_version` it produces. */
export const MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE spends (
     effect_id TEXT PRIMARY KEY,
     goal_id TEXT NOT NULL,
     goal_instance_id TEXT NOT NULL,
     amount INTEGER NOT NULL CHECK (amount > 0),
     unit TEXT NOT NULL,
     request_digest TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('written', 'voided')),
     created_at TEXT NOT NULL,
     voided_at TEXT,
     void_reason TEXT
   );
   CREATE INDEX spends_by_goal ON spends (goal_id, created_at);`,
];

/** The `quota` component's tables; text that is compared or ordered is bytewise (`COLLATE "C"`), as in SQLite. */
export const QUOTA_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE spends (
       position BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
       effect_id TEXT COLLATE "C" PRIMARY KEY,
       goal_id TEXT COLLATE "C" NOT NULL,
       goal_instance_id TEXT COLLATE "C" NOT NULL,
       amount BIGINT NOT NULL CHECK (amount > 0),
       unit TEXT COLLATE "C" NOT NULL,
       request_digest TEXT NOT NULL,
       status TEXT NOT NULL CHECK (status IN ('written', 'voided')),
       created_at TEXT COLLATE "C" NOT NULL,
       voided_at TEXT,
       void_reason TEXT
     );
     CREATE INDEX spends_by_goal ON spends (goal_id, created_at);`,
  },
];

/**
 * The ledger's table, in creation order on either provider. PostgreSQL's BIGINT amount is read as a
 * JavaScript number: exact to 2^53, and one beyond it fails its request digest (a finding), never
 * rounded silently into the ledger.
 */
export const QUOTA_TABLES: TableQueries<'spends'> = {
  spends: {
    sqlite: 'SELECT * FROM spends ORDER BY rowid',
    postgresql: 'SELECT *, amount::float8 AS amount FROM spends ORDER BY position',
  },
};

/** The owner's SQL, by dialect. */
export const QUOTA_SQL: OwnerSql<'spends'> = {
  sqlite: { migrations: MIGRATIONS },
  postgresql: { component: 'quota', migrations: QUOTA_PG_MIGRATIONS },
  tables: QUOTA_TABLES,
};
