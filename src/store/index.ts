/** Public API of store: database plumbing. Drivers never cross this boundary as contract types. */
export { openSqlite, setup, type Migration, type OpenOptions, type SqliteDatabase, type SqliteStatement } from './sqlite.js';
export { countSqliteTableRows, snapshotSqliteDatabase, type SqliteSnapshotFacts } from './snapshot.js';
