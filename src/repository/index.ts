/**
 * Public API of backup repositories: where backups are kept away from the root they protect — a
 * directory on another disk or an S3-compatible bucket — published without overwriting, listed,
 * checked and fetched back for verification. A repository is storage, never authority.
 *
 *   Repository.init(url) / Repository.open(url)   the repository format (repository.ts)
 *   openRepositoryObjects(url)                    the storage port of a provider row (table.ts)
 *   parseRepositoryUrl(text)                      repository URLs (url.ts)
 */
export type {
  DirLocation,
  MemoryLocation,
  ObjectBody,
  ObjectInfo,
  RepositoryLocation,
  RepositoryObjects,
  RepositoryProvider,
  S3Location,
} from './contract.js';
export { REPO_CODES, encryptionRequired, keyFileExists } from './codes.js';
export {
  CHECK_FINDINGS,
  ENTRY_FORMAT,
  REPOSITORY_FORMAT,
  MaintenanceLock,
  Repository,
  type BackupEntry,
  type CheckFinding,
  type RepositoryCheck,
  type EntryObject,
  type LocalObject,
  type RepositoryConfig,
  type RepositoryList,
} from './repository.js';
export { REPOSITORY_PROVIDERS, describeRepository, openRepositoryObjects } from './table.js';
export { parseRepositoryUrl } from './url.js';
export { dropMemorySpace } from './memory.js';
export { recipientsOf } from './sealed-pair.js';
export { generateIdentity, recipientFingerprint, recipientOf, type Identity, type Recipient } from './seal.js';
export {
  DEFAULT_PRUNE_GRACE_MS,
  forget,
  pin,
  pins,
  prune,
  unpin,
  type ForgetReport,
  type PruneReport,
} from './maintenance.js';
export { checkPolicy, type RetentionPolicy, type RepositoryPin } from './retention.js';
export { changeKeys, type KeyChange, type KeyChangeReport } from './rotation.js';
export { resolveKeyReference, resolveRecipient } from './seal.js';
