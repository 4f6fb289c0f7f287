/** Accepted snapshots: round trips, determinism, the golden v1alpha2 vector and the wire numbers. */
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import {
  decodeSnapshot,
  encodeSnapshot,
  LIFECYCLE_WIRE_NUMBER,
  SNAPSHOT_FORMAT,
  SNAPSHOT_VERSION,
  snapshotDigest,
  type RunSnapshotState,
} from '../../src/snapshot/index.js';
import { validState } from './arbitraries.js';

const golden = new Uint8Array(
  Buffer.from(
    readFileSync(new URL('./fixtures/golden-v1alpha2.hex', import.meta.url), 'utf8').replace(/\s+/g, ''),
    'hex',
  ),
);
const GOLDEN_SHA256 = 'a7a3dd8a426bdfc9f8b48dc85cdf07d18d65fcd1f653508676f1afa1fb2c6565';

const roundTrip = (state: RunSnapshotState) => {
  const bytes = encodeSnapshot(state);
  const decoded = decodeSnapshot(bytes);
  expect(decoded).toEqual(state);
  expect(Buffer.from(encodeSnapshot(decoded)).equals(Buffer.from(bytes))).toBe(true);
  return bytes;
};

describe('snapshot codec round trip', () => {
  test('a suspended run round-trips to an equal state and identical bytes', () => {
    roundTrip(validState());
  });

  test.each(['completed', 'failed', 'cancelled'] as const)('a %s run round-trips', (lifecycle) => {
    roundTrip({ ...validState(), lifecycle });
  });

  test('a run with no history, components or interactions round-trips', () => {
    const s = validState();
    roundTrip({
      ...s,
      completedTurns: 0,
      turnLimit: 0,
      lastSequence: 1,
      messages: [],
      usedInteractionIds: [],
      planIdentity: { ...s.planIdentity, components: [], compatibilityIdentity: '' },
    });
  });

  test('empty text parts and empty part lists round-trip', () => {
    const s = validState();
    roundTrip({
      ...s,
      messages: [
        ...s.messages,
        { id: 'e1', role: 'user', parts: [{ type: 'text', text: '' }] },
        { id: 'e2', role: 'assistant', parts: [] },
      ],
    });
  });

  test('canonical JSON with integer-like keys (sorted by code units) is accepted', () => {
    const s = validState();
    roundTrip({
      ...s,
      messages: [
        ...s.messages,
        {
          id: 'x1',
          role: 'assistant',
          parts: [
            {
              type: 'tool_call',
              callId: 'c1',
              toolName: 't',
              argumentsJson: '{"10":1,"2":2,"a":[1e+21,-1.5,"\\u001f"]}',
            },
          ],
        },
        {
          id: 'x2',
          role: 'tool',
          parts: [{ type: 'tool_result', callId: 'c1', toolName: 't', status: 'error', resultJson: '"é🧪"' }],
        },
      ],
    });
  });

  test('the largest last sequence (2^53 − 1) round-trips', () => {
    roundTrip({ ...validState(), lastSequence: Number.MAX_SAFE_INTEGER });
  });

  test('encoding the same state twice gives identical bytes', () => {
    expect(Buffer.from(encodeSnapshot(validState())).equals(Buffer.from(encodeSnapshot(validState())))).toBe(true);
  });

  test('encoding does not depend on the key order of the state objects', () => {
    const s = validState();
    const reordered = JSON.parse(
      JSON.stringify(s, Object.keys(s).reverse().concat(['id', 'version', 'provider', 'modelId'])),
    ) as RunSnapshotState;
    const shuffled: RunSnapshotState = {
      ...reordered,
      messages: s.messages,
      planIdentity: s.planIdentity,
      usedInteractionIds: s.usedInteractionIds,
    };
    expect(Buffer.from(encodeSnapshot(shuffled)).equals(Buffer.from(encodeSnapshot(s)))).toBe(true);
  });

  test('the golden v1alpha2 vector encodes byte-identically and decodes to its state', () => {
    expect(Buffer.from(encodeSnapshot(validState())).toString('hex')).toBe(Buffer.from(golden).toString('hex'));
    expect(decodeSnapshot(golden)).toEqual(validState());
    expect(snapshotDigest(golden)).toBe(GOLDEN_SHA256);
  });

  test('a payload starts with its format and version framing', () => {
    const bytes = Buffer.from(encodeSnapshot(validState()));
    expect(bytes.subarray(0, 2 + SNAPSHOT_FORMAT.length).toString('latin1')).toBe(`\x0a\x12${SNAPSHOT_FORMAT}`);
    expect(bytes.subarray(20, 30).toString('latin1')).toBe(`\x12\x08${SNAPSHOT_VERSION}`);
  });

  test('the snapshot digest is the lowercase hex SHA-256 of the payload', () => {
    expect(snapshotDigest(new Uint8Array())).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  test('lifecycle wire numbers are the frozen MAC values', () => {
    expect(LIFECYCLE_WIRE_NUMBER).toEqual({ active: 1, suspended: 2, completed: 3, failed: 4, cancelled: 5 });
  });

  test('a payload that is a view into a larger buffer decodes', () => {
    const bytes = encodeSnapshot(validState());
    const big = new Uint8Array(bytes.byteLength + 64).fill(0xee);
    big.set(bytes, 32);
    expect(decodeSnapshot(big.subarray(32, 32 + bytes.byteLength))).toEqual(validState());
  });

  test('a decoded state does not alias the payload bytes', () => {
    const bytes = encodeSnapshot(validState());
    const copy = new Uint8Array(bytes);
    const decoded = decodeSnapshot(copy);
    copy.fill(0);
    expect(decoded).toEqual(validState());
  });
});
