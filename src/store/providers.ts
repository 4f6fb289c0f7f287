/**
 * The storage-provider registry and store identities. A store identity is `<provider>:<32 hex>`:
 * the lineage that a store's revisions, cursors and receipts belong to. Provider names are
 * registered by the module that brings the provider in — `sqlite.ts` (the one place better-sqlite3
 * is imported) registers `sqlite`, `postgres.ts` (the one place `pg` is) `postgresql`, `memory.ts`
 * the in-memory reference — and never enumerated in a contract. What a provider does (its ports,
 * its locations, its service) is its row in the provider table, src/owners/providers/.
 *
 * Identities already written (`sqlite:<hex>`, `memory:<hex>`) parse as long as their provider is
 * registered, which importing this folder's index does. Registering is idempotent; nothing is ever
 * unregistered.
 */
import { internal } from '../core/index.js';

/** A provider name: lowercase, no `:` (the identity separator), short. */
const PROVIDER_NAME = /^[a-z][a-z0-9]{0,31}$/;
const IDENTITY = /^([a-z][a-z0-9]{0,31}):([0-9a-f]{32})$/;

const providers = new Set<string>();

/** Registers a provider name (idempotent) and returns it, for `const PROVIDER = registerStoreProvider('…')`. */
export function registerStoreProvider<N extends string>(name: N): N {
  if (typeof name !== 'string' || !PROVIDER_NAME.test(name)) {
    throw internal(
      'store_provider_name_invalid',
      'A storage provider name is 1–32 lowercase letters and digits, starting with a letter.',
      {
        details: { provider: String(name).slice(0, 40) },
      },
    );
  }
  providers.add(name);
  return name;
}

export const isRegisteredStoreProvider = (name: unknown): boolean => typeof name === 'string' && providers.has(name);

/** The registered provider names, sorted. */
export const registeredStoreProviders = (): readonly string[] => [...providers].sort();

export interface ParsedStoreIdentity {
  readonly provider: string;
  /** 32 lowercase hex. */
  readonly id: string;
}

/** `<provider>:<32 hex>` of a registered provider; `undefined` for anything else. */
export function parseStoreIdentity(value: unknown): ParsedStoreIdentity | undefined {
  const m = typeof value === 'string' ? IDENTITY.exec(value) : null;
  if (m === null || !providers.has(m[1]!)) return undefined;
  return { provider: m[1]!, id: m[2]! };
}

export const isStoreIdentity = (value: unknown): value is string => parseStoreIdentity(value) !== undefined;

/** Formats a store identity; the provider must be registered and `hex` 32 lowercase hex digits. */
export function formatStoreIdentity(provider: string, hex: string): string {
  const identity = `${provider}:${hex}`;
  if (!isStoreIdentity(identity)) {
    throw internal(
      'store_provider_unregistered',
      `No storage provider ${JSON.stringify(provider).slice(0, 40)} is registered, or the identity is malformed.`,
      {
        details: { provider: String(provider).slice(0, 40) },
      },
    );
  }
  return identity;
}
