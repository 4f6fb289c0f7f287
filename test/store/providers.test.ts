/** The storage-provider registry: store identities are `<provider>:<hex>` of a registered provider. */
import { describe, expect, it } from 'vitest';
import {
  MEMORY_PROVIDER,
  SQLITE_PROVIDER,
  formatStoreIdentity,
  isStoreIdentity,
  parseStoreIdentity,
  registerStoreProvider,
  registeredStoreProviders,
} from '../../src/store/index.js';

const HEX = '0123456789abcdef0123456789abcdef';

describe('store provider registry', () => {
  it('the built-in providers are registered, so identities already written keep parsing', () => {
    expect(SQLITE_PROVIDER).toBe('sqlite');
    expect(MEMORY_PROVIDER).toBe('memory');
    expect(registeredStoreProviders()).toEqual(expect.arrayContaining(['memory', 'sqlite']));
    expect(parseStoreIdentity(`sqlite:${HEX}`)).toEqual({ provider: 'sqlite', id: HEX });
    expect(isStoreIdentity(`memory:${HEX}`)).toBe(true);
  });

  it('an identity of an unregistered provider, or of another shape, is not a store identity', () => {
    expect(isStoreIdentity(`nosuchprovider:${HEX}`)).toBe(false);
    expect(isStoreIdentity(`sqlite:${HEX.toUpperCase()}`)).toBe(false);
    expect(isStoreIdentity(`sqlite:${HEX}0`)).toBe(false);
    expect(isStoreIdentity(`sqlite:${HEX}:x`)).toBe(false);
    expect(isStoreIdentity(42)).toBe(false);
    expect(() => formatStoreIdentity('nosuchprovider', HEX)).toThrow(
      expect.objectContaining({ code: 'store_provider_unregistered' }),
    );
  });

  it('a registered provider is accepted without any contract naming it; registering is idempotent', () => {
    expect(registerStoreProvider('testpg')).toBe('testpg');
    expect(registerStoreProvider('testpg')).toBe('testpg');
    expect(formatStoreIdentity('testpg', HEX)).toBe(`testpg:${HEX}`);
    expect(parseStoreIdentity(`testpg:${HEX}`)).toEqual({ provider: 'testpg', id: HEX });
  });

  it('a provider name is lowercase letters and digits without the separator', () => {
    for (const bad of ['', 'Sqlite', 'a:b', '1pg', 'x'.repeat(33)]) {
      expect(() => registerStoreProvider(bad)).toThrow(
        expect.objectContaining({ code: 'store_provider_name_invalid' }),
      );
    }
  });
});
