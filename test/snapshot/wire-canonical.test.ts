/**
 * The wire-level canonical check (wire-canonical.ts) replaces "re-encode and compare" in decode.
 * It must agree with re-encoding: anything decode accepts re-encodes to the same bytes
 * (soundness), and every canonical payload is accepted (completeness). Targeted cases cover each
 * way a valid-looking payload can be non-canonical.
 */
import { toBinary } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isLoopxError } from '../../src/core/errors.js';
import { decodeSnapshot, encodeSnapshot, SNAPSHOT_ERRORS } from '../../src/snapshot/index.js';
import { isCanonicalSnapshotWire } from '../../src/snapshot/wire-canonical.js';
import { RunSnapshotSchema } from '../../src/snapshot/gen/loopx/snapshot/v1alpha2/snapshot_pb.js';
import { toPb, validState, validStateArb, concat, mutate, mutationArb } from './support.js';

const refusedAsNonCanonical = (bytes: Uint8Array): void => {
  let err: unknown;
  try {
    decodeSnapshot(bytes);
  } catch (e) {
    err = e;
  }
  expect(isLoopxError(err) && err.code, 'expected snapshot_non_canonical_encoding').toBe(
    SNAPSHOT_ERRORS.nonCanonicalEncoding,
  );
};

describe('wire-level canonical encoding check', () => {
  it('accepts every canonical payload (completeness): 300 random valid states', () => {
    fc.assert(
      fc.property(validStateArb, (state) => {
        expect(isCanonicalSnapshotWire(encodeSnapshot(state))).toBe(true);
      }),
      { seed: 8_017, numRuns: 300 },
    );
  });

  it('anything decode accepts re-encodes to exactly its bytes (soundness): 3,000 random mutations', () => {
    fc.assert(
      fc.property(validStateArb, mutationArb, (state, m) => {
        const mutated = mutate(encodeSnapshot(state), m);
        let decoded;
        try {
          decoded = decodeSnapshot(mutated);
        } catch (e) {
          expect(isLoopxError(e)).toBe(true);
          return;
        }
        expect(Buffer.from(encodeSnapshot(decoded)).equals(Buffer.from(mutated))).toBe(true);
      }),
      { seed: 4_242, numRuns: 3_000 },
    );
  });

  it('refuses a singular field written twice (the parser would keep the last)', () => {
    const b = encodeSnapshot(validState());
    // Field 1 (format) again at the end: tag 0x0a, length, bytes.
    const format = new TextEncoder().encode('loopx.run-snapshot');
    refusedAsNonCanonical(concat(b, new Uint8Array([0x0a, format.length]), format));
  });

  it('refuses fields out of field-number order', () => {
    const pb = toPb(validState());
    const whole = toBinary(RunSnapshotSchema, pb);
    // Move the leading format field (field 1) to the end.
    const len = whole[1]!;
    const first = whole.subarray(0, 2 + len);
    refusedAsNonCanonical(concat(whole.subarray(2 + len), first));
  });

  it('refuses a non-minimal varint (a length written with a redundant continuation byte)', () => {
    const b = encodeSnapshot(validState());
    const len = b[1]!;
    refusedAsNonCanonical(concat(new Uint8Array([0x0a, 0x80 | len, 0x00]), b.subarray(2)));
  });

  it('refuses an implicit zero value written explicitly (completed_turns = 0 between fields 6 and 8)', () => {
    const state = { ...validState(), completedTurns: 0, lastSequence: 1 };
    const b = encodeSnapshot(state);
    // Walk the top-level fields to the start of field 8 (messages), then insert tag 7 / varint 0.
    let pos = 0;
    const varint = (): number => {
      let v = 0;
      let scale = 1;
      for (;;) {
        const x = b[pos++]!;
        v += (x & 0x7f) * scale;
        scale *= 128;
        if (!(x & 0x80)) return v;
      }
    };
    let at = -1;
    while (pos < b.length) {
      const start = pos;
      const tag = varint();
      if (tag >> 3 >= 8) {
        at = start;
        break;
      }
      if ((tag & 7) === 2) {
        const length = varint(); // read before advancing: `pos += varint()` would use the old pos
        pos += length;
      } else varint();
    }
    expect(at).toBeGreaterThan(0);
    refusedAsNonCanonical(concat(b.subarray(0, at), new Uint8Array([0x38, 0x00]), b.subarray(at)));
  });

  it('refuses a string that is not valid UTF-8 (as malformed or non-canonical, never accepted)', () => {
    const state = validState();
    const b = encodeSnapshot(state);
    const runId = new TextEncoder().encode(state.runId);
    const at = Buffer.from(b).indexOf(Buffer.from(runId));
    const bad = new Uint8Array(b);
    bad[at] = 0xff;
    let err: unknown;
    try {
      decodeSnapshot(bad);
    } catch (e) {
      err = e;
    }
    expect([SNAPSHOT_ERRORS.malformed, SNAPSHOT_ERRORS.nonCanonicalEncoding]).toContain(isLoopxError(err) && err.code);
  });
});
