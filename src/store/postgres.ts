/**
 * PostgreSQL plumbing for the owners' PostgreSQL providers: a pool whose every connection works
 * in one installation's own schema, transactions (and single autocommit writes) whose commit point is the only ambiguous point,
 * versioned migrations applied only by an explicit `loopx db migrate` (a provider refuses a schema
 * it was not migrated to, or one newer than it knows), the server's identity (what a restore
 * changes), and database URLs given by reference (`env:NAME`, read at run time, never stored).
 * `pg` never crosses this file: the owners see `PgDatabase` and `PgQuery`.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { internal, isLoopxError, rejected, usageError, type LoopxError } from '../core/index.js';
import {
  INSTALLATION_COMPONENT,
  INSTALLATION_MIGRATIONS,
  LIVE_TIMELINE,
  ensureInstallation,
} from './pg-installation.js';
import { registerStoreProvider } from './providers.js';

export const POSTGRESQL_PROVIDER = 'postgresql';
registerStoreProvider(POSTGRESQL_PROVIDER);

/** One statement in a transaction or a read: rows as plain objects. */
export type PgQuery = <R extends Record<string, unknown> = Record<string, unknown>>(
  sql: string,
  params?: readonly unknown[],
) => Promise<R[]>;

export interface PgOptions {
  /** The connection URL (resolved from its reference by `databaseUrlFrom`; never stored by loopx). */
  readonly url: string;
  /** The installation's schema: every connection's `search_path`, and where its tables live. */
  readonly schema: string;
  /** The `env:NAME` reference the URL was read from, when there is one: what a next action names. */
  readonly reference?: string;
  /** Pool size (default 4). */
  readonly max?: number;
  /** Idle connections do not keep the process alive (a CLI process exits when its work is done). */
  readonly allowExitOnIdle?: boolean;
  /** Further startup settings of every connection (`-c name=value`; plain values only). */
  readonly settings?: Readonly<Record<string, string>>;
  /**
   * The installation the opener's root is bound to (its store configuration): a schema holding an
   * older one admits none of this database's writers (`admissionOf`). Only ever a refusal, never a grant.
   */
  readonly binding?: InstallationBinding;
}

/** An installation's identity and restore generation, as a root records the one it is bound to. */
export interface InstallationBinding {
  readonly store_identity: string;
  readonly restore_generation: number;
}

/** The server a store lives on, as a restore changes it: a physical restore keeps the system identifier but not the timeline or the database. */
export interface PgServerIdentity {
  readonly system_identifier: string;
  readonly timeline: number;
  readonly database_oid: number;
}

/** A COMMIT whose outcome the client cannot know (the connection failed at the commit point). */
export class PgCommitAmbiguous extends Error {
  constructor(cause: unknown) {
    super('the connection failed at COMMIT', { cause });
  }
}

/** SQLSTATEs of a transaction another one beat (serialization failure, deadlock): nothing was written. */
const RETRYABLE = new Set(['40001', '40P01']);

export const isUniqueViolation = (e: unknown): boolean => (e as { code?: unknown })?.code === '23505';
export const isRetryableConflict = (e: unknown): boolean => RETRYABLE.has(String((e as { code?: unknown })?.code));

/** A COMMIT the server answered with an ordinary error (the transaction rolled back), as opposed to a lost or ended connection. */
function commitRefused(e: unknown): boolean {
  const { code, severity } = e as { code?: unknown; severity?: unknown };
  if (typeof code !== 'string' || typeof severity !== 'string') return false;
  if (severity === 'FATAL' || severity === 'PANIC') return false;
  return !code.startsWith('08') && !code.startsWith('57');
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** A schema name as SQL: checked against a plain identifier pattern (it is interpolated, never a parameter). */
export function schemaIdent(schema: string): string {
  if (!SCHEMA_NAME.test(schema))
    throw usageError(
      'pg_schema_name_invalid',
      `"${schema}" is not a plain schema name (lowercase letters, digits and _; at most 63).`,
      'choose a schema name like loopx_main',
    );
  return `"${schema}"`;
}

export interface PgDatabase {
  readonly schema: string;
  /** The `env:NAME` reference it was opened through, when known (see `PgOptions.reference`). */
  readonly reference?: string;
  /** See `PgOptions.binding`. */
  readonly binding?: InstallationBinding;
  /** One statement outside any explicit transaction. */
  query: PgQuery;
  /**
   * One WRITE statement in its own implicit transaction (autocommit: one round trip). An error the
   * server answered proves nothing landed (it rejects with that error); a connection lost or ended
   * once the statement was sent rejects with `PgCommitAmbiguous` — that statement is its own commit
   * point. `name` prepares it once per connection (a hot statement: parsed and planned once).
   */
  autocommit(sql: string, params: readonly unknown[], name?: string): Promise<Record<string, unknown>[]>;
  /**
   * `body` in one transaction at `isolation`: it commits when `body` resolves, rolls back when it
   * rejects (the rejection passes through; nothing was written). A COMMIT the connection failed
   * under rejects with `PgCommitAmbiguous`.
   */
  transaction<T>(
    body: (q: PgQuery) => Promise<T>,
    options?: {
      readonly isolation?: 'read committed' | 'repeatable read' | 'serializable';
      readonly readOnly?: boolean;
    },
  ): Promise<T>;
  serverIdentity(): Promise<PgServerIdentity>;
  /**
   * LISTEN on `channel` (a plain identifier) on a connection of its own, calling `onNotify` for
   * each notification — a wake-up, never authority: whoever listens still reads and decides. A lost
   * connection ends the listening silently (the listener polls as well). Resolves to its stop.
   */
  listen(channel: string, onNotify: () => void): Promise<() => void>;
  close(): Promise<void>;
}

/** The URL with the schema as its connections' search_path, beside any startup options the URL carries already. */
function withSearchPath(url: string, ident: string, settings: Readonly<Record<string, string>> = {}): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw usageError(
      'database_url_invalid',
      'The database URL the environment variable holds is not a URL.',
      'set it to a URL like postgres://USER@HOST:5432/DATABASE',
    );
  }
  const given = u.searchParams.get('options');
  const extra = Object.entries(settings).map(([k, v]) => {
    if (!/^[a-z_.]+$/.test(k) || !/^[A-Za-z0-9_.:-]+$/.test(v))
      throw internal('pg_setting_invalid', 'A startup setting is not a plain name and value.');
    return ` -c ${k}=${v}`;
  });
  u.searchParams.set('options', `${given ? `${given} ` : ''}-c search_path=${ident}${extra.join('')}`);
  return u.toString();
}

/**
 * The `pg` driver, loaded on first use: most processes (every command on a SQLite root, the
 * verify worker) never open a database and should not pay its load (~60 ms). `pg` is CommonJS,
 * so a synchronous require keeps `openPostgres` synchronous.
 */
let driver: typeof pg | undefined;
const pgDriver = (): typeof pg => (driver ??= createRequire(import.meta.url)('pg') as typeof pg);

/**
 * One statement on `client` as a `pg.Query` built from its text, named after construction: the
 * config-object form of `client.query` (the only one that takes a name) first copies its argument
 * property by property, a few microseconds on every commit. Rows, errors and preparation are the same.
 */
function submit(
  client: pg.PoolClient,
  sql: string,
  params: readonly unknown[],
  name: string | undefined,
): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const query = new (pgDriver().Query)(sql, params as unknown[], (error, result) =>
      error ? reject(error) : resolve(result.rows as Record<string, unknown>[]),
    );
    if (name !== undefined) (query as { name?: string }).name = name;
    client.query(query);
  });
}

/** Statements on one connection of the pool, rows as plain objects. */
const queryOn =
  (client: pg.PoolClient): PgQuery =>
  async <R extends Record<string, unknown>>(sql: string, params: readonly unknown[] = []) =>
    (await client.query<R>(sql, params as unknown[])).rows;

/** `PgDatabase.autocommit` on a connection of `pool`; one that failed after sending is discarded. */
async function autocommitOn(
  pool: pg.Pool,
  sql: string,
  params: readonly unknown[],
  name: string | undefined,
): Promise<Record<string, unknown>[]> {
  const client = await pool.connect();
  let broken = false;
  try {
    return await submit(client, sql, params, name);
  } catch (e) {
    if (commitRefused(e)) throw e;
    broken = true;
    throw new PgCommitAmbiguous(e);
  } finally {
    client.release(broken);
  }
}

/** `PgDatabase.transaction` on a connection of `pool`; one left in doubt (rollback or COMMIT failed) is discarded. */
async function transactionOn<T>(
  pool: pg.Pool,
  body: (q: PgQuery) => Promise<T>,
  o: Parameters<PgDatabase['transaction']>[1] = {},
): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query(
      `BEGIN ISOLATION LEVEL ${(o.isolation ?? 'read committed').toUpperCase()}${o.readOnly ? ' READ ONLY' : ''}`,
    );
    let value: T;
    try {
      value = await body(queryOn(client));
    } catch (e) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw e;
    }
    try {
      await client.query('COMMIT');
    } catch (e) {
      broken = true;
      // A refusal of the COMMIT itself (a deferred constraint, a serialization failure) proves nothing landed;
      // a connection lost or ended at the commit point (no answer, class 08 or 57, FATAL) proves nothing either way.
      if (commitRefused(e)) throw e;
      throw new PgCommitAmbiguous(e);
    }
    return value;
  } finally {
    client.release(broken);
  }
}

/** `PgDatabase.listen` on a connection of `pool`'s own, held until stopped. */
async function listenOn(pool: pg.Pool, channel: string, onNotify: () => void): Promise<() => void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel))
    throw internal('pg_channel_invalid', 'A notification channel is a plain identifier.');
  const client = await pool.connect();
  const handler = (m: { channel: string }) => {
    if (m.channel === channel) onNotify();
  };
  client.on('notification', handler);
  try {
    await client.query(`LISTEN ${channel}`);
  } catch (e) {
    client.off('notification', handler);
    client.release(true);
    throw e;
  }
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    client.off('notification', handler);
    client.release(true); // the connection goes, and its LISTEN with it
  };
}

/** Opens a pool on one installation's schema (nothing is created: `migratePostgres` does that). */
export function openPostgres(options: PgOptions): PgDatabase {
  const ident = schemaIdent(options.schema);
  // The schema is every connection's search_path from its start (a startup option: no round trip per use).
  const pool = new (pgDriver().Pool)({
    connectionString: withSearchPath(options.url, ident, options.settings),
    max: options.max ?? 4,
    application_name: 'loopx',
    allowExitOnIdle: options.allowExitOnIdle ?? false,
  });
  // An idle client that loses its server must not crash the process; its next use fails typed.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return {
    schema: options.schema,
    ...(options.reference !== undefined ? { reference: options.reference } : {}),
    ...(options.binding !== undefined ? { binding: options.binding } : {}),
    async query(sql, params) {
      const client = await pool.connect();
      try {
        return await queryOn(client)(sql, params);
      } finally {
        client.release();
      }
    },
    autocommit: (sql, params, name) => autocommitOn(pool, sql, params, name),
    transaction: (body, o) => transactionOn(pool, body, o),
    async serverIdentity() {
      const [row] = await this.query<{ system_identifier: string; timeline: number; database_oid: number }>(
        `SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system_identifier,
                ${LIVE_TIMELINE} AS timeline,
                (SELECT oid::int FROM pg_database WHERE datname = current_database()) AS database_oid`,
      );
      if (!row) throw internal('pg_server_identity_unreadable', 'The PostgreSQL server did not say who it is.');
      return {
        system_identifier: row.system_identifier,
        timeline: Number(row.timeline),
        database_oid: Number(row.database_oid),
      };
    },
    listen: (channel, onNotify) => listenOn(pool, channel, onNotify),
    async close() {
      await pool.end();
    },
  };
}

/**
 * A failure of the server or the connection as the operator can act on it — never the URL, never
 * a password: the server unreachable, the role refused, or the role lacking a privilege on the
 * schema. Anything else is an internal error carrying only its SQLSTATE.
 */
export function pgFailure(e: unknown, schema: string): LoopxError {
  if (isLoopxError(e)) return e;
  const code = String((e as { code?: unknown })?.code ?? '');
  if (
    ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET'].includes(code) ||
    code.startsWith('08') ||
    code === '57P03'
  ) {
    return rejected('pg_unreachable', 'The PostgreSQL server named by the database URL does not answer.', {
      nextAction: 'start the server, or correct the URL in the environment variable the root names',
    });
  }
  if (code.startsWith('28') || code === '3D000') {
    return rejected('pg_auth_failed', 'The PostgreSQL server refused the role or database the URL names.', {
      nextAction: 'correct the role or database in the URL the root’s environment variable holds',
    });
  }
  if (code === '42501' || code === '3F000') {
    return rejected('pg_permission_denied', `The database role may not use schema ${schema}.`, {
      nextAction: `grant the role USAGE and CREATE on schema ${schema}, or give this root a schema the role owns`,
      details: { schema, sqlstate: code },
    });
  }
  return internal('pg_error', 'The PostgreSQL server refused the request.', {
    cause: e,
    details: { sqlstate: code || null },
  });
}

/** One step of a component's schema: applied once, in order, by `migratePostgres`. */
export interface PgMigration {
  readonly version: number;
  readonly sql: string;
}

const VERSIONS_TABLE = `CREATE TABLE IF NOT EXISTS loopx_schema_versions (
  component TEXT PRIMARY KEY,
  version INTEGER NOT NULL CHECK (version >= 1),
  applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`;

const latest = (migrations: readonly PgMigration[]): number => migrations.reduce((n, m) => Math.max(n, m.version), 0);

/**
 * `loopx db migrate` for one component (an owner's tables): creates the schema if it can, then
 * applies the migrations it lacks in one transaction, serialised with any other migrator by an
 * advisory lock. Returns the versions before and after. A schema newer than these migrations is
 * refused (`pg_schema_version_unknown`), never rewritten.
 */
export async function migratePostgres(
  db: PgDatabase,
  component: string,
  migrations: readonly PgMigration[],
): Promise<{ from: number; to: number }> {
  return migrate(db, component, migrations).catch((e: unknown) => {
    throw pgFailure(e, db.schema);
  });
}

async function migrate(
  db: PgDatabase,
  component: string,
  migrations: readonly PgMigration[],
): Promise<{ from: number; to: number }> {
  return db.transaction(async (q) => {
    // One migrator per schema at a time (the versions table and the schema itself are shared by its components).
    await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`loopx:${db.schema}`]);
    await q(`CREATE SCHEMA IF NOT EXISTS ${schemaIdent(db.schema)}`);
    await q(VERSIONS_TABLE);
    // Every migrated schema has its installation row (what restores are told apart by) before any component's tables.
    const installation = await applyMigrations(q, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS);
    await ensureInstallation(q);
    return component === INSTALLATION_COMPONENT ? installation : applyMigrations(q, component, migrations);
  });
}

/** The steps of `component` the schema lacks, applied in order and recorded; a newer schema is refused. */
async function applyMigrations(
  q: PgQuery,
  component: string,
  migrations: readonly PgMigration[],
): Promise<{ from: number; to: number }> {
  const [row] = await q<{ version: number }>('SELECT version FROM loopx_schema_versions WHERE component = $1', [
    component,
  ]);
  const from = row?.version ?? 0;
  const to = latest(migrations);
  if (from > to) throw schemaVersionUnknown(component, from, to);
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) if (m.version > from) await q(m.sql);
  if (to > from) {
    await q(
      `INSERT INTO loopx_schema_versions (component, version) VALUES ($1, $2)
       ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, applied_at = now()`,
      [component, to],
    );
  }
  return { from, to };
}

/** What a provider asks before its first read or write: the component's schema is exactly the version it knows. */
export async function requireSchemaVersion(
  db: PgDatabase,
  component: string,
  migrations: readonly PgMigration[],
): Promise<void> {
  return checkVersion(db, component, migrations).catch((e: unknown) => {
    throw pgFailure(e, db.schema);
  });
}

async function checkVersion(db: PgDatabase, component: string, migrations: readonly PgMigration[]): Promise<void> {
  const [exists] = await db.query<{ present: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS present`, [
    `${schemaIdent(db.schema)}.loopx_schema_versions`,
  ]);
  const rows = exists?.present
    ? await db.query<{ version: number }>('SELECT version FROM loopx_schema_versions WHERE component = $1', [component])
    : [];
  const have = rows[0]?.version ?? 0;
  const want = latest(migrations);
  if (have === want) return;
  if (have > want) throw schemaVersionUnknown(component, have, want);
  throw rejected(
    'pg_schema_not_migrated',
    `The ${component} tables in schema ${db.schema} are at version ${have}; this loopx needs version ${want}.`,
    {
      nextAction: 'apply the migrations: loopx db migrate',
      details: { component, schema: db.schema, have, want },
    },
  );
}

const schemaVersionUnknown = (component: string, have: number, known: number) =>
  rejected(
    'pg_schema_version_unknown',
    `The ${component} tables are at version ${have}, newer than this loopx knows (${known}); it will not read or change them.`,
    {
      nextAction: 'upgrade loopx to the version that migrated this database',
      details: { component, have, known },
    },
  );

/**
 * A database URL given by reference: `env:NAME` names the environment variable that holds it, read
 * now, at run time. The reference is what configuration stores; the URL (and any password in it)
 * never is.
 */
export function databaseUrlFrom(reference: string, env: NodeJS.ProcessEnv = process.env): string {
  const m = /^env:([A-Za-z_][A-Za-z0-9_]*)$/.exec(reference);
  if (!m)
    throw usageError(
      'database_url_ref_invalid',
      'A database URL is given by reference: env:NAME, the environment variable that holds it.',
      'pass --database-url env:LOOPX_DATABASE_URL',
    );
  const url = env[m[1]!];
  if (url === undefined || url === '') {
    throw rejected(
      'database_url_missing',
      `The environment variable ${m[1]} that should hold the database URL is not set.`,
      {
        nextAction: `set it before running loopx: export ${m[1]}=postgres://USER@HOST:5432/DATABASE`,
      },
    );
  }
  return url;
}
