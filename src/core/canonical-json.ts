/**
 * Canonical JSON (RFC 8785, JCS) through the `canonicalize` package. Used wherever a digest is
 * taken over JSON (tool schemas in PlanIdentity, manifests). Refuses values JCS cannot represent.
 */
import canonicalizeImpl from 'canonicalize';
import { rejected } from './errors.js';

const canonicalizeFn = canonicalizeImpl as unknown as (value: unknown) => string | undefined;

const notCanonical = (why: string) => rejected('non_canonical_json', `The value has no canonical JSON form: ${why}.`);

export const canonicalJson = (value: unknown): string => {
  assertJsonValue(value, 0);
  const text = canonicalizeFn(value);
  if (text === undefined) throw notCanonical('JCS cannot encode it');
  return text;
};

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
