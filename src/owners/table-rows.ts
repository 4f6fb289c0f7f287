/**
 * The rows an owner's historical reader decodes, from either provider: one query per table for
 * SQLite (a copied database) and one for PostgreSQL (the root's schema, read inside the set's one
 * snapshot). The reader decodes the same row shapes from both — the PostgreSQL tables have the
 * SQLite columns, plus an identity column that keeps creation order where SQLite has its rowid —
 * so a capture of either yields the same items, findings and export.
 */
import type { PgQuery, SqliteDatabase } from '../store/index.js';

/** Per table, its rows in the reader's order on each provider. */
export type TableQueries<K extends string> = Readonly<
  Record<K, { readonly sqlite: string; readonly postgresql: string }>
>;

/** A table's rows (plain objects, columns by name). */
export type TableRows<K extends string> = (table: K) => Record<string, unknown>[];

/** The rows of a (copied) SQLite database. */
export const sqliteRows =
  <K extends string>(db: SqliteDatabase, tables: TableQueries<K>): TableRows<K> =>
  (table) =>
    db.prepare(tables[table].sqlite).all() as Record<string, unknown>[];

/** Every table's rows read through `q` (inside one transaction: one snapshot), then handed out. */
export async function pgRows<K extends string>(q: PgQuery, tables: TableQueries<K>): Promise<TableRows<K>> {
  const read = new Map<K, Record<string, unknown>[]>();
  for (const table of Object.keys(tables) as K[]) read.set(table, await q(tables[table].postgresql));
  return (table) => read.get(table) ?? [];
}
