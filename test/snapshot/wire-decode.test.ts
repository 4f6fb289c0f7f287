/**
 * The fused one-pass decoder (wire-decode.ts) is decode's fast path. It must be sound against the
 * definition path (codec.ts decodeSnapshotByDefinition): whatever it decodes, the definition
 * decodes to the same state and the same verdict; and it must answer for every payload the
 * encoder writes. Targeted cases cover each check it makes before handing a payload back.
 */
import { create } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/errors.js';
import { decodeSnapshotByDefinition } from '../../src/snapshot/codec.js';
import {
  decodeSnapshot,
  encodeSnapshot,
  SNAPSHOT_ERRORS,
  validateSnapshotState,
  type RunSnapshotState,
} from '../../src/snapshot/index.js';
import {
  RunSnapshotSchema,
  type Lifecycle,
  type Role,
} from '../../src/snapshot/gen/loopx/snapshot/v1alpha2/snapshot_pb.js';
import { decodeCanonicalSnapshot } from '../../src/snapshot/wire-decode.js';
import { rawEncode, rawEncodeState, toPb, validState, validStateArb, concat, mutate, mutationArb } from './support.js';

type Verdict = { ok: true; state: RunSnapshotState } | { ok: false; code: string };

const verdict = (fn: () => RunSnapshotState): Verdict => {
  try {
    return { ok: true, state: fn() };
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    return { ok: false, code: e.code };
  }
};

/** If the fast path answers, the definition gives the same state and the same verdict. */
function expectAgreement(bytes: Uint8Array): void {
  const fast = decodeCanonicalSnapshot(bytes);
  if (fast === undefined) return;
  const definition = verdict(() => decodeSnapshotByDefinition(bytes));
  const fused = verdict(() => {
    validateSnapshotState(fast);
    return fast;
  });
  expect(fused).toEqual(definition);
  if (fused.ok) expect(Buffer.from(encodeSnapshot(fused.state)).equals(Buffer.from(bytes))).toBe(true);
}

const notSure = (bytes: Uint8Array): void => expect(decodeCanonicalSnapshot(bytes)).toBeUndefined();

describe('fused snapshot decoder', () => {
  it('answers for every payload the encoder writes, with the state the definition decodes: 300 random valid states', () => {
    fc.assert(
      fc.property(validStateArb, (state) => {
        const bytes = encodeSnapshot(state);
        const fast = decodeCanonicalSnapshot(bytes);
        expect(fast).toBeDefined();
        expect(fast).toEqual(decodeSnapshotByDefinition(bytes));
        expect(fast).toEqual(state);
      }),
      { seed: 17_001, numRuns: 300 },
    );
  });

  it('agrees with the definition on 5,000 damaged payloads (state and verdict), never answering for one it would refuse', () => {
    fc.assert(
      fc.property(validStateArb, mutationArb, (state, m) => {
        const mutated = mutate(encodeSnapshot(state), m);
        expectAgreement(mutated);
      }),
      { seed: 17_002, numRuns: 5_000 },
    );
  });

  it('keeps a leading U+FEFF in a string (text, not a byte-order mark), as the parser does', () => {
    const state = validState();
    state.messages[0] = { ...state.messages[0]!, parts: [{ type: 'text', text: '\ufeffhello' }] };
    const bytes = encodeSnapshot(state);
    expect(decodeCanonicalSnapshot(bytes)).toEqual(state);
    expect(decodeSnapshot(bytes)).toEqual(state);
  });

  it('decodes short and long, ASCII and non-ASCII strings, and an empty text part, exactly', () => {
    const state = validState();
    const texts = ['', 'a', 'é', 'x'.repeat(48), 'x'.repeat(47) + 'é', '😀'.repeat(30), 'y'.repeat(5000) + '\u0000'];
    state.messages[0] = { ...state.messages[0]!, parts: texts.map((text) => ({ type: 'text' as const, text })) };
    const bytes = encodeSnapshot(state);
    expect(decodeCanonicalSnapshot(bytes)).toEqual(state);
  });

  it('answers "not sure" for invalid UTF-8 in a short and in a long string', () => {
    for (const text of ['short text', 'long text '.repeat(20)]) {
      const state = validState();
      state.messages[0] = { ...state.messages[0]!, parts: [{ type: 'text', text }] };
      const bytes = new Uint8Array(encodeSnapshot(state));
      const at = Buffer.from(bytes).indexOf(Buffer.from(text));
      bytes[at + 3] = 0xc3; // a lead byte followed by ASCII
      notSure(bytes);
      expectAgreement(bytes);
      expect(() => decodeSnapshot(bytes)).toThrow();
    }
  });

  it('answers "not sure" for every defect the definition refuses before validation', () => {
    const s = validState();
    const pb = (): ReturnType<typeof toPb> => toPb(s);
    const cases: Record<string, Uint8Array> = {
      'unknown top-level field': concat(
        encodeSnapshot(s),
        new BinaryWriter().tag(13, WireType.Varint).uint32(1).finish(),
      ),
      'wrong format': rawEncode({ ...pb(), format: 'loopx.other' }),
      'wrong version': rawEncode({ ...pb(), version: 'v9' }),
      'no format': rawEncode({ ...pb(), format: '' }),
      'no definition': rawEncode({ ...pb(), definition: undefined }),
      'no model': rawEncode({ ...pb(), model: undefined }),
      'no plan identity': rawEncode({ ...pb(), planIdentity: undefined }),
      'no lifecycle': rawEncode({ ...pb(), lifecycle: 0 }),
      'unknown lifecycle': rawEncode({ ...pb(), lifecycle: 99 as Lifecycle }),
      'last_sequence beyond 2^53 − 1': rawEncode({ ...pb(), lastSequence: 2n ** 53n }),
      'unknown role': (() => {
        const p = pb();
        p.messages[0]!.role = 9 as Role;
        return rawEncode(p);
      })(),
      'a part without content': (() => {
        const p = pb();
        p.messages[0]!.parts[0]!.content = { case: undefined };
        return rawEncode(p);
      })(),
      'a fingerprint of 31 bytes': (() => {
        const p = pb();
        p.planIdentity!.fingerprint = p.planIdentity!.fingerprint.subarray(1);
        return rawEncode(p);
      })(),
      'a component without kind': (() => {
        const p = pb();
        p.planIdentity!.components[0]!.kind = 0;
        return rawEncode(p);
      })(),
    };
    for (const [name, bytes] of Object.entries(cases)) {
      expect(decodeCanonicalSnapshot(bytes), name).toBeUndefined();
      expect(() => decodeSnapshot(bytes), name).toThrow();
    }
  });

  it('answers "not sure" for two oneof members in one part and for a repeated field split by another field', () => {
    const s = validState();
    // A part holding a text and then a tool call: both members of the oneof, in field order.
    const part = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string('a')
      .tag(2, WireType.LengthDelimited)
      .bytes(new Uint8Array())
      .finish();
    const message = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string('m')
      .tag(2, WireType.Varint)
      .int32(2)
      .tag(3, WireType.LengthDelimited)
      .bytes(part)
      .finish();
    const pb = toPb(s);
    const head = rawEncode({ ...pb, planIdentity: undefined, usedInteractionIds: [], lastSequence: 0n, lifecycle: 0 });
    const tail = rawEncode(
      create(RunSnapshotSchema, {
        planIdentity: pb.planIdentity,
        lastSequence: pb.lastSequence,
        lifecycle: pb.lifecycle,
      }),
    );
    const withMessage = concat(head, new BinaryWriter().tag(8, WireType.LengthDelimited).bytes(message).finish(), tail);
    expect(decodeSnapshotByDefinition(concat(head, tail))).toBeDefined(); // the same bytes without the extra message are valid
    notSure(withMessage);
    expectAgreement(withMessage);
    // used_interaction_ids (10) split by last_sequence (11) and a second 10.
    const ids = rawEncodeState({ ...s, usedInteractionIds: ['a', 'b'] });
    notSure(concat(ids, new BinaryWriter().tag(10, WireType.LengthDelimited).string('c').finish()));
  });

  it('answers "not sure" beyond a count bound, without reading on', () => {
    const framing = new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .string('loopx.run-snapshot')
      .tag(2, WireType.LengthDelimited)
      .string('v1alpha2')
      .finish();
    const empties = new Uint8Array(2 * 10_001);
    for (let i = 0; i < empties.length; i += 2) empties[i] = 0x42;
    notSure(concat(framing, empties));
    expect(() => decodeSnapshot(concat(framing, empties))).toThrow(
      expect.objectContaining({ code: SNAPSHOT_ERRORS.oversized }),
    );
  });
});
