/**
 * The signed snapshot envelope (RFC 0007) and its canonical MAC input. This module is the one
 * place that frames signed bytes: it builds the MAC input, wraps a payload with a claim, encodes
 * and decodes envelopes, and turns a verifier's yes into a VerifiedSnapshot. It holds no keys —
 * the run authority computes and checks HMACs — and it never re-encodes a signed payload.
 *
 * - There is no unsigned envelope: `SnapshotEnvelope` has a private constructor, and both ways to
 *   obtain one (`signEnvelope`, `decodeEnvelope`) require a claim of exactly 32-byte scope id,
 *   positive key generation and exactly 32-byte HMAC.
 * - Decoding proves structure and the unkeyed payload digest only. Authority comes from
 *   `verifyEnvelope` with a keyed verifier; its failure is one code and one message whatever the
 *   cause (unknown scope, unavailable generation, wrong HMAC), so it leaks nothing.
 */
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { timingSafeEqual } from 'node:crypto';
import { sha256, toHex, lengthPrefixed, u32be, u64be, utf8, rejected, type LoopxError } from '../core/index.js';
import { decodeSnapshot, LIFECYCLE_WIRE_NUMBER, SNAPSHOT_LIMITS } from './codec.js';
import { SnapshotEnvelopeSchema } from './gen/loopx/snapshot/v1alpha2/envelope_pb.js';
import type { Lifecycle, RunSnapshotState } from './state.js';

/** MAC domain, kept from the spec (ARCHITECTURE.md "Decisions"). */
export const MAC_DOMAIN = 'spice.agent.run-authority/v1';
export const ENVELOPE_FORMAT = 'loopx.run-snapshot-envelope/v1';
/** Envelope framing on top of the payload bound. */
const ENVELOPE_OVERHEAD = 1024;

export const ENVELOPE_ERRORS = {
  malformed: 'envelope_malformed',
  unknownField: 'envelope_unknown_field',
  unsupportedFormat: 'envelope_unsupported_format',
  claimMalformed: 'envelope_claim_malformed',
  digestMismatch: 'envelope_digest_mismatch',
  nonCanonical: 'envelope_non_canonical_encoding',
  oversized: 'envelope_oversized',
  /** The one secret-safe verification failure. */
  claimInvalid: 'snapshot_claim_invalid',
} as const;

export interface MacFields {
  readonly scopeId: Uint8Array;
  readonly keyGeneration: number;
  readonly format: string;
  readonly runId: string;
  readonly lastSequence: number;
  readonly lifecycle: Lifecycle;
  readonly payloadSha256: Uint8Array;
}

/**
 * The canonical MAC input: each component, in the spec's order, as an unsigned 64-bit big-endian
 * length followed by its bytes — domain, scope id, key generation (u64 BE), format, run id, last
 * sequence (u64 BE), lifecycle (u32 BE of its .proto number), payload SHA-256.
 */
export function macInput(f: MacFields): Uint8Array {
  return lengthPrefixed([
    utf8(MAC_DOMAIN),
    f.scopeId,
    u64be(f.keyGeneration),
    utf8(f.format),
    utf8(f.runId),
    u64be(f.lastSequence),
    u32be(LIFECYCLE_WIRE_NUMBER[f.lifecycle]),
    f.payloadSha256,
  ]);
}

export interface SnapshotClaim {
  readonly scopeId: Uint8Array;
  readonly keyGeneration: number;
  readonly hmac: Uint8Array;
}

const malformedClaim = () =>
  rejected(
    ENVELOPE_ERRORS.claimMalformed,
    'The snapshot claim is malformed (scope id and HMAC must be 32 bytes, key generation positive).',
    {
      nextAction: 'use the envelope exactly as loopx run export wrote it',
    },
  );

function checkClaim(c: SnapshotClaim): SnapshotClaim {
  if (
    c.scopeId.byteLength !== 32 ||
    c.hmac.byteLength !== 32 ||
    !Number.isSafeInteger(c.keyGeneration) ||
    c.keyGeneration < 1
  )
    throw malformedClaim();
  return { scopeId: new Uint8Array(c.scopeId), keyGeneration: c.keyGeneration, hmac: new Uint8Array(c.hmac) };
}

/** Module-private construction token: the constructors refuse anything else, at runtime too. */
const CONSTRUCT = Symbol('loopx.snapshot.envelope.construct');
// Assigned by the classes' static blocks: the only constructors, private to this module.
let makeEnvelope: (
  payload: Uint8Array,
  payloadSha256: Uint8Array,
  claim: SnapshotClaim,
  state: RunSnapshotState,
) => SnapshotEnvelope;
let makeVerified: (envelope: SnapshotEnvelope) => VerifiedSnapshot;

export class SnapshotEnvelope {
  readonly format = ENVELOPE_FORMAT;
  readonly payload: Uint8Array;
  readonly payloadSha256: Uint8Array;
  readonly claim: SnapshotClaim;
  /** The decoded, validated payload. */
  readonly state: RunSnapshotState;

  private constructor(
    token: symbol,
    payload: Uint8Array,
    payloadSha256: Uint8Array,
    claim: SnapshotClaim,
    state: RunSnapshotState,
  ) {
    if (token !== CONSTRUCT) throw new TypeError('SnapshotEnvelope is made only by signEnvelope or decodeEnvelope');
    this.payload = payload;
    this.payloadSha256 = payloadSha256;
    this.claim = checkClaim(claim);
    this.state = state;
  }

  /** The MAC input this envelope's claim covers. */
  macInput(): Uint8Array {
    return macInput({
      scopeId: this.claim.scopeId,
      keyGeneration: this.claim.keyGeneration,
      format: this.format,
      runId: this.state.runId,
      lastSequence: this.state.lastSequence,
      lifecycle: this.state.lifecycle,
      payloadSha256: this.payloadSha256,
    });
  }

  static {
    // Construction stays inside this module: signEnvelope and decodeEnvelope are the only makers.
    makeEnvelope = (payload, digest, claim, state) => new SnapshotEnvelope(CONSTRUCT, payload, digest, claim, state);
  }
}

/**
 * Sign an already-encoded, validated payload. `hmacOf` is the authority's claim function over the
 * MAC input; the payload bytes are carried exactly as given.
 */
export function signEnvelope(input: {
  readonly payload: Uint8Array;
  readonly scopeId: Uint8Array;
  readonly keyGeneration: number;
  readonly hmacOf: (macInput: Uint8Array) => Uint8Array;
}): SnapshotEnvelope {
  if (input.scopeId.byteLength !== 32 || !Number.isSafeInteger(input.keyGeneration) || input.keyGeneration < 1)
    throw malformedClaim();
  const payload = new Uint8Array(input.payload); // our own copy: the signed bytes cannot change under us
  const state = decodeSnapshot(payload);
  const digest = sha256(payload);
  const mac = macInput({
    scopeId: input.scopeId,
    keyGeneration: input.keyGeneration,
    format: ENVELOPE_FORMAT,
    runId: state.runId,
    lastSequence: state.lastSequence,
    lifecycle: state.lifecycle,
    payloadSha256: digest,
  });
  // checkClaim (in the constructor) refuses a signer that returns anything but 32 bytes.
  return makeEnvelope(
    payload,
    digest,
    { scopeId: input.scopeId, keyGeneration: input.keyGeneration, hmac: input.hmacOf(mac) },
    state,
  );
}

export function encodeEnvelope(env: SnapshotEnvelope): Uint8Array {
  return toBinary(SnapshotEnvelopeSchema, {
    $typeName: 'loopx.snapshot.v1alpha2.SnapshotEnvelope',
    format: env.format,
    payload: env.payload,
    payloadSha256: env.payloadSha256,
    claim: {
      $typeName: 'loopx.snapshot.v1alpha2.SnapshotClaim',
      scopeId: env.claim.scopeId,
      keyGeneration: BigInt(env.claim.keyGeneration),
      hmac: env.claim.hmac,
    },
  });
}

/** The largest envelope a payload within its bound can make. */
export const ENVELOPE_MAX_BYTES = SNAPSHOT_LIMITS.maxPayloadBytes + ENVELOPE_OVERHEAD;

/** Bytes over the envelope bound (a file read for import or inspect, or bytes handed to decode): refused before parsing. */
export const envelopeOversized = (): LoopxError =>
  rejected(ENVELOPE_ERRORS.oversized, 'The snapshot envelope is larger than its bound.', {
    nextAction: 'pass a file written by loopx run export',
    details: { limit: ENVELOPE_MAX_BYTES },
  });

const digestMismatch = (why: string): LoopxError =>
  rejected(ENVELOPE_ERRORS.digestMismatch, `The snapshot envelope is damaged: ${why}.`, {
    nextAction: 'the file is damaged; export the run again',
  });

/**
 * Decode an envelope: size bound, protobuf structure, no unknown fields, format, claim shape,
 * payload digest, the payload's own fail-closed validation, and canonical encoding. Proves bytes
 * and structure only — never authority.
 */
export function decodeEnvelope(bytes: Uint8Array): SnapshotEnvelope {
  if (bytes.byteLength > ENVELOPE_MAX_BYTES) throw envelopeOversized();
  let msg;
  try {
    msg = fromBinary(SnapshotEnvelopeSchema, bytes, { readUnknownFields: true });
  } catch (e) {
    throw rejected(ENVELOPE_ERRORS.malformed, 'The file is not a loopx snapshot envelope.', {
      cause: e,
      nextAction: 'pass a file written by loopx run export',
    });
  }
  if ((msg.$unknown?.length ?? 0) > 0 || (msg.claim?.$unknown?.length ?? 0) > 0) {
    throw rejected(ENVELOPE_ERRORS.unknownField, 'The snapshot envelope carries fields this loopx does not know.', {
      nextAction: 'upgrade loopx, or re-export with this version',
    });
  }
  if (msg.format !== ENVELOPE_FORMAT) {
    throw rejected(ENVELOPE_ERRORS.unsupportedFormat, 'The snapshot envelope format is not supported.', {
      nextAction: 'export the run again with this loopx version',
      details: { format: msg.format.slice(0, 64) },
    });
  }
  if (!msg.claim || msg.claim.keyGeneration > BigInt(Number.MAX_SAFE_INTEGER)) throw malformedClaim();
  const claim = checkClaim({
    scopeId: msg.claim.scopeId,
    keyGeneration: Number(msg.claim.keyGeneration),
    hmac: msg.claim.hmac,
  });
  if (msg.payloadSha256.byteLength !== 32) throw digestMismatch('the payload digest of the envelope is malformed');
  const digest = sha256(msg.payload);
  if (!timingSafeEqual(Buffer.from(digest), Buffer.from(msg.payloadSha256))) {
    throw digestMismatch('the payload does not match the digest the envelope carries');
  }
  const payload = new Uint8Array(msg.payload); // a copy, not a view into the caller's buffer
  const state = decodeSnapshot(payload);
  const env = makeEnvelope(payload, digest, claim, state);
  const canonical = encodeEnvelope(env);
  if (canonical.byteLength !== bytes.byteLength || !timingSafeEqual(Buffer.from(canonical), Buffer.from(bytes))) {
    throw rejected(ENVELOPE_ERRORS.nonCanonical, 'The snapshot envelope is not in its canonical encoding.', {
      nextAction: 'use the envelope exactly as loopx run export wrote it',
    });
  }
  return env;
}

/** An envelope whose claim a keyed verifier accepted. Only `verifyEnvelope` makes one. */
export class VerifiedSnapshot {
  readonly envelope: SnapshotEnvelope;
  private constructor(token: symbol, envelope: SnapshotEnvelope) {
    if (token !== CONSTRUCT) throw new TypeError('VerifiedSnapshot is made only by verifyEnvelope');
    this.envelope = envelope;
  }
  get state(): RunSnapshotState {
    return this.envelope.state;
  }
  get payloadSha256Hex(): string {
    return toHex(this.envelope.payloadSha256);
  }
  static {
    makeVerified = (envelope) => new VerifiedSnapshot(CONSTRUCT, envelope);
  }
}

export const claimInvalid = () =>
  rejected(ENVELOPE_ERRORS.claimInvalid, 'The snapshot claim does not verify against this run authority.', {
    nextAction: "import only snapshots exported under this user's run authority, and only their latest export",
  });

/**
 * Check the claim with a keyed verifier. `verify` gets the MAC input and the claim and answers
 * yes or no (in constant time); any no — or any exception — is the one secret-safe failure.
 */
export function verifyEnvelope(
  env: SnapshotEnvelope,
  verify: (macInput: Uint8Array, claim: SnapshotClaim) => boolean,
): VerifiedSnapshot {
  let ok = false;
  try {
    ok = verify(env.macInput(), env.claim) === true;
  } catch {
    ok = false;
  }
  if (!ok) throw claimInvalid();
  return makeVerified(env);
}
