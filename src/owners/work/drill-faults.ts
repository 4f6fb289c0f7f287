/**
 * The recovery drill's changes to a Goal's SQLite work store, each one the work owner's API
 * refuses by design, kept here with the owner's SQL (runtime/drill/ holds none):
 * - `markWorkStoreNewer`: the store's schema version set to one no loopx wrote, as a newer loopx
 *   would leave it (the drill case "work store of a newer version");
 * - `dropLineageCommit`: one committed transaction taken out of the store's history, as an
 *   import that dropped it would leave it (the test-only drill defect `drop-captured-transaction`).
 * Both name the owner whose store they changed, so the drill finds its findings without naming it.
 */
import { join } from 'node:path';
import { openSqlite } from '../../store/index.js';
import { LAYOUT } from '../layout.js';
import { recovery } from './recovery.js';

function withWorkDb(
  root: string,
  goalId: string,
  fn: (db: ReturnType<typeof openSqlite>) => void,
): { readonly owner: string } {
  const db = openSqlite(join(root, LAYOUT.workDb(goalId)));
  try {
    fn(db);
  } finally {
    db.close();
  }
  return { owner: recovery.name };
}

/** The Goal's work store in `root` says it is of a schema version this loopx does not know. */
export const markWorkStoreNewer = (root: string, goalId: string): { readonly owner: string } =>
  withWorkDb(root, goalId, (db) => db.pragma('user_version = 999'));

/** The Goal's work store in `root` loses its committed transaction at `cursor` from its history. */
export const dropLineageCommit = (root: string, goalId: string, cursor: number): { readonly owner: string } =>
  withWorkDb(root, goalId, (db) => db.prepare('DELETE FROM lineage_commits WHERE cursor = ?').run(cursor));
