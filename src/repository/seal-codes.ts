/**
 * The stable refusal codes of the sealed repository format (`loopx.sealed/v1`, specified in
 * docs/repository-encryption.md), each built by exactly one function below: one kind (so one exit
 * code), a one-line message and, where an operator must act, one next action.
 *
 * What these functions must never do: put key material (a data key, a passphrase, an identity,
 * a derived key, a wrapped key) or an absolute path into a message, a next action or `details`.
 * A key reference is named by its kind and variable name at most (`env:NAME`), never by its value.
 * Hand-written because the codes are part of loopx's public contract (docs/cli-json.md), not
 * something a crypto library could define for us.
 */
import { internal, notFound, rejected, usageError, type LoopxError } from '../core/index.js';

export const SEAL_CODES = {
  /** A sealed segment's SHA-256 is not the envelope's digest for that position: a flipped bit, a reordered, moved or swapped-in segment. */
  segmentDigest: 'seal_segment_digest',
  /** A segment did not authenticate under its object key, index and last-member flag (AEAD tag check failed). */
  segmentAuth: 'seal_segment_auth',
  /** A sealed object ended before its last segment (fewer bytes than the envelope records). */
  truncated: 'seal_truncated',
  /** A sealed object continues after its last segment. */
  trailingBytes: 'seal_trailing_bytes',
  /** A sealed object's whole-object SHA-256 or size differs from the envelope's. */
  objectDigest: 'seal_object_digest',
  /** An object was opened against another object's envelope entry, or the envelope has no entry of that name. */
  objectMismatch: 'seal_object_mismatch',
  /** An object to seal exceeds the format's bounds (size or segment count). */
  objectTooLarge: 'seal_object_too_large',
  /** The envelope is not a `loopx.sealed/v1` document of the published schema and bounds. */
  envelopeInvalid: 'seal_envelope_invalid',
  /** The envelope's MAC does not verify under the data key: something in it was edited. */
  envelopeMac: 'seal_envelope_mac',
  /** The data key does not match the envelope's key commitment: the envelope or the key belongs elsewhere. */
  keyCommitment: 'seal_key_commitment',
  /** An envelope or key set names another backup than the one being read. */
  backupMismatch: 'seal_backup_mismatch',
  /** The key set is not a `loopx.sealed-keys/v1` document of the published schema and bounds. */
  keySetInvalid: 'seal_key_set_invalid',
  /** A passphrase stanza asks for scrypt parameters outside the accepted bounds (refused before any KDF work). */
  kdfParams: 'seal_kdf_params',
  /** No stanza of the key set opens with the given identity (not a recipient, removed, or a wrong passphrase). */
  keyNotRecipient: 'seal_key_not_recipient',
  /** Encryption was asked for with no recipient: loopx never writes cleartext in its place. */
  noRecipients: 'seal_no_recipients',
  /** A recipient is not `loopx-x25519-pub:<key>` or a passphrase reference, or its key is unusable. */
  recipientInvalid: 'seal_recipient_invalid',
  /** A referenced secret is not `loopx-x25519-key:<key>` or a non-empty passphrase. */
  identityInvalid: 'seal_identity_invalid',
  /** A key reference is not `env:NAME`, `file:PATH` or a path. */
  keyRefInvalid: 'seal_key_ref_invalid',
  /** A key reference names an unset variable or a file that does not exist. */
  keyRefMissing: 'seal_key_ref_missing',
  /** A key file is a link, not a regular file, readable by others, owned by someone else, or too large. */
  keyFileUnsafe: 'seal_key_file_unsafe',
  /** A sealing option is out of range (segment size, backup id, object name, data key). */
  optionsInvalid: 'seal_options_invalid',
  /** A sealer's summary was asked for before its stream ended (a bug in the caller). */
  incomplete: 'seal_incomplete',
} as const;

export type SealCode = (typeof SEAL_CODES)[keyof typeof SEAL_CODES];

const CHECK = 'check the repository: loopx repo check';

export const segmentDigestMismatch = (object: string, index: number): LoopxError =>
  rejected(
    SEAL_CODES.segmentDigest,
    `Segment ${index} of sealed object ${object} is not the one the envelope records.`,
    {
      nextAction: CHECK,
      details: { object, index },
    },
  );

export const segmentAuthFailed = (object: string, index: number): LoopxError =>
  rejected(
    SEAL_CODES.segmentAuth,
    `Segment ${index} of sealed object ${object} does not authenticate at its position.`,
    {
      nextAction: CHECK,
      details: { object, index },
    },
  );

export const sealedTruncated = (object: string, segments: number, expected: number): LoopxError =>
  rejected(SEAL_CODES.truncated, `Sealed object ${object} ends after ${segments} of ${expected} segments.`, {
    nextAction: CHECK,
    details: { object, segments, expected },
  });

export const sealedTrailingBytes = (object: string): LoopxError =>
  rejected(SEAL_CODES.trailingBytes, `Sealed object ${object} continues after its last segment.`, {
    nextAction: CHECK,
    details: { object },
  });

export const sealedDigestMismatch = (object: string): LoopxError =>
  rejected(SEAL_CODES.objectDigest, `Sealed object ${object} differs from the envelope's size or digest.`, {
    nextAction: CHECK,
    details: { object },
  });

export const sealedEntryMismatch = (object: string): LoopxError =>
  usageError(SEAL_CODES.objectMismatch, `The envelope entry given is not the entry of sealed object ${object}.`);

export const sealedObjectTooLarge = (object: string, limit: string): LoopxError =>
  rejected(SEAL_CODES.objectTooLarge, `Object ${object} exceeds the sealed format's bound (${limit}).`, {
    nextAction: 'split the state into smaller backups',
    details: { object, limit },
  });

export const envelopeInvalid = (field: string): LoopxError =>
  rejected(SEAL_CODES.envelopeInvalid, `The sealed envelope is not valid at ${field}.`, {
    nextAction: CHECK,
    details: { field },
  });

export const envelopeMacMismatch = (): LoopxError =>
  rejected(SEAL_CODES.envelopeMac, 'The sealed envelope does not verify under its data key: it was edited.', {
    nextAction: CHECK,
  });

export const keyCommitmentMismatch = (): LoopxError =>
  rejected(SEAL_CODES.keyCommitment, "The data key does not match the envelope's key commitment.", {
    nextAction: CHECK,
  });

export const sealedBackupMismatch = (what: 'envelope' | 'key set'): LoopxError =>
  rejected(SEAL_CODES.backupMismatch, `The sealed ${what} belongs to another backup.`, {
    nextAction: CHECK,
    details: { what },
  });

export const keySetInvalid = (field: string): LoopxError =>
  rejected(SEAL_CODES.keySetInvalid, `The backup's key set is not valid at ${field}.`, {
    nextAction: CHECK,
    details: { field },
  });

export const kdfParamsRefused = (): LoopxError =>
  rejected(SEAL_CODES.kdfParams, "A passphrase stanza's scrypt parameters are outside the accepted bounds.", {
    nextAction: CHECK,
  });

export const keyNotRecipient = (): LoopxError =>
  rejected(SEAL_CODES.keyNotRecipient, 'No recipient of this backup opens with the given key.', {
    nextAction: 'name a key this backup was sealed to (--key env:NAME or a 0600 file)',
  });

export const noRecipients = (): LoopxError =>
  usageError(
    SEAL_CODES.noRecipients,
    'Encryption was asked for without a recipient; nothing was written.',
    'name at least one --recipient (loopx-x25519-pub:… or a passphrase reference env:NAME)',
  );

export const recipientInvalid = (why: string): LoopxError =>
  usageError(
    SEAL_CODES.recipientInvalid,
    `A recipient is not usable: ${why}.`,
    'give a public recipient loopx-x25519-pub:<key> or a passphrase reference env:NAME',
  );

export const identityInvalid = (why: string): LoopxError =>
  rejected(SEAL_CODES.identityInvalid, `A referenced key is not usable: ${why}.`, {
    nextAction: 'reference a loopx-x25519-key:… identity or a non-empty passphrase',
  });

export const keyRefInvalid = (): LoopxError =>
  usageError(
    SEAL_CODES.keyRefInvalid,
    'A key reference is not env:NAME, file:PATH or a path.',
    'give env:NAME or a path',
  );

export const keyRefMissing = (what: string): LoopxError =>
  notFound(SEAL_CODES.keyRefMissing, `The key reference ${what} names nothing.`, {
    nextAction: 'set the variable or create the key file (mode 0600), then run the command again',
    details: { reference: what },
  });

export const keyFileUnsafe = (why: string): LoopxError =>
  rejected(SEAL_CODES.keyFileUnsafe, `A key file is refused: ${why}.`, {
    nextAction: 'make the key file a regular file you own with mode 0600 (chmod 600)',
  });

export const sealOptionsInvalid = (field: string): LoopxError =>
  usageError(SEAL_CODES.optionsInvalid, `A sealing option is out of range: ${field}.`);

export const sealIncomplete = (): LoopxError =>
  internal(SEAL_CODES.incomplete, "A sealer's summary was read before its stream ended.");
