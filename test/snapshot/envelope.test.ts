/**
 * The signed snapshot envelope (RFC 0007; docs/snapshot-format.md "Envelope, MAC input and
 * claim"): sign → encode → decode → verify with a real LocalRunAuthority; every decode refusal
 * with its stable code; the one secret-safe verification failure; no way to make an envelope or
 * a verified snapshot except signEnvelope/decodeEnvelope/verifyEnvelope; and a seeded tamper fuzz
 * over the encoded bytes (bit flips, truncations, insertions — all refused, always typed).
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLoopxError, LoopxError } from '../../src/core/errors.js';
import { openRunAuthority, type LocalRunAuthority } from '../../src/run-authority/index.js';
import {
  SnapshotClaimSchema,
  SnapshotEnvelopeSchema,
} from '../../src/snapshot/gen/loopx/snapshot/v1alpha2/envelope_pb.js';
import * as envelopeModule from '../../src/snapshot/envelope.js';
import {
  decodeEnvelope,
  decodeSnapshot,
  encodeEnvelope,
  encodeSnapshot,
  ENVELOPE_ERRORS,
  ENVELOPE_FORMAT,
  SNAPSHOT_ERRORS,
  SNAPSHOT_LIMITS,
  signEnvelope,
  SnapshotEnvelope,
  VerifiedSnapshot,
  verifyEnvelope,
  type RunSnapshotState,
  type SnapshotClaim,
} from '../../src/snapshot/index.js';
import { rawEncodeState, validState, validStateArb } from './support.js';

const E = ENVELOPE_ERRORS;
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const u8 = (b: Uint8Array | Buffer): Uint8Array => new Uint8Array(b);
const concat = (...parts: Uint8Array[]): Uint8Array => u8(Buffer.concat(parts));
const sha = (b: Uint8Array): Uint8Array => u8(createHash('sha256').update(b).digest());
const flipBit = (b: Uint8Array, index: number, bit = 0): Uint8Array => {
  const out = new Uint8Array(b);
  out[index] = out[index]! ^ (1 << bit);
  return out;
};

// ---- authorities in private temp dirs (mkdtemp makes the parent 0700; /tmp is a sticky ancestor) ----

const bases: string[] = [];
const opened: LocalRunAuthority[] = [];
function newAuthority(): LocalRunAuthority {
  const base = mkdtempSync(join(tmpdir(), 'loopx-env-'));
  bases.push(base);
  expect(statSync(base).mode & 0o777).toBe(0o700);
  const a = openRunAuthority({ dir: join(base, 'authority'), create: true });
  opened.push(a);
  return a;
}
afterAll(async () => {
  for (const a of opened.splice(0)) await a.close();
  for (const b of bases.splice(0)) rmSync(b, { recursive: true, force: true });
});

let authority: LocalRunAuthority;
let other: LocalRunAuthority;
beforeAll(() => {
  authority = newAuthority();
  other = newAuthority();
});

// ---- signing and verifying exactly as the engine does ----

interface SignOptions {
  readonly by?: LocalRunAuthority;
  readonly keyGeneration?: number;
  readonly transitionGeneration?: number;
  /** The scope id put in the claim (defaults to the signer's). */
  readonly scopeId?: Uint8Array;
  /** Sign under this generation's key while the claim names `keyGeneration`. */
  readonly signingGeneration?: number;
  readonly tamperHmac?: (hmac: Uint8Array) => Uint8Array;
}

function sign(payload: Uint8Array, o: SignOptions = {}): SnapshotEnvelope {
  const by = o.by ?? authority;
  const keyGeneration = o.keyGeneration ?? by.currentKeyGeneration();
  const transitionGeneration = o.transitionGeneration ?? 1;
  const runId = decodeRunId(payload);
  return signEnvelope({
    payload,
    scopeId: o.scopeId ?? by.scopeId,
    keyGeneration,
    hmacOf: (mac) => {
      const h = by.claim({
        keyGeneration: o.signingGeneration ?? keyGeneration,
        runId,
        transitionGeneration,
        macInput: mac,
      });
      return o.tamperHmac ? o.tamperHmac(h) : h;
    },
  });
}
/** The run id the authority's subkey binds (signEnvelope decodes the payload itself too). */
const decodeRunId = (payload: Uint8Array): string => decodeSnapshot(payload).runId;

const verifierFor =
  (env: SnapshotEnvelope, by: LocalRunAuthority = authority, transitionGeneration = 1) =>
  (mac: Uint8Array, claim: SnapshotClaim): boolean =>
    by.verifyClaim(
      claim.scopeId,
      { keyGeneration: claim.keyGeneration, runId: env.state.runId, transitionGeneration, macInput: mac },
      claim.hmac,
    );

const verify = (env: SnapshotEnvelope, by: LocalRunAuthority = authority, transitionGeneration = 1): VerifiedSnapshot =>
  verifyEnvelope(env, verifierFor(env, by, transitionGeneration));

const payloadOf = (state: RunSnapshotState = validState()): Uint8Array => encodeSnapshot(state);
const terminalState = (): RunSnapshotState => ({ ...validState(), lifecycle: 'completed', lastSequence: 41 });

/** The error `fn` throws (fails the test when it returns). */
function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw, got a return');
}

/** Assert `fn` throws a rejected LoopxError with `code`; returns it. */
function refusal(fn: () => unknown, code: string): LoopxError {
  const e = thrownBy(fn);
  if (!isLoopxError(e)) throw e;
  expect({ code: e.code, kind: e.kind }).toEqual({ code, kind: 'rejected' });
  return e;
}

// ---- raw envelope crafting (no validation) ----

interface RawEnvelope {
  format?: string;
  payload?: Uint8Array;
  payloadSha256?: Uint8Array;
  claim?: { scopeId?: Uint8Array; keyGeneration?: bigint; hmac?: Uint8Array } | undefined;
}
const rawEnvelope = (r: RawEnvelope): Uint8Array =>
  toBinary(
    SnapshotEnvelopeSchema,
    create(SnapshotEnvelopeSchema, {
      ...(r.format !== undefined ? { format: r.format } : {}),
      ...(r.payload ? { payload: r.payload } : {}),
      ...(r.payloadSha256 ? { payloadSha256: r.payloadSha256 } : {}),
      ...(r.claim ? { claim: create(SnapshotClaimSchema, r.claim) } : {}),
    }),
  );
/** The fields of a valid signed envelope, to vary one at a time. */
const fieldsOf = (
  env: SnapshotEnvelope,
): Required<Omit<RawEnvelope, 'claim'>> & {
  claim: { scopeId: Uint8Array; keyGeneration: bigint; hmac: Uint8Array };
} => ({
  format: env.format,
  payload: env.payload,
  payloadSha256: env.payloadSha256,
  claim: { scopeId: env.claim.scopeId, keyGeneration: BigInt(env.claim.keyGeneration), hmac: env.claim.hmac },
});
const claimBytes = (c: { scopeId: Uint8Array; keyGeneration: bigint; hmac: Uint8Array }): Uint8Array =>
  toBinary(SnapshotClaimSchema, create(SnapshotClaimSchema, c));

// ======================================================================================

describe('round trip: sign → encode → decode → verify', () => {
  it('a suspended run signed by the real authority decodes and verifies to the same state, payload bytes and digest', () => {
    const state = validState();
    const payload = payloadOf(state);
    const env = sign(payload);
    const bytes = encodeEnvelope(env);
    const decoded = decodeEnvelope(bytes);
    const verified = verify(decoded);
    expect(verified).toBeInstanceOf(VerifiedSnapshot);
    expect(verified.state).toEqual(state);
    expect(hex(verified.envelope.payload)).toBe(hex(payload));
    expect(verified.payloadSha256Hex).toBe(hex(sha(payload)));
    expect(decoded.format).toBe(ENVELOPE_FORMAT);
    expect(hex(decoded.claim.scopeId)).toBe(hex(authority.scopeId));
    expect(decoded.claim.keyGeneration).toBe(authority.currentKeyGeneration());
    expect(hex(decoded.claim.hmac)).toBe(hex(env.claim.hmac));
    expect(hex(encodeEnvelope(decoded))).toBe(hex(bytes));
  });

  it('a terminal (completed) run signs and verifies the same way, and its MAC input carries lifecycle 3', () => {
    const env = decodeEnvelope(encodeEnvelope(sign(payloadOf(terminalState()))));
    expect(verify(env).state.lifecycle).toBe('completed');
    const mac = Buffer.from(env.macInput());
    // ... u64 4, u32 3, u64 32, digest: the lifecycle is the 4 bytes before the framed digest.
    expect(hex(mac.subarray(mac.length - 32 - 8 - 4, mac.length - 32 - 8))).toBe('00000003');
  });

  it('the authority is asked to sign exactly the envelope MAC input, once', () => {
    const seen: Uint8Array[] = [];
    const env = signEnvelope({
      payload: payloadOf(),
      scopeId: authority.scopeId,
      keyGeneration: 1,
      hmacOf: (mac) => {
        seen.push(mac);
        return authority.claim({ keyGeneration: 1, runId: 'run_01', transitionGeneration: 1, macInput: mac });
      },
    });
    expect(seen).toHaveLength(1);
    expect(hex(seen[0]!)).toBe(hex(env.macInput()));
  });

  it('signing is deterministic: the same payload, key and transition generation give byte-identical envelopes', () => {
    const payload = payloadOf();
    expect(hex(encodeEnvelope(sign(payload)))).toBe(hex(encodeEnvelope(sign(payload))));
  });

  it('an identical payload signed at transition generations 1 and 7 gives different claims, each valid only at its own generation', () => {
    const payload = payloadOf();
    const g1 = sign(payload, { transitionGeneration: 1 });
    const g7 = sign(payload, { transitionGeneration: 7 });
    expect(hex(g1.macInput())).toBe(hex(g7.macInput()));
    expect(hex(g1.claim.hmac)).not.toBe(hex(g7.claim.hmac));
    expect(hex(encodeEnvelope(g1))).not.toBe(hex(encodeEnvelope(g7)));
    expect(verify(g1, authority, 1)).toBeInstanceOf(VerifiedSnapshot);
    expect(verify(g7, authority, 7)).toBeInstanceOf(VerifiedSnapshot);
    refusal(() => verify(g1, authority, 7), E.claimInvalid);
    refusal(() => verify(g7, authority, 1), E.claimInvalid);
  });

  it('an older key generation keeps verifying after rotation, under a different claim than the new one', () => {
    const a = newAuthority();
    const payload = payloadOf();
    const g1 = sign(payload, { by: a, keyGeneration: 1 });
    expect(a.rotate()).toBe(2);
    const g2 = sign(payload, { by: a, keyGeneration: 2 });
    expect(hex(g1.claim.hmac)).not.toBe(hex(g2.claim.hmac));
    expect(verify(decodeEnvelope(encodeEnvelope(g1)), a)).toBeInstanceOf(VerifiedSnapshot);
    expect(verify(decodeEnvelope(encodeEnvelope(g2)), a)).toBeInstanceOf(VerifiedSnapshot);
  });

  it('a decoded or signed envelope keeps its own copy of the payload: mutating the caller’s buffer afterwards changes nothing', () => {
    // BUG (src/snapshot/envelope.ts): decodeEnvelope keeps msg.payload, a subarray view into the
    // caller's input (@bufbuild/protobuf BinaryReader.bytes()), and signEnvelope keeps
    // input.payload by reference; the claim, digest and state are copies. Mutating the input after
    // decode/verify changes env.payload (and a VerifiedSnapshot's payload) while its digest, state
    // and claim still describe the verified bytes.
    const payload = payloadOf();
    const bytes = new Uint8Array(encodeEnvelope(sign(payload)));
    const decoded = decodeEnvelope(bytes);
    const verified = verify(decoded);
    const signInput = new Uint8Array(payload);
    const signed = sign(signInput);
    bytes.fill(0);
    signInput.fill(0);
    expect({
      decoded: hex(verified.envelope.payload) === hex(payload),
      signed: hex(signed.payload) === hex(payload),
    }).toEqual({ decoded: true, signed: true });
  });

  it('the envelope keeps its own copy of the claim: mutating the signer’s buffers afterwards changes nothing', () => {
    const scope = u8(authority.scopeId);
    let hmac: Uint8Array = new Uint8Array(32);
    const env = signEnvelope({
      payload: payloadOf(),
      scopeId: scope,
      keyGeneration: 1,
      hmacOf: (mac) =>
        (hmac = authority.claim({ keyGeneration: 1, runId: 'run_01', transitionGeneration: 1, macInput: mac })),
    });
    const before = encodeEnvelope(env);
    scope.fill(0);
    hmac.fill(0);
    expect(hex(encodeEnvelope(env))).toBe(hex(before));
    expect(verify(env)).toBeInstanceOf(VerifiedSnapshot);
  });
});

describe('signEnvelope refuses', () => {
  it('a signer returning a 31- or 33-byte HMAC (envelope_claim_malformed)', () => {
    for (const n of [0, 31, 33]) {
      refusal(
        () =>
          signEnvelope({
            payload: payloadOf(),
            scopeId: authority.scopeId,
            keyGeneration: 1,
            hmacOf: () => new Uint8Array(n),
          }),
        E.claimMalformed,
      );
    }
  });

  it('a 31- or 33-byte scope id (envelope_claim_malformed)', () => {
    for (const n of [31, 33]) refusal(() => sign(payloadOf(), { scopeId: new Uint8Array(n) }), E.claimMalformed);
  });

  it('key generation 0 (envelope_claim_malformed)', () => {
    refusal(
      () =>
        signEnvelope({
          payload: payloadOf(),
          scopeId: authority.scopeId,
          keyGeneration: 0,
          hmacOf: () => new Uint8Array(32),
        }),
      E.claimMalformed,
    );
  });

  it('a negative, fractional, NaN or unsafe key generation, or a wrong-size scope id, with envelope_claim_malformed before the authority is asked to sign', () => {
    // BUG (src/snapshot/envelope.ts signEnvelope): macInput() and hmacOf run before checkClaim, so
    // -1 / 1.5 / NaN escape as an untyped RangeError from u64be, and 2^53 or a 31-byte scope id
    // get an HMAC from the authority before the claim is refused.
    const outcomes = [-1, 1.5, Number.NaN, 2 ** 53].map((keyGeneration) => {
      let asked = 0;
      const e = thrownBy(() =>
        signEnvelope({
          payload: payloadOf(),
          scopeId: authority.scopeId,
          keyGeneration,
          hmacOf: () => {
            asked++;
            return new Uint8Array(32);
          },
        }),
      );
      return { keyGeneration, code: isLoopxError(e) ? e.code : `untyped ${(e as Error).name}`, asked };
    });
    let askedForBadScope = 0;
    refusal(
      () =>
        signEnvelope({
          payload: payloadOf(),
          scopeId: new Uint8Array(31),
          keyGeneration: 1,
          hmacOf: () => (askedForBadScope++, new Uint8Array(32)),
        }),
      E.claimMalformed,
    );
    outcomes.push({ keyGeneration: 1, code: `${E.claimMalformed} (31-byte scope)`, asked: askedForBadScope });
    expect(outcomes).toEqual([
      { keyGeneration: -1, code: E.claimMalformed, asked: 0 },
      { keyGeneration: 1.5, code: E.claimMalformed, asked: 0 },
      { keyGeneration: Number.NaN, code: E.claimMalformed, asked: 0 },
      { keyGeneration: 2 ** 53, code: E.claimMalformed, asked: 0 },
      { keyGeneration: 1, code: `${E.claimMalformed} (31-byte scope)`, asked: 0 },
    ]);
  });

  it('a payload that is not a valid snapshot, before the authority is asked to sign anything', () => {
    let asked = 0;
    const hmacOf = () => {
      asked++;
      return new Uint8Array(32);
    };
    refusal(
      () =>
        signEnvelope({
          payload: new Uint8Array([0xff, 0xff, 0xff]),
          scopeId: authority.scopeId,
          keyGeneration: 1,
          hmacOf,
        }),
      SNAPSHOT_ERRORS.malformed,
    );
    refusal(
      () =>
        signEnvelope({
          payload: rawEncodeState({ ...validState(), lifecycle: 'active' }),
          scopeId: authority.scopeId,
          keyGeneration: 1,
          hmacOf,
        }),
      SNAPSHOT_ERRORS.activeLifecycle,
    );
    expect(asked).toBe(0);
  });

  it('a signer that throws produces no envelope (its error propagates)', () => {
    const boom = new Error('authority unavailable');
    expect(
      thrownBy(() =>
        signEnvelope({
          payload: payloadOf(),
          scopeId: authority.scopeId,
          keyGeneration: 1,
          hmacOf: () => {
            throw boom;
          },
        }),
      ),
    ).toBe(boom);
  });
});

describe('decodeEnvelope refuses', () => {
  let valid: SnapshotEnvelope;
  let validBytes: Uint8Array;
  beforeAll(() => {
    valid = sign(payloadOf());
    validBytes = encodeEnvelope(valid);
  });

  it('accepts the valid envelope these cases are derived from (the baseline)', () => {
    expect(hex(encodeEnvelope(decodeEnvelope(validBytes)))).toBe(hex(validBytes));
    expect(hex(rawEnvelope(fieldsOf(valid)))).toBe(hex(validBytes));
  });

  it('malformed bytes: garbage, a truncated envelope, a length overrunning the input (envelope_malformed)', () => {
    refusal(() => decodeEnvelope(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01])), E.malformed);
    refusal(() => decodeEnvelope(validBytes.subarray(0, 50)), E.malformed);
    refusal(() => decodeEnvelope(validBytes.subarray(0, validBytes.length - 1)), E.malformed);
    refusal(() => decodeEnvelope(new Uint8Array([0x12, 0x7f, 0x00])), E.malformed); // payload of 127 bytes, 1 present
    refusal(() => decodeEnvelope(new Uint8Array([0x0f])), E.malformed); // wire type 7
  });

  it('an unknown top-level field, varint or length-delimited, appended or prepended (envelope_unknown_field)', () => {
    refusal(() => decodeEnvelope(concat(validBytes, new Uint8Array([0x28, 0x01]))), E.unknownField); // field 5, varint 1
    refusal(
      () =>
        decodeEnvelope(
          concat(
            validBytes,
            new BinaryWriter()
              .tag(15, WireType.LengthDelimited)
              .bytes(new Uint8Array([1, 2, 3]))
              .finish(),
          ),
        ),
      E.unknownField,
    );
    refusal(
      () => decodeEnvelope(concat(new BinaryWriter().tag(1000, WireType.Varint).uint64(0).finish(), validBytes)),
      E.unknownField,
    );
  });

  it('an unknown field inside the claim (envelope_unknown_field)', () => {
    const f = fieldsOf(valid);
    const claimWithUnknown = concat(claimBytes(f.claim), new Uint8Array([0x20, 0x01])); // claim field 4, varint 1
    const w = new BinaryWriter();
    w.tag(1, WireType.LengthDelimited).string(f.format);
    w.tag(2, WireType.LengthDelimited).bytes(f.payload);
    w.tag(3, WireType.LengthDelimited).bytes(f.payloadSha256);
    w.tag(4, WireType.LengthDelimited).bytes(claimWithUnknown);
    refusal(() => decodeEnvelope(w.finish()), E.unknownField);
  });

  it('another or absent format (envelope_unsupported_format)', () => {
    for (const format of ['loopx.run-snapshot-envelope/v2', 'loopx.run-snapshot', '']) {
      refusal(() => decodeEnvelope(rawEnvelope({ ...fieldsOf(valid), format })), E.unsupportedFormat);
    }
  });

  it('a claim with a 31/33-byte scope id or HMAC, key generation 0 or beyond 2^53-1, or no claim at all (envelope_claim_malformed)', () => {
    const f = fieldsOf(valid);
    const claims = [
      { ...f.claim, scopeId: f.claim.scopeId.subarray(0, 31) },
      { ...f.claim, scopeId: concat(f.claim.scopeId, new Uint8Array(1)) },
      { ...f.claim, hmac: f.claim.hmac.subarray(0, 31) },
      { ...f.claim, hmac: concat(f.claim.hmac, new Uint8Array(1)) },
      { ...f.claim, scopeId: new Uint8Array(0) },
      { ...f.claim, hmac: new Uint8Array(0) },
      { ...f.claim, keyGeneration: 0n },
      { ...f.claim, keyGeneration: BigInt(Number.MAX_SAFE_INTEGER) + 1n },
      { ...f.claim, keyGeneration: 2n ** 64n - 1n },
    ];
    for (const claim of claims) refusal(() => decodeEnvelope(rawEnvelope({ ...f, claim })), E.claimMalformed);
    refusal(() => decodeEnvelope(rawEnvelope({ ...f, claim: undefined })), E.claimMalformed);
  });

  it('a payload digest that does not match the payload, or is not 32 bytes (envelope_digest_mismatch)', () => {
    const f = fieldsOf(valid);
    refusal(
      () => decodeEnvelope(rawEnvelope({ ...f, payloadSha256: flipBit(f.payloadSha256, 31, 7) })),
      E.digestMismatch,
    );
    refusal(
      () => decodeEnvelope(rawEnvelope({ ...f, payloadSha256: sha(payloadOf(terminalState())) })),
      E.digestMismatch,
    );
    refusal(() => decodeEnvelope(rawEnvelope({ ...f, payload: payloadOf(terminalState()) })), E.digestMismatch);
    refusal(
      () => decodeEnvelope(rawEnvelope({ ...f, payloadSha256: f.payloadSha256.subarray(0, 31) })),
      E.digestMismatch,
    );
    refusal(
      () => decodeEnvelope(rawEnvelope({ ...f, payloadSha256: undefined as unknown as Uint8Array })),
      E.digestMismatch,
    );
  });

  it('a payload with a matching digest is still validated as a snapshot (its own refusal codes)', () => {
    const f = fieldsOf(valid);
    const active = rawEncodeState({ ...validState(), lifecycle: 'active' });
    refusal(
      () => decodeEnvelope(rawEnvelope({ ...f, payload: active, payloadSha256: sha(active) })),
      SNAPSHOT_ERRORS.activeLifecycle,
    );
    const unknown = concat(f.payload, new Uint8Array([0xf8, 0x07, 0x01])); // snapshot field 127, varint 1
    refusal(
      () => decodeEnvelope(rawEnvelope({ ...f, payload: unknown, payloadSha256: sha(unknown) })),
      SNAPSHOT_ERRORS.unknownField,
    );
    const empty = new Uint8Array(0);
    refusal(
      () => decodeEnvelope(rawEnvelope({ ...f, payload: empty, payloadSha256: sha(empty) })),
      SNAPSHOT_ERRORS.unsupportedFormat,
    );
  });

  it('non-canonical encodings of a valid envelope: reordered fields, reordered claim fields, a repeated field, a non-minimal varint (envelope_non_canonical_encoding)', () => {
    const f = fieldsOf(valid);
    const writeClaim = (w: BinaryWriter, order: number[], genBytes?: Uint8Array) => {
      const c = new BinaryWriter();
      for (const n of order) {
        if (n === 1) c.tag(1, WireType.LengthDelimited).bytes(f.claim.scopeId);
        if (n === 2) {
          c.tag(2, WireType.Varint);
          if (genBytes) c.raw(genBytes);
          else c.uint64(f.claim.keyGeneration);
        }
        if (n === 3) c.tag(3, WireType.LengthDelimited).bytes(f.claim.hmac);
      }
      w.tag(4, WireType.LengthDelimited).bytes(c.finish());
    };
    const envelope = (order: number[], claimOrder = [1, 2, 3], genBytes?: Uint8Array): Uint8Array => {
      const w = new BinaryWriter();
      for (const n of order) {
        if (n === 1) w.tag(1, WireType.LengthDelimited).string(f.format);
        if (n === 2) w.tag(2, WireType.LengthDelimited).bytes(f.payload);
        if (n === 3) w.tag(3, WireType.LengthDelimited).bytes(f.payloadSha256);
        if (n === 4) writeClaim(w, claimOrder, genBytes);
      }
      return w.finish();
    };
    // The writer itself is faithful: the canonical order reproduces the valid bytes.
    expect(hex(envelope([1, 2, 3, 4]))).toBe(hex(validBytes));
    expect(f.claim.keyGeneration).toBe(1n);
    const variants = [
      envelope([4, 3, 2, 1]),
      envelope([2, 1, 3, 4]),
      envelope([1, 2, 3, 4], [3, 2, 1]),
      envelope([1, 1, 2, 3, 4]), // format twice (proto3: last one wins)
      envelope([1, 2, 3, 4, 4]), // claim twice (merged)
      envelope([1, 2, 3, 4], [1, 2, 3], new Uint8Array([0x81, 0x00])), // key generation 1 as a 2-byte varint
    ];
    for (const bytes of variants) refusal(() => decodeEnvelope(bytes), E.nonCanonical);
  });

  it('an envelope larger than the payload bound plus its framing, before parsing (envelope_oversized)', () => {
    const e = refusal(() => decodeEnvelope(new Uint8Array(SNAPSHOT_LIMITS.maxPayloadBytes + 1024 + 1)), E.oversized);
    expect(e.details).toEqual({ limit: SNAPSHOT_LIMITS.maxPayloadBytes + 1024 });
    // Exactly at the bound it is parsed (and refused for what it is, not for its size).
    expect(
      (thrownBy(() => decodeEnvelope(new Uint8Array(SNAPSHOT_LIMITS.maxPayloadBytes + 1024))) as LoopxError).code,
    ).not.toBe(E.oversized);
  });

  it('every envelope decode refusal names a next action (ARCHITECTURE.md principle 3: a typed finding and one next action)', () => {
    const f = fieldsOf(valid);
    const cases: Array<[string, () => unknown]> = [
      [E.malformed, () => decodeEnvelope(new Uint8Array([0x0f]))],
      [E.unknownField, () => decodeEnvelope(concat(validBytes, new Uint8Array([0x28, 0x01])))],
      [E.unsupportedFormat, () => decodeEnvelope(rawEnvelope({ ...f, format: 'x' }))],
      [E.claimMalformed, () => decodeEnvelope(rawEnvelope({ ...f, claim: undefined }))],
      [E.digestMismatch, () => decodeEnvelope(rawEnvelope({ ...f, payloadSha256: flipBit(f.payloadSha256, 0) }))],
      [
        `${E.digestMismatch} (31-byte digest)`,
        () => decodeEnvelope(rawEnvelope({ ...f, payloadSha256: f.payloadSha256.subarray(0, 31) })),
      ],
      [E.nonCanonical, () => decodeEnvelope(concat(validBytes, rawEnvelope({ format: ENVELOPE_FORMAT })))],
      [E.oversized, () => decodeEnvelope(new Uint8Array(SNAPSHOT_LIMITS.maxPayloadBytes + 1024 + 1))],
    ];
    const withoutNextAction = cases.filter(([, fn]) => {
      const e = thrownBy(fn);
      return !isLoopxError(e) || !e.nextAction;
    });
    expect(withoutNextAction.map(([name]) => name)).toEqual([]);
  });
});

describe('verifyEnvelope: one secret-safe failure', () => {
  const failure = (fn: () => unknown) => {
    const e = refusal(fn, E.claimInvalid);
    return {
      kind: e.kind,
      code: e.code,
      message: e.message,
      nextAction: e.nextAction,
      details: e.details,
      cause: e.cause,
    };
  };

  it('unknown scope, unavailable generation and wrong HMAC give the same code, message and next action (snapshot_claim_invalid)', () => {
    const payload = payloadOf();
    // Unknown scope: signed by another user's authority, or a foreign scope id in the claim.
    const foreign = decodeEnvelope(encodeEnvelope(sign(payload, { by: other })));
    const foreignScope = decodeEnvelope(encodeEnvelope(sign(payload, { scopeId: u8(randomBytes(32)) })));
    // Unavailable generation: one that never existed here, and one that was retired.
    const neverExisted = decodeEnvelope(encodeEnvelope(sign(payload, { keyGeneration: 99, signingGeneration: 1 })));
    const a = newAuthority();
    a.rotate();
    const retired = decodeEnvelope(encodeEnvelope(sign(payload, { by: a, keyGeneration: 2 })));
    expect(verify(retired, a)).toBeInstanceOf(VerifiedSnapshot);
    a.retire(2);
    // Wrong HMAC: one bit off, or all zero.
    const wrong = decodeEnvelope(encodeEnvelope(sign(payload, { tamperHmac: (h) => flipBit(h, 0) })));
    const zero = decodeEnvelope(encodeEnvelope(sign(payload, { tamperHmac: () => new Uint8Array(32) })));

    const failures = [
      failure(() => verify(foreign)),
      failure(() => verify(foreignScope)),
      failure(() => verify(neverExisted)),
      failure(() => verify(retired, a)),
      failure(() => verify(wrong)),
      failure(() => verify(zero)),
    ];
    for (const f of failures) expect(f).toEqual(failures[0]);
    expect(failures[0]!.nextAction).toBeTruthy();
    expect(failures[0]!.cause).toBeUndefined();
    // The three causes as the brief names them, compared by code + message + next action.
    const [scopeE, genE, hmacE] = [failures[0]!, failures[2]!, failures[4]!].map((f) => ({
      code: f.code,
      message: f.message,
      nextAction: f.nextAction,
    }));
    expect(genE).toEqual(scopeE);
    expect(hmacE).toEqual(scopeE);
  });

  it('the failure says nothing about the envelope: no scope id, HMAC, digest or run id in its message, next action or JSON', () => {
    const env = decodeEnvelope(encodeEnvelope(sign(payloadOf(), { by: other })));
    const e = refusal(() => verify(env), E.claimInvalid);
    const text = JSON.stringify(e.toJSON()) + e.message + (e.nextAction ?? '');
    for (const secret of [
      hex(env.claim.scopeId),
      hex(authority.scopeId),
      hex(env.claim.hmac),
      hex(env.payloadSha256),
      env.state.runId,
    ]) {
      expect(text).not.toContain(secret);
    }
  });

  it('a verifier that throws — an Error, a LoopxError or a non-Error value — is the same failure, without the thrown value attached', () => {
    const env = sign(payloadOf());
    const reference = failure(() => verify(sign(payloadOf(), { tamperHmac: (h) => flipBit(h, 1) })));
    const throwers: Array<() => boolean> = [
      () => {
        throw new Error('key store offline');
      },
      () => {
        throw new LoopxError('internal', 'authority_closed', 'The run authority is closed.');
      },
      () => {
        throw 'a string';
      },
    ];
    for (const t of throwers) expect(failure(() => verifyEnvelope(env, t))).toEqual(reference);
  });

  it('only a literal true is a yes: truthy non-boolean answers fail the same way', () => {
    const env = sign(payloadOf());
    const reference = failure(() => verifyEnvelope(env, () => false));
    for (const answer of [1, 'true', {}, [true]])
      expect(failure(() => verifyEnvelope(env, () => answer as unknown as boolean))).toEqual(reference);
    expect(verifyEnvelope(env, () => true)).toBeInstanceOf(VerifiedSnapshot);
  });

  it('a closed authority cannot verify anything: its exception becomes the same failure', async () => {
    const a = newAuthority();
    const env = sign(payloadOf(), { by: a });
    expect(verify(env, a)).toBeInstanceOf(VerifiedSnapshot);
    const reference = failure(() => verify(sign(payloadOf(), { by: other })));
    await a.close();
    expect(failure(() => verify(env, a))).toEqual(reference);
  });

  it('the verifier is handed the envelope MAC input and its exact claim', () => {
    const env = sign(payloadOf());
    let got: [Uint8Array, SnapshotClaim] | undefined;
    verifyEnvelope(env, (mac, claim) => {
      got = [mac, claim];
      return true;
    });
    expect(hex(got![0])).toBe(hex(env.macInput()));
    expect(got![1]).toBe(env.claim);
  });
});

describe('no unsigned envelope, no unverified VerifiedSnapshot', () => {
  it('TypeScript refuses to construct either class (private constructors; checked by tsc via @ts-expect-error)', () => {
    // Never called: tsc fails this file if a constructor stops being private (unused @ts-expect-error).
    const typeLevelOnly = (env: SnapshotEnvelope, state: RunSnapshotState): unknown[] => [
      // @ts-expect-error -- SnapshotEnvelope's constructor is private to its module
      new SnapshotEnvelope(
        new Uint8Array(),
        new Uint8Array(32),
        { scopeId: new Uint8Array(32), keyGeneration: 1, hmac: new Uint8Array(32) },
        state,
      ),
      // @ts-expect-error -- VerifiedSnapshot's constructor is private to its module
      new VerifiedSnapshot(env),
    ];
    expect(typeof typeLevelOnly).toBe('function');
  });

  it('neither class can be constructed from outside, even when TypeScript is bypassed', () => {
    const state = validState();
    const payload = payloadOf(state);
    const Env = SnapshotEnvelope as unknown as new (...args: unknown[]) => SnapshotEnvelope;
    const Verified = VerifiedSnapshot as unknown as new (...args: unknown[]) => VerifiedSnapshot;
    const wellFormed = { scopeId: new Uint8Array(32), keyGeneration: 1, hmac: new Uint8Array(32) };
    expect(() => new Env(payload, sha(payload), wellFormed, state)).toThrow(TypeError);
    expect(
      () => new Env(Symbol('loopx.snapshot.envelope.construct'), payload, sha(payload), wellFormed, state),
    ).toThrow(TypeError);
    expect(() => new Env()).toThrow();
    expect(() => new Verified({})).toThrow(TypeError);
  });

  it('neither class has a static factory or any other static member', () => {
    for (const cls of [SnapshotEnvelope, VerifiedSnapshot]) {
      expect(Object.getOwnPropertyNames(cls).sort()).toEqual(['length', 'name', 'prototype']);
      expect(Object.getOwnPropertySymbols(cls)).toEqual([]);
      const statics = Object.getOwnPropertyNames(cls).filter(
        (k) => typeof (cls as unknown as Record<string, unknown>)[k] === 'function',
      );
      expect(statics).toEqual([]);
    }
  });

  it('the prototypes offer nothing that makes or re-signs an envelope (SnapshotEnvelope: macInput only; VerifiedSnapshot: state and digest getters only)', () => {
    expect(Object.getOwnPropertyNames(SnapshotEnvelope.prototype).sort()).toEqual(['constructor', 'macInput']);
    expect(Object.getOwnPropertyNames(VerifiedSnapshot.prototype).sort()).toEqual([
      'constructor',
      'payloadSha256Hex',
      'state',
    ]);
  });

  it('the envelope module exports no maker besides signEnvelope, decodeEnvelope and verifyEnvelope', () => {
    const functions = Object.entries(envelopeModule)
      .filter(([, v]) => typeof v === 'function')
      .map(([k]) => k)
      .sort();
    expect(functions).toEqual(
      [
        'SnapshotEnvelope',
        'VerifiedSnapshot',
        'claimInvalid',
        'decodeEnvelope',
        'encodeEnvelope',
        'envelopeOversized',
        'macInput',
        'signEnvelope',
        'verifyEnvelope',
      ].sort(),
    );
    expect(functions.filter((k) => /make|create|construct|build|unsafe|unsigned|from/i.test(k))).toEqual([]);
  });
});

// ---- tamper fuzz ----

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; byte: number };

function mutate(bytes: Uint8Array, m: Mutation): Uint8Array {
  const at = (n: number) => m.at % n;
  switch (m.kind) {
    case 'flip':
      return flipBit(bytes, at(bytes.length), m.bit);
    case 'truncate':
      return bytes.subarray(0, at(bytes.length)); // 0 … length-1 bytes kept
    case 'insert': {
      const i = at(bytes.length + 1);
      return concat(bytes.subarray(0, i), new Uint8Array([m.byte]), bytes.subarray(i));
    }
  }
}

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
);

type Outcome = 'decode_refused' | 'verify_refused';

/**
 * Tampered bytes must be refused by decodeEnvelope (a rejected LoopxError) or, if they decode, by
 * verifyEnvelope against the real authority (snapshot_claim_invalid). Anything else — an untyped
 * exception, another code, or acceptance — fails.
 */
function assertRefused(tampered: Uint8Array, original: Uint8Array, transitionGeneration = 1): Outcome {
  expect(hex(tampered)).not.toBe(hex(original));
  let env: SnapshotEnvelope;
  try {
    env = decodeEnvelope(tampered);
  } catch (e) {
    if (!isLoopxError(e) || e.kind !== 'rejected')
      throw new Error(`decodeEnvelope threw an untyped exception: ${String(e)}`, { cause: e });
    return 'decode_refused';
  }
  try {
    verify(env, authority, transitionGeneration);
  } catch (e) {
    if (!isLoopxError(e) || e.code !== E.claimInvalid)
      throw new Error(`verifyEnvelope threw ${String(e)}`, { cause: e });
    return 'verify_refused';
  }
  throw new Error(`tampered envelope accepted (${tampered.length} bytes, run ${env.state.runId})`);
}

describe('tamper fuzz: flips, truncations and insertions anywhere are refused, always typed', () => {
  it('every single bit flip of a signed envelope (exhaustive) is refused; flips in the HMAC, scope id and key generation reach verification', () => {
    const original = encodeEnvelope(sign(payloadOf()));
    const env = decodeEnvelope(original);
    const outcomes = new Map<number, Outcome>();
    for (let i = 0; i < original.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const o = assertRefused(flipBit(original, i, bit), original);
        if (o === 'verify_refused') outcomes.set(i, o);
      }
    }
    const hmacAt = Buffer.from(original).lastIndexOf(Buffer.from(env.claim.hmac));
    const scopeAt = Buffer.from(original).lastIndexOf(Buffer.from(env.claim.scopeId));
    for (let i = 0; i < 32; i++) {
      expect(outcomes.get(hmacAt + i), `hmac byte ${i}`).toBe('verify_refused');
      expect(outcomes.get(scopeAt + i), `scope byte ${i}`).toBe('verify_refused');
    }
    // Every other flip that decodes is in the claim's key generation varint.
    const claimRegion = new Set([
      ...Array.from({ length: 32 }, (_, i) => hmacAt + i),
      ...Array.from({ length: 32 }, (_, i) => scopeAt + i),
    ]);
    const others = [...outcomes.keys()].filter((i) => !claimRegion.has(i));
    expect(others.every((i) => i > scopeAt + 31 && i < hmacAt)).toBe(true);
  });

  it('every truncation of a signed envelope (exhaustive, 0 … n−1 bytes kept) is refused by decode', () => {
    const original = encodeEnvelope(sign(payloadOf(terminalState())));
    for (let n = 0; n < original.length; n++)
      expect(assertRefused(original.subarray(0, n), original)).toBe('decode_refused');
  });

  it('seeded fast-check: any flip, truncation or byte insertion of any valid signed envelope is refused (300 runs)', () => {
    const counts: Record<Outcome, number> = { decode_refused: 0, verify_refused: 0 };
    fc.assert(
      fc.property(
        validStateArb,
        fc.integer({ min: 1, max: 9 }),
        fc.array(mutationArb, { minLength: 1, maxLength: 3 }),
        (state, tg, mutations) => {
          const original = encodeEnvelope(sign(payloadOf(state), { transitionGeneration: tg }));
          // The untampered envelope verifies: the property is about the mutations alone.
          expect(verify(decodeEnvelope(original), authority, tg)).toBeInstanceOf(VerifiedSnapshot);
          let tampered = original;
          for (const m of mutations) tampered = mutate(tampered, m);
          fc.pre(hex(tampered) !== hex(original)); // two flips of the same bit cancel out
          counts[assertRefused(tampered, original, tg)]++;
        },
      ),
      { seed: 70_007, numRuns: 300 },
    );
    expect(counts.decode_refused).toBeGreaterThan(0);
  });

  it('seeded fast-check: flips confined to the claim always decode and are refused by verification (300 runs)', () => {
    const original = encodeEnvelope(sign(payloadOf()));
    const env = decodeEnvelope(original);
    const hmacAt = Buffer.from(original).lastIndexOf(Buffer.from(env.claim.hmac));
    const scopeAt = Buffer.from(original).lastIndexOf(Buffer.from(env.claim.scopeId));
    fc.assert(
      fc.property(fc.boolean(), fc.integer({ min: 0, max: 31 }), fc.integer({ min: 0, max: 7 }), (inHmac, i, bit) => {
        expect(assertRefused(flipBit(original, (inHmac ? hmacAt : scopeAt) + i, bit), original)).toBe('verify_refused');
      }),
      { seed: 70_008, numRuns: 300 },
    );
  });
});
