/** Public API of the snapshot module: the run-state data model and its v1alpha2 payload codec. */
export * from './state.js';
export {
  decodeSnapshot,
  encodeSnapshot,
  LIFECYCLE_WIRE_NUMBER,
  minimumLastSequence,
  SNAPSHOT_DIGEST_BYTES,
  SNAPSHOT_ERRORS,
  SNAPSHOT_FORMAT,
  SNAPSHOT_LIMITS,
  SNAPSHOT_VERSION,
  snapshotDigest,
  validateSnapshotState,
  type SnapshotBound,
  type SnapshotErrorCode,
} from './codec.js';
export {
  claimInvalid,
  decodeEnvelope,
  encodeEnvelope,
  ENVELOPE_ERRORS,
  ENVELOPE_FORMAT,
  ENVELOPE_MAX_BYTES,
  envelopeOversized,
  MAC_DOMAIN,
  macInput,
  signEnvelope,
  SnapshotEnvelope,
  VerifiedSnapshot,
  verifyEnvelope,
  type MacFields,
  type SnapshotClaim,
} from './envelope.js';
