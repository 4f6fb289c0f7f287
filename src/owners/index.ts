/**
 * Public API of the owners of a runtime root. Each owner is a namespace (its live API and its
 * `recovery` contract); the OWNERS table lists every owner's recovery contract for the
 * coordinators (backup, the verifier, the audit, workspace reads) to iterate.
 */
export { LAYOUT, GOAL_ID, ROOT_MARKERS, assertGoalId, assertRuntimeRoot } from './layout.js';
export * from './contract.js';
export {
  OWNERS,
  OWNER_LIST,
  RECOVERY_POINT_OWNER,
  DOCUMENT_OWNERS,
  ROOT_DATABASES,
  UNOWNED_STORES,
  goalOfPath,
  ownerDescriptions,
  ownerOfMember,
  ownerTable,
  type OwnerDescription,
  type OwnerName,
  type OwnerTable,
  type UnownedStore,
} from './table.js';
export { OwnerError, ownerErrors, type OwnerErrors } from './owner-errors.js';
export { openRootOwners, STORE_CONFIG_NAMESPACE, type RootOwners } from './root-owners.js';
export {
  closeRootPools,
  refuseNonSqliteRoot,
  rootStoreLocation,
  type RootStoreLocation,
} from './root-store-location.js';
/** The storage providers as a table: owners and the runtime ask a location's row by its `provider` name. */
export {
  DEFAULT_STORE_PROVIDER,
  STORE_PROVIDERS,
  describeLocation,
  inRoot,
  isServiceLocation,
  providerOf,
  rootPostgres,
  sameService,
  serviceOf,
  storeProvider,
  POSTGRESQL_COMPONENTS,
  type GoalWorkLocation,
  type MigratedComponent,
  type ServiceLocation,
  type StoreLocation,
  type StoreProvider,
  type StoreService,
  type WorkChoice,
} from './providers/index.js';
export { rootStores, type RootStores } from './root-stores.js';
export {
  openGoalWorkSources,
  openServiceSnapshot,
  type GoalServiceSnapshot,
  type ServiceReference,
  type ServiceSnapshot,
} from './service-snapshot.js';
export { integrityOnly } from './sqlite-recovery.js';
export { verifyExport, type ExportHeader } from './export.js';
export * as registry from './registry/index.js';
export * as config from './config/index.js';
export * as goal from './goal/index.js';
export * as work from './work/index.js';
export * as session from './session/index.js';
export * as effect from './effect/index.js';
export * as quota from './quota/index.js';
export * as scheduler from './scheduler/index.js';
/** Not a root's owner (no OWNERS row, no recovery contract): a cluster's membership and work queue, in its PostgreSQL schema. */
export * as cluster from './cluster/index.js';
export {
  ADOPTION,
  HISTORICAL_PREVIEW,
  historicalPreviewOf,
  type HistoricalPreview,
  type PreviewFacts,
} from './adoption.js';
export * from './adoption-contract.js';
