/**
 * Canonical JSON (RFC 8785, JCS). Used wherever a digest is taken over JSON (tool schemas in
 * PlanIdentity, manifests) and wherever stored JSON is compared by its text. Refuses values JCS
 * cannot represent.
 *
 * The value is first checked to be plain JSON (`assertJsonValue`), then written by `writeJcs`,
 * which produces exactly what the `canonicalize` package (4.x) produces for such a value — keys
 * sorted by UTF-16 code units, strings and numbers as ECMAScript's JSON.stringify writes them, a
 * lone surrogate refused with the package's error — without its per-call bookkeeping for values
 * the check has already refused (toJSON, undefined, cycles). test/snapshot/canonical-json.test.ts
 * compares the two on generated values.
 */
import { rejected } from './errors.js';

const notCanonical = (why: string) => rejected('non_canonical_json', `The value has no canonical JSON form: ${why}.`);

export const canonicalJson = (value: unknown): string => {
  assertJsonValue(value, 0);
  return writeJcs(value);
};

/**
 * The UTF-8 byte length of `canonicalJson(value)`, with the same refusals, without sorting members.
 * For plain JSON, JSON.stringify writes the same members, strings and numbers as JCS and differs
 * only in member order, which does not change the length; where it wrote a `\u` escape (a control
 * character, or a lone surrogate JCS refuses) the canonical text is written instead.
 */
export const canonicalJsonByteLength = (value: unknown): number => {
  assertJsonValue(value, 0);
  const text = JSON.stringify(value);
  return Buffer.byteLength(text.includes('\\u') ? writeJcs(value) : text, 'utf8');
};

const SURROGATE = /[\uD800-\uDFFF]/;

/** A surrogate code unit that is not half of a pair (JCS cannot encode it as UTF-8). */
function hasLoneSurrogate(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xdc00 && code <= 0xdfff) return true;
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    }
  }
  return false;
}

function writeString(text: string): string {
  // The same refusal (and message) as the canonicalize package.
  if (SURROGATE.test(text) && hasLoneSurrogate(text)) throw new Error('Lone surrogate is not allowed');
  return JSON.stringify(text);
}

/** JCS text of a value `assertJsonValue` accepted: null, a boolean, a finite number, a string, an array or a plain object of them. */
function writeJcs(value: unknown): string {
  if (typeof value === 'string') return writeString(value);
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + writeJcs(value[i]);
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) out += `${i === 0 ? '' : ','}${writeString(keys[i]!)}:${writeJcs(record[keys[i]!])}`;
  return `${out}}`;
}

const MAX_JSON_DEPTH = 64;

function assertJsonValue(value: unknown, depth: number): void {
  if (depth > MAX_JSON_DEPTH) throw rejected('json_too_deep', `JSON nesting exceeds ${MAX_JSON_DEPTH} levels.`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw notCanonical('a JSON number must be finite');
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) assertJsonValue(v, depth + 1);
    return;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const v of Object.values(value as Record<string, unknown>)) assertJsonValue(v, depth + 1);
    return;
  }
  throw notCanonical(`a value of type ${typeof value} is not JSON`);
}
