/** Public API of store: database plumbing. Drivers never cross this boundary as contract types. */
export { SQLITE_PROVIDER, openSqlite, setSqliteHardHeapLimit, setup, type Migration, type OpenOptions, type SqliteDatabase, type SqliteStatement } from './sqlite.js';
export { countSqliteTableRows, recoverSqliteCopy, snapshotSqliteDatabase, sqliteRuntimeIdentity, type SqliteSnapshotFacts } from './snapshot.js';
export {
  SQLITE_COPY_NO_SPACE,
  SQLITE_COPY_TOO_LARGE,
  SQLITE_COPY_UNREADABLE,
  isOutOfSpace,
  hasSqliteHeader,
  isSqliteFile,
  openSqliteCopy,
  withSqliteCopy,
  type SqliteCopy,
  type SqliteCopyOptions,
  type WithSqliteCopyOptions,
} from './copy.js';
export { RowInvalid, instantColumn, instantOrNullColumn, intColumn, jsonColumn, jsonOrNullColumn, oneOfColumn, sha256Column, textColumn, textOrNullColumn } from './rows.js';
export { MEMORY_PROVIDER } from './memory.js';
export {
  formatStoreIdentity,
  isRegisteredStoreProvider,
  isStoreIdentity,
  parseStoreIdentity,
  registerStoreProvider,
  registeredStoreProviders,
  type ParsedStoreIdentity,
} from './providers.js';
export {
  POSTGRESQL_PROVIDER,
  PgCommitAmbiguous,
  databaseUrlFrom,
  isRetryableConflict,
  isUniqueViolation,
  migratePostgres,
  openPostgres,
  pgFailure,
  requireSchemaVersion,
  schemaIdent,
  type PgDatabase,
  type PgMigration,
  type PgOptions,
  type PgQuery,
  type PgServerIdentity,
} from './postgres.js';
export {
  INSTALLATION_COMPONENT,
  INSTALLATION_MIGRATIONS,
  INSTALLATION_STATES,
  activateInstallation,
  admissionOf,
  admit,
  installationExists,
  installationMissing,
  installationRefusal,
  readInstallation,
  rotateInstallation,
  rotationSetting,
  supersedeInstallation,
  type InstallationState,
  type InstallationView,
  type PgAdmission,
} from './pg-installation.js';
