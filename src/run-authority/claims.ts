/**
 * The keyring of a run authority and the one implementation of its claims (RFC 0007).
 *
 * A keyring holds the scope id and the key buffers by generation, and knows which generations
 * are retired; every provider keeps its keys here (loaded from its own storage) and signs and
 * verifies only through `claim` and `verify`. This is the one place that does the per-run subkey,
 * the HMAC and the constant-time compare, so every provider answers with the same single failure
 * shape, and each refusal code about generations is defined once.
 *
 * It never hands out key bytes (except `buffersForTest`, to observe zeroing), never stores
 * anything, and never decides liveness: the authority checks that before it asks.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { internal, rejected } from '../core/index.js';
import { lengthPrefixed, u64be, utf8 } from '../core/index.js';
import type { ClaimInput } from './contract.js';
import { authorityCorrupt } from './errors.js';

export const SUBKEY_DOMAIN = 'loopx.run-authority.subkey/v1';

/**
 * The per-run subkey (ARCHITECTURE.md "Decisions"): HMAC-SHA256 keyed by the authority key over
 * the length-prefixed tuple (SUBKEY_DOMAIN, scope id, run id, transition generation as u64 BE).
 * The claim is HMAC-SHA256 keyed by this subkey over the canonical MAC input. Exported for the
 * published test vectors; callers other than the authority never hold a key.
 */
export function deriveRunSubkey(
  key: Uint8Array,
  scopeId: Uint8Array,
  runId: string,
  transitionGeneration: number,
): Buffer {
  return createHmac('sha256', key)
    .update(lengthPrefixed([utf8(SUBKEY_DOMAIN), scopeId, utf8(runId), u64be(transitionGeneration)]))
    .digest();
}

function mac(key: Uint8Array, scopeId: Uint8Array, input: ClaimInput): Buffer {
  const sub = deriveRunSubkey(key, scopeId, input.runId, input.transitionGeneration);
  try {
    return createHmac('sha256', sub).update(input.macInput).digest();
  } finally {
    sub.fill(0);
  }
}

const generationUnknown = (generation: number, what: string) =>
  rejected('authority_generation_unknown', `Key generation ${generation} is not ${what}.`);

export class Keyring {
  readonly #scopeId: Buffer;
  readonly #keys = new Map<number, Buffer>();
  readonly #retired = new Set<number>();

  constructor(scopeId: Uint8Array) {
    if (scopeId.byteLength !== 32) throw authorityCorrupt('scope id');
    this.#scopeId = Buffer.from(scopeId);
  }

  /** A copy: callers cannot change the scope this keyring signs and verifies under. */
  get scopeId(): Uint8Array {
    return new Uint8Array(this.#scopeId);
  }

  /** Whether the generation is known, active or retired (a provider loads only unknown ones). */
  knows(generation: number): boolean {
    return this.#keys.has(generation) || this.#retired.has(generation);
  }

  /** Learn an active generation's key; the keyring owns `key` from now on (zeroed at once when the generation is already known). */
  add(generation: number, key: Buffer): void {
    if (this.knows(generation)) {
      if (this.#keys.get(generation) !== key) key.fill(0);
      return;
    }
    this.#keys.set(generation, key);
  }

  /** Learn that a generation is retired: its key is zeroed and forgotten at once. */
  markRetired(generation: number): void {
    this.#retired.add(generation);
    this.#keys.get(generation)?.fill(0);
    this.#keys.delete(generation);
  }

  get empty(): boolean {
    return this.#keys.size === 0 && this.#retired.size === 0;
  }

  current(): number {
    const gens = [...this.#keys.keys()];
    if (gens.length === 0)
      throw rejected('authority_no_key', 'Every key generation of this authority is retired.', {
        nextAction: 'add one: loopx authority rotate',
      });
    return Math.max(...gens);
  }

  generations(): Array<{ generation: number; retired: boolean }> {
    return [
      ...[...this.#keys.keys()].map((g) => ({ generation: g, retired: false })),
      ...[...this.#retired].map((g) => ({ generation: g, retired: true })),
    ].sort((a, b) => a.generation - b.generation);
  }

  /** The generation `rotate` adds: above every active and retired one (a retired number is never reused). */
  next(): number {
    const next = Math.max(0, ...this.#keys.keys(), ...this.#retired) + 1;
    if (!Number.isSafeInteger(next)) throw internal('authority_generation_overflow', 'Key generations are exhausted.');
    return next;
  }

  /** The refusals of `retire`, before the provider records anything. */
  checkRetirable(generation: number): void {
    if (!this.#keys.has(generation)) throw generationUnknown(generation, 'active here');
    if (this.#keys.size === 1)
      throw rejected('authority_last_generation', 'The last active key generation cannot be retired.', {
        nextAction: 'rotate first: loopx authority rotate',
      });
  }

  claim(input: ClaimInput): Uint8Array {
    const key = this.#keys.get(input.keyGeneration);
    if (!key) throw generationUnknown(input.keyGeneration, 'available for signing');
    return new Uint8Array(mac(key, this.#scopeId, input));
  }

  /**
   * One failure shape: a plain `false` for an unknown scope, an unavailable generation, a bad
   * transition generation or a wrong HMAC. An unknown scope or generation still does the same work
   * against a throwaway key, and the HMAC is compared in constant time at full length.
   */
  verify(scopeId: Uint8Array, input: ClaimInput, hmac: Uint8Array): boolean {
    if (
      !Number.isSafeInteger(input.transitionGeneration) ||
      input.transitionGeneration < 0 ||
      !Number.isSafeInteger(input.keyGeneration)
    )
      return false;
    const scopeOk = scopeId.byteLength === 32 && timingSafeEqual(Buffer.from(scopeId), this.#scopeId);
    const real = this.#keys.get(input.keyGeneration);
    const throwaway = scopeOk && real ? undefined : randomBytes(32);
    const expected = mac(throwaway ?? real!, this.#scopeId, input);
    throwaway?.fill(0);
    const given = Buffer.alloc(32);
    Buffer.from(hmac).copy(given, 0, 0, Math.min(32, hmac.byteLength));
    const same = timingSafeEqual(expected, given);
    return same && scopeOk && real !== undefined && hmac.byteLength === 32;
  }

  /** Shutdown: zero every key buffer (they stay in place, zeroed, so nothing signs afterwards). */
  zero(): void {
    for (const key of this.#keys.values()) key.fill(0);
  }

  /** Test hook: the key buffers, to observe that retiring and shutdown zero them. */
  buffersForTest(): readonly Buffer[] {
    return [...this.#keys.values()];
  }
}
