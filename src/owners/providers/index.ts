/**
 * Public API of the storage providers: the table of rows (memory, SQLite, PostgreSQL) that owners
 * and the runtime ask by a location's `provider` name, the row contract, and what a few callers use
 * of one row as it is (the memory row's spaces for tests, the PostgreSQL row's pools).
 */
export type {
  MigratedComponent,
  OpenWorkOptions,
  ServiceLocation,
  StoreLocation,
  StoreProvider,
  StoreService,
  WorkChoice,
  WorkPlace,
} from './contract.js';
export type { ServiceReference, ServiceSnapshot } from './snapshot.js';
export {
  DEFAULT_STORE_PROVIDER,
  STORE_PROVIDERS,
  describeLocation,
  inRoot,
  isServiceLocation,
  providerOf,
  releaseStoreProviders,
  rootLocationOf,
  sameService,
  serviceOf,
  storeProvider,
  type GoalWorkLocation,
  type RootStoreLocation,
} from './table.js';
export { MEMORY, memoryLocation, memorySpace, type MemoryLocation, type MemorySpace } from './memory.js';
export { SQLITE, type SqliteLocation } from './sqlite.js';
export {
  POSTGRESQL,
  POSTGRESQL_COMPONENTS,
  postgresAt,
  rootPostgres,
  type PostgresLocation,
  type PostgresWorkLocation,
} from './postgresql.js';
