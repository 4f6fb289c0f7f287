/**
 * The work owner's SQL in each dialect, in one place beside its provider contract (contract.ts;
 * dialects.ts): the migrations of a Goal's `work.db` (the SQLite provider, the copy reader and the
 * historical reader) and the `work` component of a PostgreSQL schema, where several Goals' stores
 * live side by side under their row keys (the PostgreSQL provider; applied only by `loopx db
 * migrate`). The statements each provider runs stay in its own file (sqlite.ts, postgres.ts).
 */
import type { Migration, PgMigration } from '../../store/index.js';
import type { OwnerSql } from '../dialects.js';

/** Append-only; position + 1 is the `user_version` it produces. */
export const WORK_DB_MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE metadata (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     schema TEXT NOT NULL,
     goal_id TEXT NOT NULL,
     store_identity TEXT NOT NULL,
     incarnation TEXT NOT NULL,
     created_at TEXT NOT NULL);
   CREATE TABLE head (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     cursor INTEGER NOT NULL CHECK (cursor >= 0),
     provider_revision TEXT NOT NULL,
     projection TEXT);
   CREATE TABLE commits (
     cursor INTEGER PRIMARY KEY CHECK (cursor > 0),
     provider_revision TEXT NOT NULL UNIQUE,
     operation_id TEXT NOT NULL UNIQUE,
     request_digest TEXT NOT NULL,
     events TEXT NOT NULL,
     receipt TEXT NOT NULL);`,
  `CREATE TABLE lineage (
     source_store_identity TEXT PRIMARY KEY,
     source_incarnation TEXT NOT NULL,
     source_head_cursor INTEGER NOT NULL CHECK (source_head_cursor >= 0),
     source_provider_revision TEXT NOT NULL,
     source_projection TEXT,
     recovery_id TEXT NOT NULL,
     content_digest TEXT NOT NULL,
     imported_at TEXT NOT NULL);
   CREATE TABLE lineage_commits (
     source_store_identity TEXT NOT NULL REFERENCES lineage (source_store_identity),
     cursor INTEGER NOT NULL CHECK (cursor > 0),
     provider_revision TEXT NOT NULL,
     operation_id TEXT NOT NULL UNIQUE,
     request_digest TEXT NOT NULL,
     events TEXT NOT NULL,
     receipt TEXT NOT NULL,
     PRIMARY KEY (source_store_identity, cursor));`,
];

/** The component `loopx db migrate` knows these tables by. */
export const WORK_PG_COMPONENT = 'work';

/** Append-only; each step applied once, in order, by `migratePostgres`. */
export const WORK_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE work_stores (
       goal_key TEXT PRIMARY KEY,
       schema TEXT NOT NULL,
       goal_id TEXT NOT NULL,
       store_identity TEXT NOT NULL UNIQUE,
       incarnation TEXT NOT NULL UNIQUE,
       created_at TEXT NOT NULL,
       cursor BIGINT NOT NULL CHECK (cursor >= 0),
       provider_revision TEXT NOT NULL,
       projection TEXT,
       fence_id TEXT,
       fence_epoch BIGINT NOT NULL DEFAULT 0 CHECK (fence_epoch >= 0));
     CREATE TABLE work_commits (
       goal_key TEXT NOT NULL REFERENCES work_stores (goal_key),
       cursor BIGINT NOT NULL CHECK (cursor > 0),
       provider_revision TEXT NOT NULL,
       operation_id TEXT NOT NULL,
       request_digest TEXT NOT NULL,
       events TEXT NOT NULL,
       receipt TEXT NOT NULL,
       PRIMARY KEY (goal_key, cursor),
       UNIQUE (goal_key, operation_id));
     CREATE TABLE work_lineage (
       goal_key TEXT NOT NULL REFERENCES work_stores (goal_key),
       seq BIGINT GENERATED ALWAYS AS IDENTITY,
       source_store_identity TEXT NOT NULL,
       source_incarnation TEXT NOT NULL,
       source_head_cursor BIGINT NOT NULL CHECK (source_head_cursor >= 0),
       source_provider_revision TEXT NOT NULL,
       source_projection TEXT,
       recovery_id TEXT NOT NULL,
       content_digest TEXT NOT NULL,
       imported_at TEXT NOT NULL,
       PRIMARY KEY (goal_key, source_store_identity));
     CREATE TABLE work_lineage_commits (
       goal_key TEXT NOT NULL,
       source_store_identity TEXT NOT NULL,
       cursor BIGINT NOT NULL CHECK (cursor > 0),
       provider_revision TEXT NOT NULL,
       operation_id TEXT NOT NULL,
       request_digest TEXT NOT NULL,
       events TEXT NOT NULL,
       receipt TEXT NOT NULL,
       PRIMARY KEY (goal_key, source_store_identity, cursor),
       UNIQUE (goal_key, operation_id),
       FOREIGN KEY (goal_key, source_store_identity) REFERENCES work_lineage (goal_key, source_store_identity));`,
  },
  {
    // One commit as one autocommit statement (one round trip): the same admission, lock, checks and writes as a write transaction.
    version: 2,
    sql: `CREATE FUNCTION loopx_work_commit(
       p_admit_identity TEXT, p_admit_generation BIGINT, p_key TEXT, p_store_identity TEXT, p_incarnation TEXT, p_goal_id TEXT,
       p_fence_id TEXT, p_fence_epoch BIGINT, p_operation_id TEXT, p_request_digest TEXT, p_events TEXT, p_receipt TEXT,
       p_expected_revision TEXT, p_projection TEXT, p_next_fence_id TEXT, p_next_fence_epoch BIGINT)
     RETURNS TABLE (outcome TEXT, head_cursor BIGINT, head_revision TEXT) LANGUAGE plpgsql AS $fn$
     DECLARE
       s RECORD;
       next_cursor BIGINT;
       next_revision TEXT;
     BEGIN
       PERFORM loopx_admit(p_admit_identity, p_admit_generation);
       SELECT w.goal_id, w.store_identity, w.incarnation, w.cursor, w.provider_revision, w.fence_id, w.fence_epoch INTO s
         FROM work_stores w WHERE w.goal_key = p_key FOR UPDATE;
       IF NOT FOUND OR s.store_identity <> p_store_identity OR s.incarnation <> p_incarnation OR s.goal_id <> p_goal_id THEN
         RETURN QUERY SELECT 'work_store_replaced', NULL::BIGINT, NULL::TEXT;
         RETURN;
       END IF;
       IF p_fence_id IS NOT NULL AND (s.fence_id IS NULL OR s.fence_id <> p_fence_id OR s.fence_epoch <> p_fence_epoch) THEN
         RETURN QUERY SELECT 'writer_fenced', NULL::BIGINT, NULL::TEXT;
         RETURN;
       END IF;
       IF EXISTS (SELECT 1 FROM work_commits c WHERE c.goal_key = p_key AND c.operation_id = p_operation_id)
          OR EXISTS (SELECT 1 FROM work_lineage_commits l WHERE l.goal_key = p_key AND l.operation_id = p_operation_id) THEN
         RETURN QUERY SELECT 'operation_id_exists', NULL::BIGINT, NULL::TEXT;
         RETURN;
       END IF;
       IF s.provider_revision <> p_expected_revision THEN
         RETURN QUERY SELECT 'provider_revision_mismatch', NULL::BIGINT, NULL::TEXT;
         RETURN;
       END IF;
       next_cursor := s.cursor + 1;
       next_revision := p_incarnation || ':' || next_cursor::TEXT;
       INSERT INTO work_commits (goal_key, cursor, provider_revision, operation_id, request_digest, events, receipt)
         VALUES (p_key, next_cursor, next_revision, p_operation_id, p_request_digest, p_events, p_receipt);
       UPDATE work_stores w SET cursor = next_cursor, provider_revision = next_revision, projection = p_projection,
           fence_id = p_next_fence_id, fence_epoch = p_next_fence_epoch
         WHERE w.goal_key = p_key AND w.provider_revision = s.provider_revision AND w.incarnation = p_incarnation AND w.fence_epoch = s.fence_epoch;
       IF NOT FOUND THEN
         RAISE EXCEPTION 'loopx: the head moved inside a write transaction' USING ERRCODE = 'LXP01';
       END IF;
       RETURN QUERY SELECT 'applied', next_cursor, next_revision;
     END
     $fn$;`,
  },
  {
    // The JSON columns compressed with lz4 (a batch's events, receipt and head run to kilobytes, and
    // pglz compressing them cost a fifth of the throughput of concurrent batched writers); a server
    // before PostgreSQL 14 or built without lz4 keeps pglz (a notice says so). Rows written before
    // keep their compression; reads take either. EXECUTE: a server before 14 cannot parse the ALTERs.
    version: 3,
    sql: `DO $lz4$
     BEGIN
       IF current_setting('server_version_num')::int < 140000 THEN
         RAISE NOTICE 'loopx: this server has no per-column compression; the work tables keep the default';
         RETURN;
       END IF;
       EXECUTE 'ALTER TABLE work_commits ALTER COLUMN events SET COMPRESSION lz4, ALTER COLUMN receipt SET COMPRESSION lz4';
       EXECUTE 'ALTER TABLE work_stores ALTER COLUMN projection SET COMPRESSION lz4';
       EXECUTE 'ALTER TABLE work_lineage ALTER COLUMN source_projection SET COMPRESSION lz4';
       EXECUTE 'ALTER TABLE work_lineage_commits ALTER COLUMN events SET COMPRESSION lz4, ALTER COLUMN receipt SET COMPRESSION lz4';
     EXCEPTION WHEN feature_not_supported THEN
       RAISE NOTICE 'loopx: this server was built without lz4; the work tables keep pglz';
     END
     $lz4$;`,
  },
];

/** The owner's SQL, by dialect. */
export const WORK_SQL: OwnerSql = {
  sqlite: { migrations: WORK_DB_MIGRATIONS },
  postgresql: { component: WORK_PG_COMPONENT, migrations: WORK_PG_MIGRATIONS },
};
