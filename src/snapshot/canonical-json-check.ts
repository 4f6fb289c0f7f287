/**
 * Checks that a string is exactly the RFC 8785 (JCS) canonical JSON text of the value it parses
 * to — the text core `canonicalJson` produces. Tool arguments and results are stored as such text
 * so that one history has one byte form.
 *
 * The definition is the slow path: `canonicalJson(JSON.parse(text)) === text`. In front of it runs
 * a single-pass scanner over the text that builds no values. The scanner is sound, never
 * complete: it answers "canonical" only for texts the definition accepts, and "not sure" for
 * everything else (any error, and rare-but-canonical forms it does not model, such as escaped
 * surrogates), which then go through the definition. So both paths accept exactly the same set
 * of texts, and every refusal's code comes from the definition.
 *
 * What the scanner accepts, rule by rule, is what JCS emits: no insignificant whitespace; object
 * members in strictly increasing UTF-16 code-unit order of their decoded names (which also rules
 * out duplicates); numbers exactly as ECMAScript `String(number)` writes them (finite, no `-0`);
 * strings with only the escapes `JSON.stringify` writes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
 * `\t`, lowercase `\u00xx` for other controls) and raw, paired surrogates; nesting at most
 * maxJsonDepth.
 */
import { canonicalJson } from '../core/index.js';
import { SNAPSHOT_ERRORS, snapshotError } from './errors.js';
import { SNAPSHOT_LIMITS } from './limits.js';

const MAX_DEPTH = SNAPSHOT_LIMITS.maxJsonDepth;
const NOT_CANONICAL = -1;

/** Characters a JCS string holds raw: not `"`, `\\`, a control, or a surrogate (handled one by one). */
const PLAIN_RUN = /[^"\\\u0000-\u001f\ud800-\udfff]*/y;

/** Set by scanString: whether the string just scanned contained an escape. */
let stringHadEscape = false;

/** Index after the string token starting at `i` (a `"`), or NOT_CANONICAL. */
function scanString(s: string, i: number): number {
  const n = s.length;
  let j = i + 1;
  stringHadEscape = false;
  while (j < n) {
    let c = s.charCodeAt(j);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c && (c < 0xd800 || c > 0xdfff)) {
      // A plain character. Short runs (most keys) are cheapest char by char; a long run is
      // skipped by the native regex engine, several times faster per character.
      if (++j - i < 32) continue;
      PLAIN_RUN.lastIndex = j;
      PLAIN_RUN.test(s);
      j = PLAIN_RUN.lastIndex;
      c = s.charCodeAt(j);
    }
    if (c === 0x22) return j + 1;
    if (c === 0x5c) {
      stringHadEscape = true;
      const e = s.charCodeAt(j + 1);
      // \" \\ \b \f \n \r \t
      if (e === 0x22 || e === 0x5c || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        j += 2;
        continue;
      }
      // \u00xx, lowercase, only for controls without a short escape. (Surrogate escapes: not sure.)
      if (e === 0x75 && s.charCodeAt(j + 2) === 0x30 && s.charCodeAt(j + 3) === 0x30) {
        const h = hexDigit(s.charCodeAt(j + 4));
        const l = hexDigit(s.charCodeAt(j + 5));
        if (h < 0 || h > 1 || l < 0) return NOT_CANONICAL;
        const code = h * 16 + l;
        if (code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) return NOT_CANONICAL;
        j += 6;
        continue;
      }
      return NOT_CANONICAL;
    }
    if (c < 0x20) return NOT_CANONICAL;
    if (c >= 0xd800 && c <= 0xdfff) {
      // Only a raw high surrogate directly followed by a raw low surrogate.
      if (c > 0xdbff) return NOT_CANONICAL;
      const d = s.charCodeAt(j + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return NOT_CANONICAL;
      j += 2;
      continue;
    }
    // Only the end of the text (c is NaN) gets here: an unterminated string.
    return NOT_CANONICAL;
  }
  return NOT_CANONICAL;
}

/** Lowercase hex digit value, or -1. */
function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

/** Whether s[a, aEnd) < s[b, bEnd) in UTF-16 code-unit order (as `<` on the two substrings). */
function textLess(s: string, a: number, aEnd: number, b: number, bEnd: number): boolean {
  const n = Math.min(aEnd - a, bEnd - b);
  for (let k = 0; k < n; k++) {
    const x = s.charCodeAt(a + k);
    const y = s.charCodeAt(b + k);
    if (x !== y) return x < y;
  }
  return aEnd - a < bEnd - b;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/**
 * Whether the grammatical number token s[i, j) with a fraction and no exponent prints back
 * unchanged, decided without building it. Such a decimal D of at most 15 significant digits is
 * the only decimal of ≤ 15 digits that rounds to its binary64 value (15 digits round-trip), so
 * the shortest digits ECMAScript prints are D's own — as long as D has no trailing fraction zero
 * and is in the range printed without an exponent (≥ 1e-6; < 1e21 holds with 15 digits).
 */
function isShortDecimal(s: string, i: number, j: number): boolean {
  if (s.charCodeAt(j - 1) === 0x30) return false; // a trailing zero in the fraction
  let k = s.charCodeAt(i) === 0x2d ? i + 1 : i;
  let digits = j - k - 1; // without the point
  if (s.charCodeAt(k) === 0x30) {
    // 0.000ddd: the leading zeros are not significant, and at most five print without an exponent.
    k += 2;
    let zeros = 0;
    while (s.charCodeAt(k + zeros) === 0x30) zeros++;
    if (zeros > 5) return false;
    digits = j - k - zeros;
  }
  return digits <= 15;
}

/** Index after the number token at `i`, or NOT_CANONICAL unless it is `String(Number(token))`. */
function scanNumber(s: string, i: number): number {
  let j = i;
  if (s.charCodeAt(j) === 0x2d) j++;
  const first = s.charCodeAt(j);
  if (first === 0x30) j++;
  else if (first >= 0x31 && first <= 0x39) while (isDigit(s.charCodeAt(j))) j++;
  else return NOT_CANONICAL;
  let hasFractionOrExponent = false;
  const hasFraction = s.charCodeAt(j) === 0x2e;
  if (hasFraction) {
    hasFractionOrExponent = true;
    j++;
    if (!isDigit(s.charCodeAt(j))) return NOT_CANONICAL;
    while (isDigit(s.charCodeAt(j))) j++;
  }
  const e = s.charCodeAt(j);
  if (e === 0x65 || e === 0x45) {
    hasFractionOrExponent = true;
    j++;
    const sign = s.charCodeAt(j);
    if (sign === 0x2b || sign === 0x2d) j++;
    if (!isDigit(s.charCodeAt(j))) return NOT_CANONICAL;
    while (isDigit(s.charCodeAt(j))) j++;
  }
  // A plain integer of at most 15 digits is exact in binary64 and prints back unchanged
  // (the grammar above already refused leading zeros); only `-0` prints differently.
  if (j - i <= 15 && !hasFractionOrExponent && !(j - i === 2 && first === 0x30)) return j;
  if (hasFraction && e !== 0x65 && e !== 0x45 && isShortDecimal(s, i, j)) return j;
  const token = s.slice(i, j);
  const value = Number(token);
  return Number.isFinite(value) && String(value) === token ? j : NOT_CANONICAL;
}

/** Index after the value at `i` (nested `depth` levels deep), or NOT_CANONICAL. */
function scanValue(s: string, i: number, depth: number): number {
  if (depth > MAX_DEPTH) return NOT_CANONICAL;
  const c = s.charCodeAt(i);
  switch (c) {
    case 0x7b: {
      // {
      let j = i + 1;
      if (s.charCodeAt(j) === 0x7d) return j + 1;
      let previousStart = -1;
      let previousEnd = -1;
      for (;;) {
        if (s.charCodeAt(j) !== 0x22) return NOT_CANONICAL;
        const end = scanString(s, j);
        if (end === NOT_CANONICAL || stringHadEscape) {
          // Names with escapes are decoded by the definition (slow path).
          return NOT_CANONICAL;
        }
        // Unescaped names: their text is their value, compared in place (no slices).
        if (previousStart >= 0 && !textLess(s, previousStart + 1, previousEnd - 1, j + 1, end - 1))
          return NOT_CANONICAL;
        previousStart = j;
        previousEnd = end;
        if (s.charCodeAt(end) !== 0x3a) return NOT_CANONICAL;
        j = scanValue(s, end + 1, depth + 1);
        if (j === NOT_CANONICAL) return NOT_CANONICAL;
        const d = s.charCodeAt(j);
        if (d === 0x7d) return j + 1;
        if (d !== 0x2c) return NOT_CANONICAL;
        j++;
      }
    }
    case 0x5b: {
      // [
      let j = i + 1;
      if (s.charCodeAt(j) === 0x5d) return j + 1;
      for (;;) {
        j = scanValue(s, j, depth + 1);
        if (j === NOT_CANONICAL) return NOT_CANONICAL;
        const d = s.charCodeAt(j);
        if (d === 0x5d) return j + 1;
        if (d !== 0x2c) return NOT_CANONICAL;
        j++;
      }
    }
    case 0x22:
      return scanString(s, i);
    case 0x74:
      return s.startsWith('true', i) ? i + 4 : NOT_CANONICAL;
    case 0x66:
      return s.startsWith('false', i) ? i + 5 : NOT_CANONICAL;
    case 0x6e:
      return s.startsWith('null', i) ? i + 4 : NOT_CANONICAL;
    default:
      return c === 0x2d || isDigit(c) ? scanNumber(s, i) : NOT_CANONICAL;
  }
}

/**
 * True only if `text` is canonical JSON (sound, not complete: `false` means "not sure").
 * Exported for the tests that check it against the definition.
 */
export function isCanonicalJsonFast(text: string): boolean {
  return scanValue(text, 0, 0) === text.length;
}

/**
 * Throws snapshot_invalid_json / snapshot_non_canonical_json unless `text` is canonical JSON. The
 * refusal's details are `here` with `field`, built only for a refusal (the accept path allocates nothing).
 */
export function assertCanonicalJson(text: string, here: Record<string, unknown>, field?: string): void {
  if (isCanonicalJsonFast(text)) return;
  const where = field === undefined ? here : { ...here, field };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw snapshotError(SNAPSHOT_ERRORS.invalidJson, 'A tool argument or result is not valid JSON.', where, e);
  }
  let canonical: string;
  try {
    canonical = canonicalJson(value);
  } catch (e) {
    // Nesting beyond maxJsonDepth, lone surrogates, non-finite numbers: no canonical form.
    throw snapshotError(SNAPSHOT_ERRORS.invalidJson, 'A tool argument or result has no canonical JSON form.', where, e);
  }
  if (canonical !== text) {
    throw snapshotError(
      SNAPSHOT_ERRORS.nonCanonicalJson,
      'A tool argument or result is not in canonical JSON form (RFC 8785).',
      where,
    );
  }
}
