/**
 * Framing constants and bounds of the v1alpha2 snapshot payload. Every bound is enforced in both
 * directions (export and import); the total payload bound is checked on import before any
 * parsing. Changing a value here changes which snapshots are accepted: update
 * docs/snapshot-format.md with it.
 */

/** The `format` framing field of every payload. */
export const SNAPSHOT_FORMAT = 'loopx.run-snapshot';
/** The only payload version this codec reads and writes. */
export const SNAPSHOT_VERSION = 'v1alpha2';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Bounds of a v1alpha2 payload. Byte lengths are UTF-8 bytes. */
export const SNAPSHOT_LIMITS = {
  /** Whole encoded payload. Checked on import before parsing. */
  maxPayloadBytes: 16 * MiB,
  /** Messages in the history. */
  maxMessages: 10_000,
  /** Parts in one message. */
  maxPartsPerMessage: 256,
  /** Content of one message: the sum of its text, arguments_json and result_json bytes. */
  maxMessageContentBytes: 256 * KiB,
  /** The run id (message and call ids embed it, so it is shorter than other ids). */
  maxRunIdBytes: 128,
  /** Message ids, tool call ids and interaction ids. */
  maxIdBytes: 256,
  /** Every other identity string: definition id/version, model provider/id, tool names, tool plan
   * id, compatibility identity, component name/module/version. */
  maxNameBytes: 512,
  /** Entries of used_interaction_ids. */
  maxInteractionIds: 10_000,
  /** Component identities in the plan identity. */
  maxComponents: 1_024,
  /** Nesting depth of arguments_json / result_json values (as core canonical JSON). */
  maxJsonDepth: 64,
} as const;

export type SnapshotBound = keyof typeof SNAPSHOT_LIMITS;

/** Digests (component source identity, plan fingerprint) are SHA-256: exactly this many bytes. */
export const SNAPSHOT_DIGEST_BYTES = 32;
