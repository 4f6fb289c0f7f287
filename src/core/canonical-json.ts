/**
 * Canonical JSON (RFC 8785, JCS). Used wherever a digest is taken over JSON (tool schemas in
 * PlanIdentity, manifests) and for every text an owner stores (work commits: events, projection,
 * receipt). Refuses values JCS cannot represent.
 *
 * The definition is `canonicalJsonReference`: a check of the whole value, then the `canonicalize`
 * package. `canonicalJson` is one pass that writes the same text (a hot path: a work commit
 * encodes three values and a request digest), and hands any value it would not write — anything
 * refused, or an unusual object — to the definition, so a refusal is exactly the definition's.
 * `canonicalJsonEach` writes several values in one call, an object they share once. Property tests
 * hold both to byte equality with the definition (test/core/canonical-json.test.ts).
 */
import canonicalizeImpl from 'canonicalize';
import { rejected } from './errors.js';

const canonicalizeFn = canonicalizeImpl as unknown as (value: unknown) => string | undefined;

const notCanonical = (why: string) => rejected('non_canonical_json', `The value has no canonical JSON form: ${why}.`);

/** The canonical text of `value`, or the definition's refusal. */
export const canonicalJson = (value: unknown): string => {
  try {
    return encode(value, 0);
  } catch (e) {
    if (e !== NOT_HERE) throw e;
    return canonicalJsonReference(value);
  }
};

/**
 * The canonical texts of `values`, each what `canonicalJson` writes for it. An object met again
 * (the same object: a commit's Todo is in its events, its projection and its receipt) is written
 * once and its text reused, where its depth allows. The values must not change during the call.
 */
export function canonicalJsonEach(values: readonly unknown[]): string[] {
  const outer = written;
  written = new Map();
  try {
    return values.map(canonicalJson);
  } finally {
    written = outer;
  }
}

/** During `canonicalJsonEach`: each plain object's text and the depth it was written at (valid at that depth or less). */
let written: Map<object, { readonly text: string; readonly depth: number }> | undefined;

/** The UTF-8 byte length of `canonicalJson(value)`, with the same refusals. */
export const canonicalJsonByteLength = (value: unknown): number => Buffer.byteLength(canonicalJson(value), 'utf8');

/** The definition `canonicalJson` keeps to: the value checked whole, then encoded by `canonicalize`. */
export const canonicalJsonReference = (value: unknown): string => {
  assertJsonValue(value, 0);
  const text = canonicalizeFn(value);
  if (text === undefined) throw notCanonical('JCS cannot encode it');
  return text;
};

const MAX_JSON_DEPTH = 64;

/** Thrown by `encode` for a value it leaves to the definition (which refuses it, or encodes an odd one). */
const NOT_HERE: unique symbol = Symbol('not here');

/** Strings `JSON.stringify` writes as they are, between quotes: printable ASCII but `"` and `\\`. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A string as `canonicalize` writes it (`JSON.stringify`), or NOT_HERE for a lone surrogate (which it refuses). */
function encodeString(s: string): string {
  if (PLAIN.test(s)) return `"${s}"`;
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) throw NOT_HERE;
  return JSON.stringify(s);
}

/** Member names as written before their value (`"name":`); the first few hundred short ones are kept (a schema's field names). */
const memberNames = new Map<string, string>();
const MEMBER_NAMES_KEPT = 512;
const MEMBER_NAME_KEPT_LENGTH = 64;

function memberName(k: string): string {
  let text = memberNames.get(k);
  if (text === undefined) {
    text = `${encodeString(k)}:`;
    if (memberNames.size < MEMBER_NAMES_KEPT && k.length <= MEMBER_NAME_KEPT_LENGTH) memberNames.set(k, text);
  }
  return text;
}

/**
 * One pass of the definition's accepted values: plain objects (own enumerable keys, sorted by
 * UTF-16 code units as `Array.prototype.sort` does, skipped when already in order), arrays,
 * finite numbers and well-formed strings, written as `canonicalize` writes them (`JSON.stringify`
 * of each string and number). Anything else — too deep, not finite, a lone surrogate, a `toJSON`,
 * another prototype — throws NOT_HERE.
 */
function encode(value: unknown, depth: number): string {
  if (depth > MAX_JSON_DEPTH) throw NOT_HERE;
  switch (typeof value) {
    case 'string':
      return encodeString(value);
    case 'number':
      if (!Number.isFinite(value)) throw NOT_HERE;
      return String(value); // what JSON.stringify writes for a finite number (-0 as 0)
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      if ((value as { toJSON?: unknown }).toJSON !== undefined) throw NOT_HERE;
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + encode(value[i], depth + 1);
        return `${out}]`;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype) throw NOT_HERE;
      return written === undefined
        ? encodeObject(value as Record<string, unknown>, depth)
        : encodeOnce(written, value, depth);
    default:
      throw NOT_HERE;
  }
}

function encodeOnce(texts: NonNullable<typeof written>, o: object, depth: number): string {
  const prior = texts.get(o);
  if (prior !== undefined && depth <= prior.depth) return prior.text;
  const text = encodeObject(o as Record<string, unknown>, depth);
  texts.set(o, { text, depth });
  return text;
}

function encodeObject(o: Record<string, unknown>, depth: number): string {
  const keys = Object.keys(o);
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      keys.sort();
      break;
    }
  }
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    out += (i === 0 ? '' : ',') + memberName(k) + encode(o[k], depth + 1);
  }
  return `${out}}`;
}

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
