/**
 * SQLite plumbing (better-sqlite3). The only place the driver is imported. Databases open in WAL
 * mode with a busy timeout so several loopx processes can read while one writes; files are
 * created owner-only. Migrations are one append-only list whose position is the version
 * (`PRAGMA user_version`), applied by an explicit `setup()`.
 */
import Database from 'better-sqlite3';
import { chmodSync, existsSync } from 'node:fs';
import { internal } from '../core/index.js';
import { registerStoreProvider } from './providers.js';

/** The SQLite provider's name in the provider registry: its store identities are `sqlite:<hex>`. */
export const SQLITE_PROVIDER = registerStoreProvider('sqlite');

export type SqliteDatabase = Database.Database;
export type SqliteStatement = Database.Statement;

export interface OpenOptions {
  readonly readonly?: boolean;
  /**
   * `synchronous=FULL` (default) or `NORMAL` (WAL: durable against process crash only). `OFF` is
   * for benchmarks that report the cost of fsync separately; no durable path uses it.
   */
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

export function openSqlite(path: string, options: OpenOptions = {}): SqliteDatabase {
  const isNew = !existsSync(path);
  const db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  if (isNew && !options.readonly) chmodSync(path, 0o600);
  db.pragma('busy_timeout = 10000');
  if (!options.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  }
  db.pragma('foreign_keys = ON');
  return db;
}

/** A migration is SQL run once, in order; its index + 1 is the schema version it produces. */
export type Migration = string;

export function setup(db: SqliteDatabase, migrations: readonly Migration[]): void {
  // Already current: no write transaction. Rewriting user_version took the write lock and an
  // fsync on every open — every daemon read paid it, and waited on any writer for busy_timeout.
  if ((db.pragma('user_version', { simple: true }) as number) === migrations.length) return;
  const apply = db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number;
    if (current > migrations.length) {
      throw internal(
        'schema_too_new',
        `Database schema version ${current} is newer than this loopx (${migrations.length}).`,
        {
          nextAction: 'upgrade loopx',
        },
      );
    }
    for (let v = current; v < migrations.length; v++) db.exec(migrations[v]!);
    db.pragma(`user_version = ${migrations.length}`);
  });
  apply.immediate();
}

/**
 * Set SQLite's process-wide hard heap limit (`PRAGMA hard_heap_limit`): every later allocation
 * beyond it fails with SQLITE_NOMEM instead of growing the process. Returns the limit in force.
 */
export function setSqliteHardHeapLimit(bytes: number): number {
  const db = new Database(':memory:');
  try {
    return Number(db.pragma(`hard_heap_limit = ${Math.floor(bytes)}`, { simple: true }));
  } finally {
    db.close();
  }
}
