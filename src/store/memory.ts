/**
 * The in-memory reference provider: it needs no driver (each port's `memory.ts` keeps its rows in
 * plain objects), only its name in the provider registry. Its store identities are `memory:<hex>`.
 */
import { registerStoreProvider } from './providers.js';

export const MEMORY_PROVIDER = registerStoreProvider('memory');
