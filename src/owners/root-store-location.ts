/**
 * Where a root keeps its Goal-scoped state, as its configuration says (namespace `store`, written
 * once by `loopx init --store`): SQLite files in the root (the default), or a PostgreSQL schema.
 * A root on PostgreSQL gets one pool per (URL, schema) per process, its URL read from the
 * configured `env:NAME` reference when first opened (a missing variable: `database_url_missing`).
 * Idle connections never keep a process alive; owners' ports close themselves, not the pool.
 * A Goal may keep its work elsewhere than its root (the work owner's record, `work/location.ts`);
 * its database is pooled here the same way (`postgresAt`).
 */
import { rejected } from '../core/index.js';
import { POSTGRESQL_PROVIDER, databaseUrlFrom, openPostgres, type PgDatabase } from '../store/index.js';
import * as configOwner from './config/index.js';
import { recordedWorkLocations } from './work/index.js';

/** The namespace of a root's configuration that says where its Goal state lives (`loopx init --store`): the config owner's. */
export const STORE_CONFIG_NAMESPACE = configOwner.STORE_CONFIG_NAMESPACE;

export type RootStoreLocation = { readonly provider: 'sqlite' } | { readonly provider: 'postgresql'; readonly database_url: string; readonly schema: string };

/** Where the root at `root` keeps its Goal state. */
export function rootStoreLocation(root: string): RootStoreLocation {
  const ns = configOwner.openFileConfigStore(root).read().value.namespaces[STORE_CONFIG_NAMESPACE] as { provider?: unknown; database_url?: unknown; schema?: unknown } | undefined;
  if (ns?.provider === POSTGRESQL_PROVIDER && typeof ns.database_url === 'string' && typeof ns.schema === 'string') {
    return { provider: 'postgresql', database_url: ns.database_url, schema: ns.schema };
  }
  return { provider: 'sqlite' };
}

const pools = new Map<string, PgDatabase>();

/** The database of a PostgreSQL location (shared in this process), its URL read from its reference now. */
export function postgresAt(location: { readonly database_url: string; readonly schema: string }): PgDatabase {
  const url = databaseUrlFrom(location.database_url);
  const key = `${location.schema}\n${url}`;
  let db = pools.get(key);
  if (db === undefined) {
    db = openPostgres({ url, schema: location.schema, reference: location.database_url, allowExitOnIdle: true });
    pools.set(key, db);
  }
  return db;
}

/** The root's PostgreSQL database (shared in this process), or undefined for a root on SQLite. */
export function rootPostgres(root: string): PgDatabase | undefined {
  const location = rootStoreLocation(root);
  return location.provider === 'postgresql' ? postgresAt(location) : undefined;
}

/** Ends every pool this process opened for roots (a daemon's shutdown): a later use opens a new one, admitted anew. */
export async function closeRootPools(): Promise<void> {
  const open = [...pools.values()];
  pools.clear();
  await Promise.all(open.map((db) => db.close().catch(() => undefined)));
}

/**
 * Refuses a root whose Goal state is not all in SQLite files, for the paths that read and write
 * those files directly (backup capture, recovery, adoption): they would miss the state, not
 * protect it. That is a root on PostgreSQL, or a root on SQLite one of whose Goals keeps its work
 * in PostgreSQL (`goal create --work-provider postgresql`).
 */
export function refuseNonSqliteRoot(root: string, operation: string): void {
  let provider: string;
  try {
    provider = rootStoreLocation(root).provider;
  } catch {
    return; // an unreadable configuration is the operation's own finding, not this refusal
  }
  // A Goal's record that cannot be read is refused as it is: where that Goal's work lives is unknown.
  const off = provider === 'sqlite' ? recordedWorkLocations(root).find((r) => r.location.provider !== 'sqlite') : undefined;
  if (provider === 'sqlite' && off === undefined) return;
  const where = off === undefined ? 'its Goal state' : `the work of Goal ${off.goal_id}`;
  const what = off?.location.provider ?? provider;
  throw providerUnsupported(`This root keeps ${where} in ${what}; ${operation} works only on roots whose Goal state is in SQLite.`, {
    provider: what,
    operation,
    ...(off === undefined ? {} : { goal_id: off.goal_id }),
  });
}

/** The one refusal of an operation that cannot cover where some Goal state lives. */
const providerUnsupported = (message: string, details: Record<string, unknown>) =>
  rejected('store_provider_unsupported', message, { nextAction: 'protect this root with its database service’s own backups', details });
