/**
 * Where a root keeps its Goals' state: SQLite files in the root (the default), or a database
 * service — chosen once, at `loopx init --store <provider>` (PostgreSQL: `--database-url
 * env:NAME`), and kept in the root's machine configuration (namespace `store`) as the provider's
 * row records it: a URL *reference* and the installation's schema; the URL itself is read from the
 * named environment variable at run time and never written anywhere. `loopx db migrate` asks the
 * service's row to migrate its components (PostgreSQL: POSTGRESQL_COMPONENTS, each owner's tables),
 * and the work component of any schema a single Goal chose for its work (`loopx goal create
 * --work-provider`). Nothing here names a provider: each decision is a column of its row.
 */
import { randomBytes } from 'node:crypto';
import { conflict } from '../core/index.js';
import {
  databaseUrlFrom,
  openPostgres,
  readInstallation,
  schemaIdent,
  type InstallationBinding,
  type PgDatabase,
} from '../store/index.js';
import {
  config as configOwner,
  DEFAULT_STORE_PROVIDER,
  describeLocation,
  goal as goalOwner,
  isServiceLocation,
  POSTGRESQL_COMPONENTS,
  providerOf,
  registry as registryOwner,
  rootStoreLocation,
  sameService,
  serviceOf,
  STORE_CONFIG_NAMESPACE,
  STORE_PROVIDERS,
  storeProvider,
  type MigratedComponent,
  type RootStoreLocation,
  type ServiceLocation,
  work,
} from '../owners/index.js';
import { refuseRecoveryInProgress } from '../recovery/index.js';
import { withAdmission } from './admission.js';

export const STORE_NAMESPACE = STORE_CONFIG_NAMESPACE;
export const STORE_CONFIG_SCHEMA = 'loopx_store_config_v0';

/** Where the root keeps its Goal state (the owners read it: `rootStoreLocation`). */
export type StoreConfig = RootStoreLocation;

/** The PostgreSQL components `loopx db migrate` migrates: its row's list (each owner's `postgresql` SQL), as it is. */
export const PG_COMPONENTS = POSTGRESQL_COMPONENTS();

// A type, not an interface: configuration values are plain JSON objects.
type StoreNamespace = {
  readonly schema_version: typeof STORE_CONFIG_SCHEMA;
  readonly provider: string;
  readonly database_url?: string;
  readonly schema?: string;
  /** The installation the root is bound to (PostgreSQL): recorded by `db migrate` when absent, moved by `db rotate`. */
  readonly installation?: InstallationBinding;
};

/**
 * Records the installation the root is bound to. `ifAbsent` (`db migrate`, a recovery's new root)
 * records only a first binding: only a rotation moves it, so a migrate run against an older
 * incarnation never launders it.
 */
export function bindInstallation(
  root: string,
  binding: InstallationBinding,
  options: { ifAbsent?: boolean } = {},
): void {
  const store = configOwner.openFileConfigStore(root);
  const current = store.read();
  const ns = current.value.namespaces[STORE_NAMESPACE] as StoreNamespace | undefined;
  if (ns === undefined || (options.ifAbsent === true && ns.installation !== undefined)) return;
  store.apply({
    expectedRevision: current.revision,
    transactionId: `store-bind-${randomBytes(8).toString('hex')}`,
    changes: {
      [STORE_NAMESPACE]: {
        ...ns,
        installation: { store_identity: binding.store_identity, restore_generation: binding.restore_generation },
      },
    },
  });
}

/** The schema's installation as it is now, recorded as the root's binding when the root records none. */
async function bindFirstInstallation(root: string, location: ServiceLocation): Promise<void> {
  const binding = await withRootPostgres(location, (db) =>
    db.transaction((q) => readInstallation(q), { isolation: 'repeatable read', readOnly: true }),
  );
  if (binding !== undefined) bindInstallation(root, binding, { ifAbsent: true });
}

/**
 * The root's configuration and Goals only — not its SQLite session and effect stores, which a
 * root on PostgreSQL does not open (openRootOwners refuses it) — as the store choice needs them.
 */
function withStoreOwners<T>(
  root: string,
  fn: (owners: { config: configOwner.ConfigStore; goals: goalOwner.GoalStore }) => T,
  write?: string,
): Promise<T> {
  refuseRecoveryInProgress(root, { writer: write !== undefined });
  const open = () => {
    const registry = registryOwner.openFileRegistry(root);
    return fn({
      config: configOwner.openFileConfigStore(root),
      goals: goalOwner.openFileGoalStore(root, { registry }),
    });
  };
  // A writer of the root is admitted like any other (refused while a backup holds the root closed).
  return write === undefined ? Promise.resolve().then(open) : withAdmission(root, write, async () => open());
}

/** The providers a root (`init --store`) or a Goal's work (`goal create --work-provider`) can choose, in table order. */
export const storeChoices = (kind: 'root' | 'goal_work'): string[] =>
  STORE_PROVIDERS.filter((p) => (kind === 'root' ? p.root.choose : p.work.choose) !== undefined).map((p) => p.name);

/** Whether `--database-url` / `--pg-schema` go with `provider`: it is a database service. */
export const takesServiceOptions = (provider: string | undefined): boolean =>
  provider !== undefined && storeProvider(provider)?.service !== undefined;

/** Whether a root on `provider` (the default when none is named) keeps its Goal state as files of the root, which `init` makes. */
export const keepsFilesInRoot = (provider: string | undefined): boolean =>
  storeProvider(provider ?? DEFAULT_STORE_PROVIDER)?.inRoot === true;

/** Whether the root's store is a database service (its schema is then `store.schema`). */
export const isServiceStore = (store: StoreConfig): store is Extract<StoreConfig, ServiceLocation> =>
  isServiceLocation(store);

/** `<provider>` and where in it, for a human line: `postgresql (schema s)`. */
export const describeStore = (store: StoreConfig): string => describeLocation(store);

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
export async function chooseStore(
  root: string,
  choice: { readonly provider?: string; readonly databaseUrl?: string; readonly schema?: string },
): Promise<StoreConfig> {
  if (choice.schema !== undefined) schemaIdent(choice.schema);
  if (choice.databaseUrl !== undefined) databaseUrlFrom(choice.databaseUrl); // the reference must resolve now
  return withStoreOwners(
    root,
    (owners) => {
      const current = owners.config.read();
      const ns = current.value.namespaces[STORE_NAMESPACE] as StoreNamespace | undefined;
      const have = ns?.provider ?? DEFAULT_STORE_PROVIDER;
      // What the chosen provider's row records for a fresh root (nothing for the default).
      const chosen =
        ns === undefined && choice.provider !== undefined
          ? storeProvider(choice.provider)?.root.choose?.(choice)
          : undefined;
      if (choice.provider !== undefined) {
        const matches =
          have === choice.provider &&
          (choice.databaseUrl === undefined || ns?.database_url === choice.databaseUrl) &&
          (choice.schema === undefined || ns?.schema === choice.schema);
        // Only a root that holds no Goal yet may take a recorded store; a choice already made is never switched.
        const fresh = chosen?.record !== undefined && owners.goals.list().length === 0;
        if (!matches && !fresh) {
          throw conflict(
            'store_provider_change_refused',
            `This root keeps its Goal state in ${have}${ns?.schema ? ` (schema ${ns.schema})` : ''}; it is not switched.`,
            {
              nextAction: 'keep this root as it is; make the other store in a new root directory',
            },
          );
        }
      }
      if (chosen?.record !== undefined) {
        const value: StoreNamespace = {
          schema_version: STORE_CONFIG_SCHEMA,
          provider: choice.provider!,
          ...chosen.record,
        };
        owners.config.apply({
          expectedRevision: current.revision,
          transactionId: `store-${randomBytes(8).toString('hex')}`,
          changes: { [STORE_NAMESPACE]: value },
        });
      }
      return rootStoreLocation(root);
    },
    choice.provider === undefined ? undefined : 'init --store',
  );
}

/** A service root's database for `fn` (its URL read from its reference now), closed after. */
export async function withRootPostgres<T>(config: ServiceLocation, fn: (db: PgDatabase) => Promise<T>): Promise<T> {
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

/** The service installations Goals chose for their work, other than the root's own, with the Goals in each. */
function goalWorkServices(root: string, config: StoreConfig): { location: ServiceLocation; goals: string[] }[] {
  const out = new Map<string, { location: ServiceLocation; goals: string[] }>();
  for (const { goal_id, location } of work.recordedWorkLocations(root)) {
    if (!isServiceLocation(location) || sameService(config, location)) continue;
    const key = `${location.provider}\n${location.database_url}\n${location.schema}`;
    const entry = out.get(key) ?? {
      location: { provider: location.provider, database_url: location.database_url, schema: location.schema },
      goals: [],
    };
    entry.goals.push(goal_id);
    out.set(key, entry);
  }
  return [...out.values()];
}

/** The database schemas Goals chose for their work, other than the root's own, with the Goals in each. */
export const goalWorkSchemas = (
  root: string,
  config: StoreConfig,
): { database_url: string; schema: string; goals: string[] }[] =>
  goalWorkServices(root, config).map((g) => ({
    database_url: g.location.database_url,
    schema: g.location.schema,
    goals: g.goals,
  }));

/**
 * `loopx db migrate`: every PostgreSQL component of the root brought to the version this loopx
 * knows, and the work component of each schema a Goal chose for its work alone.
 */
export async function migrateRootStore(root: string): Promise<MigrateResult> {
  const config = await readStoreConfig(root);
  const goal_work_schemas: MigrateResult['goal_work_schemas'][number][] = [];
  for (const g of goalWorkServices(root, config)) {
    const components = await serviceOf(g.location)!.migrate(g.location, 'goal_work');
    goal_work_schemas.push({
      database_url: g.location.database_url,
      schema: g.location.schema,
      goals: g.goals,
      components,
    });
  }
  if (!isServiceLocation(config)) return { provider: config.provider, schema: null, components: [], goal_work_schemas };
  const migrated = await migrateStore(config, goal_work_schemas);
  await bindFirstInstallation(root, config);
  return migrated;
}

/**
 * A recovery's destination root whose Goal state goes to a database service: its store recorded
 * once — in a schema that holds no loopx installation yet (one that does is another root's state,
 * or a restored copy that `loopx db rotate` is for: `recover_destination_schema_occupied`) — and
 * its schema migrated, so the new root starts with an installation identity of its own. Run again
 * after a crash, it finds its own record and only migrates.
 */
export async function initPostgresDestination(root: string, store: ServiceLocation): Promise<void> {
  const config = configOwner.openFileConfigStore(root);
  const current = config.read();
  const row = providerOf(store);
  if (current.value.namespaces[STORE_NAMESPACE] === undefined) {
    if (await row.service!.occupied(store)) throw destinationSchemaOccupied(store.schema);
    const { record } = row.root.choose!({ databaseUrl: store.database_url, schema: store.schema });
    const value: StoreNamespace = { schema_version: STORE_CONFIG_SCHEMA, provider: store.provider, ...record };
    config.apply({
      expectedRevision: current.revision,
      transactionId: `store-${randomBytes(8).toString('hex')}`,
      changes: { [STORE_NAMESPACE]: value },
    });
  }
  await migrateStore(store);
  await bindFirstInstallation(root, store);
}

const destinationSchemaOccupied = (schema: string) =>
  conflict(
    'recover_destination_schema_occupied',
    `Schema ${schema} already holds a loopx installation; a recovery starts a new one.`,
    {
      nextAction: 'plan the recovery again with a new schema name (--pg-schema), or leave it out for a fresh one',
      details: { schema },
    },
  );

/** The root's service, every component migrated (the installation first) by its row. */
async function migrateStore(
  config: ServiceLocation,
  goal_work_schemas: MigrateResult['goal_work_schemas'] = [],
): Promise<MigrateResult> {
  const components = await serviceOf(config)!.migrate(config, 'root');
  return { provider: config.provider, schema: config.schema, components, goal_work_schemas };
}
