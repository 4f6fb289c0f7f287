/**
 * The stable refusal codes of backup repositories (`loopx repo …`, `backup-state --repo`,
 * `backup-state verify --repo`), each built by exactly one function below: one kind (so one exit
 * code), a one-line message and, where the operator must act, one next action. Messages name a
 * repository by its public description (never a credential or an absolute path).
 */
import { conflict, internal, notFound, rejected, usageError, type LoopxError } from '../core/index.js';

export const REPO_CODES = {
  /** The repository URL is not a directory path or an `s3://bucket/prefix` URL with known options. */
  urlInvalid: 'repo_url_invalid',
  /** An S3 repository's credential reference names a variable that is unset or malformed. */
  credentialsMissing: 'repo_credentials_missing',
  /** An object key outside the safe alphabet (a bug or a hostile listing). */
  objectKeyInvalid: 'repo_object_key_invalid',
  /** A conditional create found the key taken: publication never overwrites. */
  objectExists: 'repo_object_exists',
  /** A compare-and-swap found the object changed (or gone) since it was read. */
  objectChanged: 'repo_object_changed',
  /** An object the repository's own records name is not there. */
  objectMissing: 'repo_object_missing',
  /** The storage did not answer (after retries): nothing was decided. */
  unreachable: 'repo_unreachable',
  /** No repository at this URL: `repo init` makes one. */
  notInitialized: 'repo_not_initialized',
  /** `repo init` found a repository (or other objects) already there. */
  alreadyInitialized: 'repo_already_initialized',
  /** The repository's configuration is not one this version reads. */
  formatUnknown: 'repo_format_unknown',
  /** The server accepted an overwrite under `If-None-Match: *`: publication could not be safe. */
  conditionalWriteUnsupported: 'repo_conditional_write_unsupported',
  /** Another process holds the repository's maintenance lock and it has not expired. */
  locked: 'repo_locked',
  /** No backup with this id in the repository (a half-published one is not a backup). */
  backupNotFound: 'repo_backup_not_found',
  /** A backup with this id is already in the repository. */
  backupExists: 'repo_backup_exists',
  /** An object fetched from the repository differs (size or SHA-256) from what the backup's entry records. */
  objectDigestMismatch: 'repo_object_digest_mismatch',
  /** The repository requires encryption and the backup was not asked to be encrypted. */
  encryptionRequired: 'repo_encryption_required',
  /** The backup is encrypted: its ciphertext was checked whole, and extracting it needs a key. */
  keyRequired: 'repo_key_required',
  /** `repo key new --out FILE` found FILE taken: a key file is never overwritten. */
  keyFileExists: 'repo_key_file_exists',
  /** A key removal would leave encrypted backups with no recipient at all: nothing was changed. */
  keyRemovalStrands: 'repo_key_removal_strands',
  /** A backup's entry object is not valid JSON of its published schema. */
  entryInvalid: 'repo_entry_invalid',
} as const;

export const repoUrlInvalid = (why: string): LoopxError =>
  usageError(
    REPO_CODES.urlInvalid,
    `The repository URL is not valid: ${why}.`,
    'name a directory (/mnt/backups/loopx) or s3://BUCKET/PREFIX?endpoint=URL&region=R: loopx repo --help',
  );

export const credentialsMissing = (reference: string): LoopxError =>
  rejected(REPO_CODES.credentialsMissing, `The repository's credentials ${reference} are unset or malformed.`, {
    nextAction: `set ${reference.replace(/^env:/, '')} to ACCESS_KEY_ID:SECRET_ACCESS_KEY and run the command again`,
  });

export const objectKeyInvalid = (): LoopxError =>
  rejected(REPO_CODES.objectKeyInvalid, 'A repository object key is outside the allowed alphabet.', {
    nextAction: 'check the repository: loopx repo check',
  });

export const objectExists = (key: string): LoopxError =>
  conflict(REPO_CODES.objectExists, `The repository already holds ${key}; nothing was overwritten.`, {
    nextAction: 'list what the repository holds: loopx repo ls',
    details: { key },
  });

export const objectChanged = (key: string): LoopxError =>
  conflict(REPO_CODES.objectChanged, `The repository object ${key} changed since it was read; nothing was written.`, {
    nextAction: 'run the command again',
    details: { key },
  });

export const objectMissing = (key: string): LoopxError =>
  notFound(REPO_CODES.objectMissing, `The repository object ${key} is missing.`, {
    nextAction: 'check the repository: loopx repo check',
    details: { key },
  });

export const unreachable = (repo: string, why: string): LoopxError =>
  internal(REPO_CODES.unreachable, `The repository ${repo} did not answer: ${why}.`, {
    nextAction: 'check the storage service and the network, then run the command again',
  });

export const notInitialized = (repo: string): LoopxError =>
  notFound(REPO_CODES.notInitialized, `No repository was found at ${repo}.`, {
    nextAction: 'create it: loopx repo init',
  });

export const alreadyInitialized = (repo: string): LoopxError =>
  conflict(REPO_CODES.alreadyInitialized, `The location ${repo} already holds a repository or other objects.`, {
    nextAction: 'list it: loopx repo ls',
  });

export const formatUnknown = (repo: string): LoopxError =>
  rejected(REPO_CODES.formatUnknown, `The repository at ${repo} has a format this version of loopx does not read.`, {
    nextAction: 'use the loopx version that created it',
  });

export const conditionalWriteUnsupported = (repo: string): LoopxError =>
  rejected(
    REPO_CODES.conditionalWriteUnsupported,
    `The storage at ${repo} overwrote an object under If-None-Match: *; backups there could be replaced silently.`,
    {
      nextAction: 'use a server that honours conditional writes (see docs/repositories.md), or a directory repository',
    },
  );

export const locked = (holder: string, expiresAt: string): LoopxError =>
  conflict(REPO_CODES.locked, `Repository maintenance is held by ${holder} until ${expiresAt}.`, {
    nextAction: 'wait for it to finish, then run the command again',
    details: { holder, expires_at: expiresAt },
  });

export const backupNotFound = (backupId: string): LoopxError =>
  notFound(REPO_CODES.backupNotFound, `The repository holds no backup ${backupId}.`, {
    nextAction: 'list its backups: loopx repo ls',
    details: { backup_id: backupId },
  });

export const backupExists = (backupId: string): LoopxError =>
  conflict(REPO_CODES.backupExists, `The repository already holds a backup ${backupId}; nothing was overwritten.`, {
    nextAction: 'back up under another id: loopx backup-state --execute --backup-id ID',
    details: { backup_id: backupId },
  });

export const entryInvalid = (backupId: string, why: string): LoopxError =>
  rejected(REPO_CODES.entryInvalid, `The repository's record of backup ${backupId} is invalid: ${why}.`, {
    nextAction: 'check the repository: loopx repo check',
    details: { backup_id: backupId },
  });

export const objectDigestMismatch = (key: string): LoopxError =>
  rejected(
    REPO_CODES.objectDigestMismatch,
    `The repository object ${key} differs from what its backup's entry records; it was not used.`,
    { nextAction: 'check the repository: loopx repo check', details: { key } },
  );

export const encryptionRequired = (): LoopxError =>
  rejected(REPO_CODES.encryptionRequired, 'This repository keeps only encrypted backups; nothing was published.', {
    nextAction: 'encrypt it for a recipient: loopx backup-state --execute --encrypt --recipient RECIPIENT',
  });

export const keyRequired = (backupId: string): LoopxError =>
  rejected(
    REPO_CODES.keyRequired,
    `Backup ${backupId} is encrypted: every ciphertext digest and its envelope's binding check out; extracting it needs its key.`,
    {
      nextAction: `verify it with a key: loopx backup-state verify --backup-id ${backupId} --destination DIR --key env:NAME`,
      details: { backup_id: backupId },
    },
  );

export const keyFileExists = (): LoopxError =>
  conflict(REPO_CODES.keyFileExists, 'The key file already exists; it was not overwritten.', {
    nextAction: 'name a new file: loopx repo key new --out FILE',
  });

export const keyRemovalStrands = (backupIds: readonly string[]): LoopxError =>
  rejected(
    REPO_CODES.keyRemovalStrands,
    `Removing that key would leave ${backupIds.length} backup(s) that no key opens (${backupIds.slice(0, 5).join(', ')}${backupIds.length > 5 ? ', …' : ''}); nothing was changed.`,
    {
      nextAction: 'add another recipient first: loopx repo key add --recipient RECIPIENT --key env:NAME',
      details: { backup_ids: backupIds.slice(0, 100) },
    },
  );
