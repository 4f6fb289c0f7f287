/**
 * Seeded property tests of the codec: (a) valid states round-trip byte-identically, (b) damaged
 * payloads are refused with a LoopxError or are themselves canonical, never any other exception,
 * (c) separate Node processes encode the same states to the same bytes.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { isLoopxError } from '../../src/core/errors.js';
import { decodeSnapshot, encodeSnapshot, SNAPSHOT_ERRORS } from '../../src/snapshot/index.js';
import { crossProcessStates, validStateArb } from './arbitraries.js';

const SEED = 42;
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));
const CODES: ReadonlySet<string> = new Set(Object.values(SNAPSHOT_ERRORS));

/** A damaged copy of a payload. */
type Damage =
  | { kind: 'flip'; at: number; xor: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'overwrite'; at: number; bytes: Uint8Array };

const damageArb: fc.Arbitrary<Damage[]> = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }) }),
    fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
    }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 8 }) }),
    fc.record({
      kind: fc.constant('overwrite' as const),
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 4 }),
    }),
  ),
  { minLength: 1, maxLength: 3 },
);

function applyDamage(input: Uint8Array, damage: readonly Damage[]): Uint8Array {
  let b = Buffer.from(input);
  for (const d of damage) {
    const at = b.length === 0 ? 0 : d.at % (b.length + 1);
    switch (d.kind) {
      case 'flip':
        if (b.length > 0) {
          b = Buffer.from(b);
          b[at % b.length]! ^= d.xor;
        }
        break;
      case 'truncate':
        b = b.subarray(0, at);
        break;
      case 'insert':
        b = Buffer.concat([b.subarray(0, at), d.bytes, b.subarray(at)]);
        break;
      case 'delete':
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + d.length)]);
        break;
      case 'overwrite':
        b = Buffer.concat([b.subarray(0, at), d.bytes, b.subarray(at + d.bytes.length)]);
        break;
    }
  }
  return new Uint8Array(b);
}

/** decode either refuses with a snapshot code or accepts exactly the canonical bytes. */
function decodeIsClosed(bytes: Uint8Array): void {
  let state;
  try {
    state = decodeSnapshot(bytes);
  } catch (e) {
    if (!isLoopxError(e) || e.kind !== 'rejected' || !CODES.has(e.code)) throw e;
    return;
  }
  expect(same(encodeSnapshot(state), bytes)).toBe(true);
}

describe('snapshot codec properties', () => {
  test('a valid run state round-trips byte-identically (encode → decode → encode)', () => {
    fc.assert(
      fc.property(validStateArb, (state) => {
        const bytes = encodeSnapshot(state);
        const decoded = decodeSnapshot(bytes);
        expect(decoded).toEqual(state);
        expect(same(encodeSnapshot(decoded), bytes)).toBe(true);
        expect(same(encodeSnapshot(state), bytes)).toBe(true);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });

  test('a damaged payload is refused with a LoopxError or is itself canonical — never another exception', () => {
    fc.assert(
      fc.property(validStateArb, damageArb, (state, damage) => {
        decodeIsClosed(applyDamage(encodeSnapshot(state), damage));
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  test('arbitrary bytes are refused with a LoopxError or are canonical', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        decodeIsClosed(bytes);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  test('separate Node processes encode the same states to identical bytes', () => {
    const script = fileURLToPath(new URL('./fixtures/encode-child.ts', import.meta.url));
    const runChild = (): string[] => {
      const child = spawnSync(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8', timeout: 60_000 });
      expect(child.stderr).toBe('');
      expect(child.status).toBe(0);
      return child.stdout.trim().split('\n');
    };
    const first = runChild();
    const second = runChild();
    const here = crossProcessStates().map((s) => Buffer.from(encodeSnapshot(s)).toString('hex'));
    expect(first.length).toBe(here.length);
    expect(first).toEqual(second);
    expect(first).toEqual(here);
  });
});
