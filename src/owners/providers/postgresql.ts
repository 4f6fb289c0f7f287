/**
 * The PostgreSQL provider's row: a root's Goal state as the tables of one installation's schema
 * (`loopx init --store postgresql --database-url env:NAME`), or one Goal's work alone in a schema
 * (`goal create --work-provider postgresql`), its rows under a row key. The URL is read from its
 * reference when a pool is first opened — one pool per (URL, schema) per process, which never keeps
 * a process alive; ports close themselves, not the pool (`release` ends the pools). Schemas are
 * migrated only by `service.migrate` (`loopx db migrate`): each owner's PostgreSQL component, in
 * POSTGRESQL_COMPONENTS, after the installation's.
 */
import { randomBytes } from 'node:crypto';
import { usageError } from '../../core/index.js';
import {
  INSTALLATION_COMPONENT,
  INSTALLATION_MIGRATIONS,
  POSTGRESQL_PROVIDER,
  databaseUrlFrom,
  installationExists,
  migratePostgres,
  openPostgres,
  requireSchemaVersion,
  schemaIdent,
  type InstallationBinding,
  type PgDatabase,
  type PgMigration,
} from '../../store/index.js';
import * as clusterOwner from '../cluster/index.js';
import * as effectOwner from '../effect/index.js';
import * as quotaOwner from '../quota/index.js';
import { rootStoreLocation } from '../root-store-location.js';
import * as schedulerOwner from '../scheduler/index.js';
import * as sessionOwner from '../session/index.js';
import * as workOwner from '../work/index.js';
import type { MigratedComponent, ServiceLocation, StoreLocation, StoreProvider, WorkChoice } from './contract.js';
import { openSchemaSnapshot } from './postgresql-snapshot.js';

export interface PostgresLocation extends ServiceLocation {
  readonly provider: typeof POSTGRESQL_PROVIDER;
  /**
   * A root's own location only: the installation the root is bound to (`loopx db migrate` records
   * it, `loopx db rotate` moves it). A schema holding an older one admits none of its writers.
   */
  readonly installation?: InstallationBinding;
}

const IDENTITY = /^postgresql:[0-9a-f]{32}$/;

/** The binding a root's store configuration records, when it records a well-formed one. */
function bindingIn(v: unknown): InstallationBinding | undefined {
  const o = v as Partial<InstallationBinding> | null | undefined;
  return typeof o?.store_identity === 'string' &&
    IDENTITY.test(o.store_identity) &&
    Number.isSafeInteger(o.restore_generation) &&
    o.restore_generation! >= 0
    ? { store_identity: o.store_identity, restore_generation: o.restore_generation! }
    : undefined;
}

/** One Goal's work store in a schema several Goals (and roots) may share: its rows under `store_key`. */
export interface PostgresWorkLocation extends PostgresLocation {
  readonly store_key: string;
}

const REFERENCE = /^env:[A-Za-z_][A-Za-z0-9_]*$/;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const STORE_KEY = /^[a-z0-9][a-z0-9._-]{0,63}~[0-9a-f]{12}$/;

/**
 * The components `loopx db migrate` migrates in a root's schema, after the installation: each
 * owner's `postgresql` SQL (its `<owner>/sql.ts`), in dependency order.
 */
export const POSTGRESQL_COMPONENTS = (): readonly {
  readonly component: string;
  readonly migrations: readonly PgMigration[];
}[] =>
  [
    workOwner.WORK_SQL,
    effectOwner.EFFECT_SQL,
    quotaOwner.QUOTA_SQL,
    sessionOwner.SESSION_SQL,
    schedulerOwner.SCHEDULER_SQL,
  ].map((sql) => sql.postgresql);

const pools = new Map<string, PgDatabase>();

/**
 * The database of a PostgreSQL location (shared in this process), its URL read from its reference
 * now. A pool keeps the binding it was opened with, as its admission keeps the installation it
 * first read: a binding the root records later (a rotation) takes effect when the process starts
 * again, never by admitting this process anew.
 */
export function postgresAt(location: {
  readonly database_url: string;
  readonly schema: string;
  readonly installation?: InstallationBinding;
}): PgDatabase {
  const url = databaseUrlFrom(location.database_url);
  const key = `${location.schema}\n${url}`;
  let db = pools.get(key);
  if (db === undefined) {
    const binding = location.installation;
    db = openPostgres({
      url,
      schema: location.schema,
      reference: location.database_url,
      allowExitOnIdle: true,
      ...(binding === undefined ? {} : { binding }),
    });
    pools.set(key, db);
  }
  return db;
}

const isPostgres = (l: StoreLocation): l is PostgresLocation => l.provider === POSTGRESQL_PROVIDER;

/** The root's PostgreSQL database (shared in this process), or undefined for a root elsewhere. */
export function rootPostgres(root: string): PgDatabase | undefined {
  const location = rootStoreLocation(root);
  return isPostgres(location) ? postgresAt(location) : undefined;
}

/** A database of its own for one operation on `location` (closed after it), never the shared pool. */
async function withDatabase<T>(location: ServiceLocation, fn: (db: PgDatabase) => Promise<T>): Promise<T> {
  const db = openPostgres({ url: databaseUrlFrom(location.database_url), schema: location.schema });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

async function migrate(location: ServiceLocation, what: 'root' | 'goal_work'): Promise<MigratedComponent[]> {
  return withDatabase(location, async (db) => {
    // The schema, its versions table and its installation row come first, components or not.
    const installation = {
      component: INSTALLATION_COMPONENT,
      ...(await migratePostgres(db, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS)),
    };
    const work = workOwner.WORK_SQL.postgresql;
    if (what === 'goal_work')
      return [{ component: work.component, ...(await migratePostgres(db, work.component, work.migrations)) }];
    const components = [installation];
    for (const c of POSTGRESQL_COMPONENTS())
      components.push({ component: c.component, ...(await migratePostgres(db, c.component, c.migrations)) });
    return components;
  });
}

const sameSchema = (a: ServiceLocation, b: ServiceLocation): boolean =>
  a.database_url === b.database_url && a.schema === b.schema;

/**
 * A Goal's work store in its root's own schema (a Goal record naming the root's database and
 * schema, or none) opens with the root's binding: the pool it may be the first to open is the one
 * every port of the root shares, and must refuse an older installation for all of them.
 */
function withRootBinding(root: string, location: PostgresWorkLocation): PostgresWorkLocation {
  if (location.installation !== undefined) return location;
  const at = rootStoreLocation(root);
  return isPostgres(at) && at.installation !== undefined && sameSchema(at, location)
    ? { ...location, installation: at.installation }
    : location;
}

/** The store a Goal's request names; a pending record of the same database and schema keeps its row key. */
function chooseWork(
  request: WorkChoice,
  at: { readonly root: StoreLocation; readonly goal_id: string; readonly pending: StoreLocation | null },
): PostgresWorkLocation {
  const root = isPostgres(at.root) ? at.root : undefined;
  const database_url = request.database_url ?? root?.database_url;
  if (database_url === undefined) {
    throw usageError(
      'database_url_required',
      "This root keeps its Goal state in SQLite: a Goal's work in PostgreSQL needs --database-url env:NAME.",
      'pass --database-url env:LOOPX_DATABASE_URL',
    );
  }
  const pending = at.pending !== null && isPostgres(at.pending) ? (at.pending as PostgresWorkLocation) : undefined;
  const kept = pending?.database_url === database_url ? pending : undefined;
  const schema = request.schema ?? kept?.schema ?? root?.schema ?? `loopx_${randomBytes(6).toString('hex')}`;
  schemaIdent(schema);
  databaseUrlFrom(database_url); // the reference must resolve now, before anything is recorded
  const store_key =
    kept?.schema === schema ? kept.store_key : workOwner.mintStoreKey(at.goal_id, randomBytes(6).toString('hex'));
  return { provider: POSTGRESQL_PROVIDER, database_url, schema, store_key };
}

function decodeWork(o: Readonly<Record<string, unknown>>, goalId: string): PostgresWorkLocation | undefined {
  const exact =
    Object.keys(o).sort().join(',') === 'database_url,provider,schema,store_key' &&
    typeof o.database_url === 'string' &&
    REFERENCE.test(o.database_url) &&
    typeof o.schema === 'string' &&
    SCHEMA_NAME.test(o.schema) &&
    typeof o.store_key === 'string' &&
    STORE_KEY.test(o.store_key) &&
    o.store_key.startsWith(`${goalId}~`);
  return exact
    ? {
        provider: POSTGRESQL_PROVIDER,
        database_url: o.database_url as string,
        schema: o.schema as string,
        store_key: o.store_key as string,
      }
    : undefined;
}

export const POSTGRESQL: StoreProvider<PostgresLocation, PostgresWorkLocation> = {
  name: POSTGRESQL_PROVIDER,
  inRoot: false,
  describe: (l) => ` (schema ${l.schema})`,
  root: {
    decode: (ns) => {
      if (typeof ns.database_url !== 'string' || typeof ns.schema !== 'string') return undefined;
      const installation = bindingIn(ns.installation);
      return {
        provider: POSTGRESQL_PROVIDER,
        database_url: ns.database_url,
        schema: ns.schema,
        ...(installation === undefined ? {} : { installation }),
      };
    },
    choose: (choice) => {
      const location: PostgresLocation = {
        provider: POSTGRESQL_PROVIDER,
        database_url: choice.databaseUrl!,
        schema: choice.schema ?? `loopx_${randomBytes(6).toString('hex')}`,
      };
      return { location, record: { database_url: location.database_url, schema: location.schema } };
    },
  },
  holds: () => true,
  ports: {
    session: (_root, l) => sessionOwner.openPgSessionPort(postgresAt(l)),
    effect: (_root, l) => effectOwner.openPgEffectPort(postgresAt(l)),
    quota: (_root, l) => quotaOwner.openPgQuotaPort(postgresAt(l)),
    scheduler: (_root, l) => schedulerOwner.openPgSchedulerPort(postgresAt(l)),
    cluster: (l) => clusterOwner.openPgClusterPort(postgresAt(l)),
  },
  work: {
    ofRoot: (root, goalId) => ({ ...root, store_key: goalId }),
    decode: decodeWork,
    same: (a, b) => sameSchema(a, b) && a.store_key === b.store_key,
    answers: (have, request) =>
      (request.database_url ?? have.database_url) === have.database_url &&
      (request.schema ?? have.schema) === have.schema,
    choose: chooseWork,
    ready: (l) => requireSchemaVersion(postgresAt(l), workOwner.WORK_PG_COMPONENT, workOwner.WORK_PG_MIGRATIONS),
    open: (place, o) =>
      workOwner.openPostgresWorkProvider(postgresAt(withRootBinding(place.root, place.location)), {
        goal_id: o.goal_id,
        store_key: place.location.store_key,
        create: o.create === true,
        ...(o.expected_incarnation === undefined ? {} : { expected_incarnation: o.expected_incarnation }),
        ...(o.expected_store_identity === undefined ? {} : { expected_store_identity: o.expected_store_identity }),
      }),
    // The rows stay under their row key; the new lifetime gets a fresh one.
    setAside: (place) => ({
      ...place.location,
      store_key: workOwner.mintStoreKey(place.goal_id, randomBytes(6).toString('hex')),
    }),
    rebind: (l, reference) => (REFERENCE.test(reference) ? { ...l, database_url: reference } : undefined),
  },
  service: {
    same: sameSchema,
    migrate,
    occupied: (location) => withDatabase(location, installationExists),
    snapshot: (location) => openSchemaSnapshot(POSTGRESQL_PROVIDER, postgresAt(location), location.schema),
  },
  async release() {
    const open = [...pools.values()];
    pools.clear();
    await Promise.all(open.map((db) => db.close().catch(() => undefined)));
  },
};
