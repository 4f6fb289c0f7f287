/**
 * The storage providers, one row each — the one place provider names meet behaviour. Owners and
 * the runtime ask a location's row (`providerOf`) instead of comparing its `provider` with a name;
 * the location types are the rows' own, joined here. A row's name is registered where its driver is
 * brought in (src/store: `registerStoreProvider`), which makes its store identities parse.
 *
 * Adding a provider: its row file beside these, one entry in ROWS (a test fails until the
 * conformance suites have a place for it: test/owners/conformance/providers.ts).
 */
import { internal } from '../../core/index.js';
import type { ServiceLocation, StoreLocation, StoreProvider, StoreService } from './contract.js';
import { MEMORY } from './memory.js';
import { POSTGRESQL } from './postgresql.js';
import { SQLITE } from './sqlite.js';

const ROWS = [MEMORY, SQLITE, POSTGRESQL] as const;

/** Where a root keeps its Goal state when its configuration records nothing. */
const DEFAULT = SQLITE;

type Row = (typeof ROWS)[number];
type RootOf<P> = P extends StoreProvider<infer R, StoreLocation> ? R : never;
type WorkOf<P> = P extends StoreProvider<StoreLocation, infer W> ? W : never;

/** Where a root keeps its Goal state: a location of one of the rows. */
export type RootStoreLocation = RootOf<Row>;
/** Where one Goal's work lives: a location of one of the rows. */
export type GoalWorkLocation = WorkOf<Row>;

/** Every row, in table order. */
export const STORE_PROVIDERS: readonly StoreProvider[] = ROWS;

/** The row named `name`, or undefined for a name no row has. */
export const storeProvider = (name: unknown): StoreProvider | undefined => STORE_PROVIDERS.find((p) => p.name === name);

/** The row of a location (every location comes from a row's decoder, so it has one). */
export function providerOf(location: StoreLocation): StoreProvider {
  const row = storeProvider(location.provider);
  if (row === undefined) {
    throw internal(
      'store_provider_not_in_table',
      `No storage provider ${JSON.stringify(location.provider).slice(0, 40)} is in the provider table.`,
      {
        details: { provider: String(location.provider).slice(0, 40) },
      },
    );
  }
  return row;
}

/** The name a root without a recorded store takes. */
export const DEFAULT_STORE_PROVIDER: string = DEFAULT.name;

/** A root's recorded choice (its configuration's `store` namespace) read by its row; the default when none reads it whole. */
export function rootLocationOf(recorded: Readonly<Record<string, unknown>> | undefined): RootStoreLocation {
  const row = recorded === undefined ? undefined : storeProvider(recorded.provider);
  return (row?.root.decode(recorded!) ?? DEFAULT.root.decode({ provider: DEFAULT.name })!) as RootStoreLocation;
}

/** `<provider>` and, when it has one, where in it: `postgresql (schema s)`. */
export const describeLocation = (location: StoreLocation): string =>
  `${location.provider}${providerOf(location).describe(location)}`;

/** The database service a location is on, or undefined for one that is not (files, memory). */
export const serviceOf = (location: StoreLocation): StoreService | undefined => providerOf(location).service;

/** Whether a location is on a database service (a type guard for its service fields). */
export const isServiceLocation = (location: StoreLocation): location is ServiceLocation =>
  serviceOf(location) !== undefined;

/** Two locations on the same service installation (provider, database and schema). */
export const sameService = (a: StoreLocation, b: StoreLocation): boolean =>
  a.provider === b.provider && isServiceLocation(a) && isServiceLocation(b) && serviceOf(a)!.same(a, b);

/** Whether a location's state is files of the runtime root. */
export const inRoot = (location: StoreLocation): boolean => providerOf(location).inRoot;

/** Ends what every provider shares in this process (a daemon's shutdown): a later use opens anew. */
export async function releaseStoreProviders(): Promise<void> {
  await Promise.all(STORE_PROVIDERS.map((p) => p.release?.()));
}
