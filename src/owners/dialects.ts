/**
 * An owner's SQL in each dialect, kept in one place beside its port (`<owner>/sql.ts`): the
 * migrations of its SQLite database (one append-only list whose position is `PRAGMA
 * user_version`), its PostgreSQL component (one append-only list, versioned per component in
 * `loopx_schema_versions`), and — for an owner with a historical reader over tables — the reader's
 * query of each table in each dialect (table-rows.ts). The two dialects keep the same columns, so
 * one row decoder (`schema.ts`) proves a row of either well-formed. The provider rows read it (the
 * PostgreSQL row migrates every owner's `postgresql` component); the ports run the statements.
 * Another SQL dialect is one more key here and in each owner's sql.ts.
 */
import type { Migration, PgMigration } from '../store/index.js';
import type { TableQueries } from './table-rows.js';

export interface OwnerSql<K extends string = string> {
  readonly sqlite: { readonly migrations: readonly Migration[] };
  readonly postgresql: { readonly component: string; readonly migrations: readonly PgMigration[] };
  /** The historical reader's query of each table, per dialect. */
  readonly tables?: TableQueries<K>;
}
