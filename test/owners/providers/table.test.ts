/**
 * The provider table (src/owners/providers/): one row per storage provider, each registered by name
 * (its store identities parse), each with a factory per owner storage port and the location
 * helpers owners and the runtime ask instead of branching — and each run by the conformance suites
 * (a row without a conformance place fails there and here).
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_STORE_PROVIDER,
  POSTGRESQL_COMPONENTS,
  STORE_PROVIDERS,
  describeLocation,
  inRoot,
  isServiceLocation,
  providerOf,
  rootLocationOf,
  sameService,
  storeProvider,
} from '../../../src/owners/providers/index.js';
import { isRegisteredStoreProvider, isStoreIdentity } from '../../../src/store/index.js';
import { PLACED_PROVIDERS } from '../conformance/providers.js';

const pg = (schema: string, database_url = 'env:A') => ({ provider: 'postgresql', database_url, schema });

describe('the storage provider table', () => {
  it('each row is a registered provider, once: its store identities parse', () => {
    const names = STORE_PROVIDERS.map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      expect(isRegisteredStoreProvider(name)).toBe(true);
      expect(isStoreIdentity(`${name}:${'0'.repeat(32)}`)).toBe(true);
    }
  });

  it('every row runs the port conformance suites: each has a conformance place', () => {
    expect(PLACED_PROVIDERS).toEqual(STORE_PROVIDERS.map((p) => p.name).sort());
  });

  it('each row opens every root-wide port and a Goal’s work store, and says where its state lives', () => {
    for (const row of STORE_PROVIDERS) {
      for (const port of ['session', 'effect', 'quota', 'scheduler'] as const)
        expect(typeof row.ports[port], `${row.name}.${port}`).toBe('function');
      for (const f of ['ofRoot', 'decode', 'same', 'answers', 'ready', 'open', 'setAside'] as const)
        expect(typeof row.work[f], `${row.name}.work.${f}`).toBe('function');
      expect(typeof row.inRoot).toBe('boolean');
    }
    expect(storeProvider(DEFAULT_STORE_PROVIDER)?.inRoot).toBe(true);
    expect(storeProvider('nosuchprovider')).toBeUndefined();
    expect(() => providerOf({ provider: 'nosuchprovider' })).toThrow(
      expect.objectContaining({ code: 'store_provider_not_in_table' }),
    );
  });

  it('a root records nothing for the default; a record a row cannot read whole is the default, never a guess', () => {
    expect(rootLocationOf(undefined)).toEqual({ provider: DEFAULT_STORE_PROVIDER });
    expect(rootLocationOf({ provider: 'postgresql', database_url: 'env:A', schema: 's' })).toEqual(pg('s'));
    expect(rootLocationOf({ provider: 'postgresql', schema: 's' })).toEqual({ provider: DEFAULT_STORE_PROVIDER });
    expect(rootLocationOf({ provider: 'memory', space: 'x' })).toEqual({ provider: DEFAULT_STORE_PROVIDER });
    expect(rootLocationOf({ provider: 'nosuchprovider' })).toEqual({ provider: DEFAULT_STORE_PROVIDER });
  });

  it('the location helpers: description, service, in-root files, one installation', () => {
    expect(describeLocation({ provider: 'sqlite' })).toBe('sqlite');
    expect(describeLocation(pg('s'))).toBe('postgresql (schema s)');
    expect([isServiceLocation(pg('s')), isServiceLocation({ provider: 'sqlite' })]).toEqual([true, false]);
    expect([inRoot({ provider: 'sqlite' }), inRoot(pg('s'))]).toEqual([true, false]);
    expect(sameService(pg('s'), { ...pg('s'), store_key: 'g~000000000000' } as never)).toBe(true);
    expect(sameService(pg('s'), pg('t'))).toBe(false);
    expect(sameService(pg('s'), pg('s', 'env:B'))).toBe(false);
    expect(sameService({ provider: 'sqlite' }, { provider: 'sqlite' })).toBe(false);
  });

  it("a service migrates every owner's component from the owner's own SQL, in dependency order", () => {
    expect(POSTGRESQL_COMPONENTS().map((c) => c.component)).toEqual([
      'work',
      'effect',
      'quota',
      'session',
      'scheduler',
    ]);
    for (const c of POSTGRESQL_COMPONENTS()) expect(c.migrations.length).toBeGreaterThan(0);
  });
});
