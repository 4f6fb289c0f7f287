/**
 * core's one-pass canonical JSON encoder against its definition (`canonicalJsonReference`: the
 * whole value checked, then the `canonicalize` package): the same text for every value the
 * definition encodes, byte for byte, and the same refusal (code, or error message) for every
 * value it refuses; and `canonicalJsonEach`, which writes an object met again once, the same texts
 * as the definition value by value, wherever the shared objects sit.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { canonicalJson, canonicalJsonEach, canonicalJsonReference } from '../../src/core/canonical-json.js';

/** What a call does: its text, or the refusal it throws (a typed code, else the message). */
const outcome = (encode: (v: unknown) => string, v: unknown): string => {
  try {
    return `text ${encode(v)}`;
  } catch (e) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    return `refused ${typeof code === 'string' ? code : String(message)}`;
  }
};

const agree = (v: unknown): void => {
  const expected = outcome(canonicalJsonReference, v);
  expect(outcome(canonicalJson, v)).toBe(expected);
};

const oddString = fc.string({
  unit: fc.constantFrom(
    'a',
    'Z',
    ' ',
    '~',
    'é',
    'ß',
    '"',
    '\\',
    '/',
    '\n',
    '\t',
    '\b',
    '\u0000',
    '\u001f',
    '\u007f',
    '\u0080',
    '\u2028',
    '\u2029',
    '\ud800',
    '\udbff',
    '\udc00',
    '\udfff',
    '🧪',
    '中',
    '\ufeff',
  ),
  maxLength: 10,
});
const oddNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(
    0,
    -0,
    1e21,
    -1e21,
    1e20,
    1e-7,
    -1e-7,
    1e-6,
    5e-324,
    Number.MAX_VALUE,
    Number.MIN_SAFE_INTEGER,
    2 ** 53 + 2,
    0.1 + 0.2,
    123456789012345,
    1234567890123456,
  ),
);
const oddKey = fc.oneof(
  oddString,
  fc.constantFrom('10', '2', '1', '', 'a', 'B', 'b', '__proto__', 'toJSON', 'é', 'z', '\ud800', '🧪', 'A', '_'),
);
const oddValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    oddString,
    oddNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(oddKey, tie('value'), { maxKeys: 5 }),
  ),
})).value;

const nested = (depth: number, leaf: unknown): unknown => {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
  return v;
};

describe('canonical JSON', () => {
  test('the one-pass encoder writes exactly the definition’s text for arbitrary JSON values', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.jsonValue(), fc.jsonValue({ stringUnit: 'binary' }), fc.jsonValue({ stringUnit: 'grapheme' })),
        agree,
      ),
      { seed: 7, numRuns: 3000 },
    );
  });

  test('the one-pass encoder agrees with the definition on odd strings, numbers and member names (lone surrogates refused alike)', () => {
    fc.assert(fc.property(oddValue, agree), { seed: 8, numRuns: 5000 });
  });

  test('objects whose members are built in unsorted order encode sorted by UTF-16 code units', () => {
    const v = { b: 1, a: [{ z: null, y: true, '10': 'x', '2': -0 }], é: 1e21, A: 1e-7, '🧪': 'x', '\uffff': 0 };
    expect(canonicalJson(v)).toBe(canonicalJsonReference(v));
    expect(canonicalJson(v)).toBe(
      '{"A":1e-7,"a":[{"10":"x","2":0,"y":true,"z":null}],"b":1,"é":1e+21,"🧪":"x","\uffff":0}',
    );
  });

  test.each([
    ['NaN', Number.NaN],
    ['Infinity', { a: [Infinity] }],
    ['undefined member', { a: undefined }],
    ['a hole', [1, , 2]],
    ['a Date', { at: new Date(0) }],
    ['a Map', new Map()],
    ['a null-prototype object', Object.create(null) as unknown],
    ['a bigint', 1n],
    ['a function', () => 1],
    ['a lone surrogate value', { a: '\ud800' }],
    ['a lone surrogate name', { '\udc00': 1 }],
    ['a toJSON member that is not a function', { toJSON: 1, a: 2 }],
    ['a non-enumerable toJSON', Object.defineProperty({ a: 1 }, 'toJSON', { value: () => 'x', enumerable: false })],
    ['an array with a toJSON', Object.assign([1], { toJSON: () => 'x' })],
    ['64 levels', nested(64, 1)],
    ['65 levels', nested(65, 1)],
    ['65 levels around an empty array', nested(64, [])],
    ['65 levels around an empty object', nested(64, {})],
    ['66 levels around an empty array', nested(65, [])],
  ])('%s: the same answer as the definition', (_name, v) => {
    agree(v);
  });

  test('a cycle is refused as too deep, as the definition refuses it', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(outcome(canonicalJson, a)).toBe('refused json_too_deep');
    agree(a);
  });

  test('canonicalJsonEach writes each value’s definition text, with shared objects at any depths (too deep where the definition says so)', () => {
    const eachOutcome = (values: unknown[]): string[] => {
      try {
        return canonicalJsonEach(values).map((t) => `text ${t}`);
      } catch {
        return ['refused'];
      }
    };
    const placed = fc.tuple(
      fc.dictionary(oddKey, oddValue, { maxKeys: 4 }),
      fc.array(fc.tuple(fc.nat({ max: 66 }), fc.boolean()), { minLength: 1, maxLength: 4 }),
    );
    fc.assert(
      fc.property(placed, ([shared, places]) => {
        // The same object, wrapped in arrays or objects to each depth: one value per place.
        const values = places.map(([depth, inArray]) => {
          let v: unknown = shared;
          for (let i = 0; i < depth; i++) v = inArray ? [v, i] : { at: i, v };
          return v;
        });
        const expected = values.map((v) => outcome(canonicalJsonReference, v));
        const got = eachOutcome(values);
        if (expected.some((e) => e.startsWith('refused'))) expect(got).toEqual(['refused']);
        else expect(got).toEqual(expected);
        values.forEach(agree);
      }),
      { seed: 9, numRuns: 1500 },
    );
    const todo = { title: 'x', todo_id: 't1' };
    expect(canonicalJsonEach([[{ todo }], { todos: [todo] }, { todo }, todo])).toEqual([
      '[{"todo":{"title":"x","todo_id":"t1"}}]',
      '{"todos":[{"title":"x","todo_id":"t1"}]}',
      '{"todo":{"title":"x","todo_id":"t1"}}',
      '{"title":"x","todo_id":"t1"}',
    ]);
  });
});
