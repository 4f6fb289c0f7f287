/**
 * Where a root keeps its Goals' state: SQLite files in the root (the default), or PostgreSQL —
 * chosen once, at `loopx init --store postgresql --database-url env:NAME`, and kept in the root's
 * machine configuration (namespace `store`) as a provider, a URL *reference* and the
 * installation's schema; the URL itself is read from the named environment variable at run time
 * and never written anywhere. `loopx db migrate` applies the PostgreSQL components' migrations
 * (PG_COMPONENTS: each owner's PostgreSQL provider adds its tables there), and the `work` component
 * of any schema a single Goal chose for its work (`loopx goal create --work-provider postgresql`).
 */
import { randomBytes } from 'node:crypto';
import { conflict } from '../core/index.js';
import {
  INSTALLATION_COMPONENT,
  installationExists,
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
  readonly components: readonly MigratedComponent[];
  /** The schemas where single Goals keep their work apart from the root's (`goal create --work-provider postgresql`). */
  readonly goal_work_schemas: readonly {
    readonly database_url: string;
    readonly schema: string;
    readonly goals: readonly string[];
    readonly components: readonly MigratedComponent[];
  }[];
}

interface MigratedComponent {
  readonly component: string;
  readonly from: number;
  readonly to: number;
}

/** The PostgreSQL schemas Goals chose for their work, other than the root's own, with the Goals in each. */
export function goalWorkSchemas(root: string, config: StoreConfig): { database_url: string; schema: string; goals: string[] }[] {
  const out = new Map<string, { database_url: string; schema: string; goals: string[] }>();
  for (const { goal_id, location } of work.recordedWorkLocations(root)) {
    if (location.provider !== 'postgresql') continue;
    if (config.provider === 'postgresql' && config.database_url === location.database_url && config.schema === location.schema) continue;
    const key = `${location.database_url}\n${location.schema}`;
    const entry = out.get(key) ?? { database_url: location.database_url, schema: location.schema, goals: [] };
    entry.goals.push(goal_id);
    out.set(key, entry);
  }
  return [...out.values()];
}

/**
 * `loopx db migrate`: every PostgreSQL component of the root brought to the version this loopx
 * knows, and the work component of each schema a Goal chose for its work alone.
 */
export async function migrateRootStore(root: string): Promise<MigrateResult> {
  const config = await readStoreConfig(root);
  const goal_work_schemas: MigrateResult['goal_work_schemas'][number][] = [];
  for (const g of goalWorkSchemas(root, config)) {
    const components = await withRootPostgres({ provider: 'postgresql', database_url: g.database_url, schema: g.schema }, async (db) => {
      await migratePostgres(db, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS);
      return [{ component: work.WORK_PG_COMPONENT, ...(await migratePostgres(db, work.WORK_PG_COMPONENT, work.WORK_PG_MIGRATIONS)) }];
    });
    goal_work_schemas.push({ ...g, components });
  }
  if (config.provider !== 'postgresql') return { provider: config.provider, schema: null, components: [], goal_work_schemas };
  return migrateStore(config, goal_work_schemas);
}

/**
 * A recovery's destination root whose Goal state goes to PostgreSQL: its store recorded once — in
 * a schema that holds no loopx installation yet (one that does is another root's state, or a
 * restored copy that `loopx db rotate` is for: `recover_destination_schema_occupied`) — and its
 * schema migrated, so the new root starts with an installation identity of its own. Run again
 * after a crash, it finds its own record and only migrates.
 */
export async function initPostgresDestination(root: string, store: { readonly database_url: string; readonly schema: string }): Promise<void> {
  const config = configOwner.openFileConfigStore(root);
  const current = config.read();
  const pg: Extract<StoreConfig, { provider: 'postgresql' }> = { provider: 'postgresql', database_url: store.database_url, schema: store.schema };
  if (current.value.namespaces[STORE_NAMESPACE] === undefined) {
    if (await withRootPostgres(pg, installationExists)) throw destinationSchemaOccupied(store.schema);
    const value: StoreNamespace = { schema_version: STORE_CONFIG_SCHEMA, provider: POSTGRESQL_PROVIDER, database_url: store.database_url, schema: store.schema };
    config.apply({ expectedRevision: current.revision, transactionId: `store-${randomBytes(8).toString('hex')}`, changes: { [STORE_NAMESPACE]: value } });
  }
  await migrateStore(pg);
}

const destinationSchemaOccupied = (schema: string) =>
  conflict('recover_destination_schema_occupied', `Schema ${schema} already holds a loopx installation; a recovery starts a new one.`, {
    nextAction: 'plan the recovery again with a new schema name (--pg-schema), or leave it out for a fresh one',
    details: { schema },
  });

async function migrateStore(config: Extract<StoreConfig, { provider: 'postgresql' }>, goal_work_schemas: MigrateResult['goal_work_schemas'] = []): Promise<MigrateResult> {
  return withRootPostgres(config, async (db) => {
    // The schema, its versions table and its installation row come first, components or not.
    const components = [{ component: INSTALLATION_COMPONENT, ...(await migratePostgres(db, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS)) }];
    for (const c of PG_COMPONENTS) components.push({ component: c.component, ...(await migratePostgres(db, c.component, c.migrations)) });
    return { provider: config.provider, schema: config.schema, components, goal_work_schemas };
  });
}
