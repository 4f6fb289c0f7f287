/**
 * The codec's canonical-JSON check against its definition, `canonicalJson(JSON.parse(t)) === t`:
 * the fast scanner may say "not sure", but it must never accept a text the definition refuses,
 * and assertCanonicalJson must accept exactly the texts the definition accepts.
 */
import canonicalizePackage from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { canonicalJson, canonicalJsonByteLength } from '../../src/core/canonical-json.js';
import { isLoopxError } from '../../src/core/errors.js';
import { assertCanonicalJson, isCanonicalJsonFast } from '../../src/snapshot/canonical-json-check.js';

const definitionAccepts = (text: string): boolean => {
  try {
    return canonicalJson(JSON.parse(text)) === text;
  } catch {
    return false;
  }
};

const checkAccepts = (text: string): boolean => {
  try {
    assertCanonicalJson(text, {});
    return true;
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    return false;
  }
};

const hasEscapedName = (v: unknown): boolean =>
  v !== null &&
  typeof v === 'object' &&
  (Array.isArray(v)
    ? v.some(hasEscapedName)
    : Object.entries(v).some(([k, x]) => JSON.stringify(k) !== `"${k}"` || hasEscapedName(x)));

const jsonValue = fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }));
const weirdString = fc.string({
  unit: fc.constantFrom(
    'a',
    'é',
    '"',
    '\\',
    '\n',
    '\u0000',
    '\u001f',
    '\u007f',
    '\ud800',
    '\udc00',
    '🧪',
    '/',
    '\u2028',
  ),
  maxLength: 8,
});
const weirdValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    weirdString,
    fc.double(),
    fc.integer(),
    fc.constantFrom(0, -0, 1e21, 1e-7, 123456789012345, 1234567890123456, 2 ** 53 + 2, 0.1 + 0.2),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(weirdString, fc.constantFrom('10', '2', '__proto__', 'a', 'B')), tie('value'), {
      maxKeys: 3,
    }),
  ),
})).value;

/** Texts near canonical form: canonical texts, plain JSON.stringify output, pretty printing, and edits. */
const candidateText = fc.oneof(
  jsonValue.map((v) => canonicalJson(v)),
  weirdValue.map((v) => JSON.stringify(v) ?? 'null'),
  weirdValue.map((v) => JSON.stringify(v, null, 1) ?? 'null'),
  fc
    .tuple(
      jsonValue.map((v) => canonicalJson(v)),
      fc.nat(),
      fc.constantFrom(' ', '0', '-', '.', 'e', '"', '\\', ',', '}', ']', '\\u0041', '\\ud800', 'E+1'),
    )
    .map(([t, at, ins]) => t.slice(0, at % (t.length + 1)) + ins + t.slice(at % (t.length + 1))),
  fc.string({
    unit: fc.constantFrom('{', '}', '[', ']', '"', ':', ',', '0', '1', '-', '.', 'e', 'a', '\\', 'u', 'n', 't'),
    maxLength: 12,
  }),
);

const outcome = (f: () => string | undefined): string => {
  try {
    return `text ${f()}`;
  } catch (e) {
    return `error ${(e as Error).message}`;
  }
};

describe('canonical JSON check', () => {
  test('canonicalJson writes exactly what the canonicalize package writes for every value it accepts, and refuses lone surrogates as it does', () => {
    const reference = canonicalizePackage as unknown as (value: unknown) => string | undefined;
    fc.assert(
      fc.property(fc.oneof(jsonValue, weirdValue), (v) => {
        let ours: string;
        try {
          ours = `text ${canonicalJson(v)}`;
        } catch (e) {
          // Refused before writing (not plain JSON): the package is not asked.
          if (isLoopxError(e)) return;
          ours = `error ${(e as Error).message}`;
        }
        expect(ours).toBe(outcome(() => reference(v)));
      }),
      { seed: 44, numRuns: 5000 },
    );
  });

  test('canonicalJsonByteLength is the UTF-8 length of canonicalJson, with the same refusals', () => {
    const length = (v: unknown) => outcome(() => String(canonicalJsonByteLength(v)));
    const reference = (v: unknown) => outcome(() => String(Buffer.byteLength(canonicalJson(v), 'utf8')));
    fc.assert(
      fc.property(
        fc.oneof(
          jsonValue,
          weirdValue,
          fc.constantFrom<unknown>(undefined, [1, undefined], { a: () => 1 }, { a: NaN }, new Date(0)),
        ),
        (v) => {
          expect(length(v)).toBe(reference(v));
        },
      ),
      { seed: 45, numRuns: 5000 },
    );
  });

  test('the fast scanner never accepts a text the definition refuses', () => {
    fc.assert(
      fc.property(candidateText, (text) => {
        if (isCanonicalJsonFast(text)) expect(definitionAccepts(text)).toBe(true);
      }),
      { seed: 42, numRuns: 3000 },
    );
  });

  test('the check accepts exactly what the definition accepts', () => {
    fc.assert(
      fc.property(candidateText, (text) => {
        expect(checkAccepts(text)).toBe(definitionAccepts(text));
      }),
      { seed: 42, numRuns: 3000 },
    );
  });

  test('the fast scanner accepts ordinary canonical JSON without the slow path', () => {
    fc.assert(
      fc.property(jsonValue, (v) => {
        // Member names with escapes are decoded only by the definition: left to the slow path.
        if (!hasEscapedName(v)) expect(isCanonicalJsonFast(canonicalJson(v))).toBe(true);
      }),
      { seed: 42, numRuns: 1000 },
    );
  });

  test('the short-decimal rule of the scanner never accepts a number token that does not print back unchanged', () => {
    // Decimals built digit by digit: leading fraction zeros, trailing zeros, up to 18 digits.
    const digits = (min: number, max: number) =>
      fc.array(fc.integer({ min: 0, max: 9 }), { minLength: min, maxLength: max }).map((d) => d.join(''));
    const token = fc
      .tuple(
        fc.boolean(),
        fc.oneof(
          fc.constant('0'),
          fc.tuple(fc.integer({ min: 1, max: 9 }), digits(0, 16)).map(([a, b]) => `${a}${b}`),
        ),
        fc.nat({ max: 8 }),
        digits(1, 18),
      )
      .map(([neg, int, zeros, frac]) => `${neg ? '-' : ''}${int}.${'0'.repeat(zeros)}${frac}`);
    fc.assert(
      fc.property(fc.oneof(token, fc.double({ noNaN: true, noDefaultInfinity: true }).map(String)), (text) => {
        if (isCanonicalJsonFast(text)) expect(String(Number(text))).toBe(text);
        expect(checkAccepts(text)).toBe(String(Number(text)) === text && text !== '-0');
      }),
      { seed: 43, numRuns: 20_000 },
    );
  });

  test.each([
    ['0.5', true],
    ['-0.5', true],
    ['0.50', false],
    ['-0.0', false],
    ['0.000001', true],
    ['0.00000123', true],
    ['0.000000123', false],
    ['123456789.012345', true],
    ['1234567890.123456', true], // 16 digits: decided by the slow path
    ['0.1234567890123456', true],
    ['0.12345678901234567', false],
    ['0.30000000000000004', true],
    ['{"10":1,"2":2}', true],
    ['{"a":1,"a":1}', false],
    ['-0', false],
    ['0', true],
    ['1e+21', true],
    ['1e21', false],
    ['1E+21', false],
    ['1e-7', true],
    ['0.0000001', false],
    ['123456789012345', true],
    ['1234567890123456789', false],
    ['"\\u001f"', true],
    ['"\\u001F"', false],
    ['"\\n"', true],
    ['"\\u000a"', false],
    ['"\\/"', false],
    ['"\\ud800"', false],
    ['"🧪"', true],
    ['"\\ud83e\\uddea"', false],
    ['[1,2]', true],
    ['[1, 2]', false],
    ['{"b":{"d":[],"c":null},"a":true}', false],
    ['{"a":true,"b":{"c":null,"d":[]}}', true],
  ])('%s is canonical: %s', (text, canonical) => {
    expect(checkAccepts(text)).toBe(canonical);
    expect(definitionAccepts(text)).toBe(canonical);
  });
});
