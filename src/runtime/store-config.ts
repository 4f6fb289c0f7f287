/**
 * Where a root keeps its Goals' state: SQLite files in the root (the default), or PostgreSQL —
 * chosen once, at `loopx init --store postgresql --database-url env:NAME`, and kept in the root's
 * machine configuration (namespace `store`) as a provider, a URL *reference* and the
 * installation's schema; the URL itself is read from the named environment variable at run time
 * and never written anywhere. `loopx db migrate` applies the PostgreSQL components' migrations
 * (PG_COMPONENTS: each owner's PostgreSQL provider adds its tables there).
 */
import { randomBytes } from 'node:crypto';
import { conflict } from '../core/index.js';
import {
  INSTALLATION_COMPONENT,
  INSTALLATION_MIGRATIONS,
  POSTGRESQL_PROVIDER,
  databaseUrlFrom,
  migratePostgres,
  openPostgres,
  schemaIdent,
  type PgDatabase,
  type PgMigration,
} from '../store/index.js';
import {
  config as configOwner,
  goal as goalOwner,
  registry as registryOwner,
  rootStoreLocation,
  STORE_CONFIG_NAMESPACE,
  type RootStoreLocation,
  effect as effectOwner,
  quota as quotaOwner,
  scheduler as schedulerOwner,
  session as sessionOwner,
  work,
} from '../owners/index.js';
import { refuseRecoveryInProgress } from '../recovery/index.js';
import { withAdmission } from './admission.js';

export const STORE_NAMESPACE = STORE_CONFIG_NAMESPACE;
export const STORE_CONFIG_SCHEMA = 'loopx_store_config_v0';

/** Where the root keeps its Goal state (the owners read it: `rootStoreLocation`). */
export type StoreConfig = RootStoreLocation;

/** The PostgreSQL components `loopx db migrate` migrates: an owner's provider adds `{ component, migrations }` here. */
export const PG_COMPONENTS: { readonly component: string; readonly migrations: readonly PgMigration[] }[] = [
  { component: 'work', migrations: work.WORK_PG_MIGRATIONS },
  { component: 'effect', migrations: effectOwner.EFFECT_PG_MIGRATIONS },
  { component: 'quota', migrations: quotaOwner.QUOTA_PG_MIGRATIONS },
  { component: 'session', migrations: sessionOwner.SESSION_PG_MIGRATIONS },
  { component: 'scheduler', migrations: schedulerOwner.SCHEDULER_PG_MIGRATIONS },
];

// A type, not an interface: configuration values are plain JSON objects.
type StoreNamespace = {
  readonly schema_version: typeof STORE_CONFIG_SCHEMA;
  readonly provider: string;
  readonly database_url?: string;
  readonly schema?: string;
};

/**
 * The root's configuration and Goals only — not its SQLite session and effect stores, which a
 * root on PostgreSQL does not open (openRootOwners refuses it) — as the store choice needs them.
 */
function withStoreOwners<T>(root: string, fn: (owners: { config: configOwner.ConfigStore; goals: goalOwner.GoalStore }) => T, write?: string): Promise<T> {
  refuseRecoveryInProgress(root, { writer: write !== undefined });
  const open = () => {
    const registry = registryOwner.openFileRegistry(root);
    return fn({ config: configOwner.openFileConfigStore(root), goals: goalOwner.openFileGoalStore(root, { registry }) });
  };
  // A writer of the root is admitted like any other (refused while a backup holds the root closed).
  return write === undefined ? Promise.resolve().then(open) : withAdmission(root, write, async () => open());
}

/** The root's store, as its configuration says (SQLite when it says nothing). */
export const readStoreConfig = async (root: string): Promise<StoreConfig> => {
  refuseRecoveryInProgress(root, { writer: false });
  return rootStoreLocation(root);
};

/**
 * Records the root's store at its first `init`: PostgreSQL by URL reference and schema (a fresh
 * `loopx_<hex>` unless named). Asked again with the same choice it changes nothing; a root whose
 * state already lives elsewhere is never switched (`store_provider_change_refused`).
 */
export async function chooseStore(root: string, choice: { readonly provider?: string; readonly databaseUrl?: string; readonly schema?: string }): Promise<StoreConfig> {
  if (choice.schema !== undefined) schemaIdent(choice.schema);
  if (choice.databaseUrl !== undefined) databaseUrlFrom(choice.databaseUrl); // the reference must resolve now
  return withStoreOwners(
    root,
    (owners) => {
      const current = owners.config.read();
      const ns = current.value.namespaces[STORE_NAMESPACE] as StoreNamespace | undefined;
      const have = ns?.provider ?? 'sqlite';
      if (choice.provider !== undefined) {
        const matches =
          have === choice.provider &&
          (choice.databaseUrl === undefined || ns?.database_url === choice.databaseUrl) &&
          (choice.schema === undefined || ns?.schema === choice.schema);
        // Only a root that holds no Goal yet may take PostgreSQL; a choice already made is never switched.
        const fresh = ns === undefined && choice.provider === POSTGRESQL_PROVIDER && owners.goals.list().length === 0;
        if (!matches && !fresh) {
          throw conflict('store_provider_change_refused', `This root keeps its Goal state in ${have}${ns?.schema ? ` (schema ${ns.schema})` : ''}; it is not switched.`, {
            nextAction: 'keep this root as it is; make the other store in a new root directory',
          });
        }
      }
      if (!ns && choice.provider === POSTGRESQL_PROVIDER) {
        const value: StoreNamespace = {
          schema_version: STORE_CONFIG_SCHEMA,
          provider: POSTGRESQL_PROVIDER,
          database_url: choice.databaseUrl!,
          schema: choice.schema ?? `loopx_${randomBytes(6).toString('hex')}`,
        };
        owners.config.apply({ expectedRevision: current.revision, transactionId: `store-${randomBytes(8).toString('hex')}`, changes: { [STORE_NAMESPACE]: value } });
      }
      return rootStoreLocation(root);
    },
    choice.provider === undefined ? undefined : 'init --store',
  );
}

/** The root's PostgreSQL database for `fn` (its URL read from its reference now), closed after. */
export async function withRootPostgres<T>(config: Extract<StoreConfig, { provider: 'postgresql' }>, fn: (db: PgDatabase) => Promise<T>): Promise<T> {
  const db = openPostgres({ url: databaseUrlFrom(config.database_url), schema: config.schema });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

export interface MigrateResult {
  readonly provider: string;
  readonly schema: string | null;
  readonly components: readonly { readonly component: string; readonly from: number; readonly to: number }[];
}

/** `loopx db migrate`: every PostgreSQL component of the root brought to the version this loopx knows. */
export async function migrateRootStore(root: string): Promise<MigrateResult> {
  const config = await readStoreConfig(root);
  if (config.provider !== 'postgresql') return { provider: config.provider, schema: null, components: [] };
  return withRootPostgres(config, async (db) => {
    // The schema, its versions table and its installation row come first, components or not.
    const components = [{ component: INSTALLATION_COMPONENT, ...(await migratePostgres(db, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS)) }];
    for (const c of PG_COMPONENTS) components.push({ component: c.component, ...(await migratePostgres(db, c.component, c.migrations)) });
    return { provider: config.provider, schema: config.schema, components };
  });
}
