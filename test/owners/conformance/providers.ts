/**
 * The provider table in the port conformance suites: every row of STORE_PROVIDERS runs each port's
 * suite through the row's OWN factories (`row.ports.<port>`, `row.work.open`) — the wiring the
 * owners use — at a fresh place per harness, so a new provider is tested as soon as it is a row.
 * What a row needs from the test tree is how to make a place for it (PLACES): a temporary root
 * (files), a fresh space (memory), a fresh schema of the test server with the port's component
 * migrated from its owner's `<owner>/sql.ts` (a database service, skipped without a server except
 * under CI=true). A row without a place fails (`eachProvider` throws), never skips.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe } from 'vitest';
import { LAYOUT } from '../../../src/owners/index.js';
import {
  POSTGRESQL,
  SQLITE,
  STORE_PROVIDERS,
  memoryLocation,
  postgresAt,
  type StoreLocation,
  type StoreProvider,
} from '../../../src/owners/providers/index.js';
import { migratePostgres, type PgMigration } from '../../../src/store/index.js';
import { PG_URL, describePg, pgSchemas } from '../../support/pg.js';
import { tempDirs, type PortHarness } from './support.js';

/** A port's tables in the dialects a place may need (an owner's `<OWNER>_SQL`, or a component of its own). */
export interface PortSql {
  readonly postgresql: { readonly component: string; readonly migrations: readonly PgMigration[] };
}

/** One fresh store of a row: its runtime root, its location, and when it can be opened (a schema being migrated). */
export interface Place {
  readonly root: string;
  readonly location: StoreLocation;
  readonly ready: Promise<unknown>;
}

interface PlaceMaker {
  /** `describe`, or `describePg` for a row that needs the test server. */
  readonly describe: (name: string, fn: () => void) => void;
  place(sql: PortSql): Place;
}

/** The variable the PostgreSQL places name as their URL reference (a location holds a reference, never a URL). */
const PG_REFERENCE = 'LOOPX_CONFORMANCE_PG_URL';

/** What the makers of one test file share: its temporary directories and its schemas (both removed after it). */
interface FileResources {
  readonly tempDir: () => string;
  readonly schema: () => string;
}

/** How to make a fresh place for each row, by the row's name. */
const MAKERS: Readonly<Record<string, (r: FileResources) => PlaceMaker>> = {
  memory: (r) => ({
    describe,
    place: () => ({ root: r.tempDir(), location: memoryLocation(), ready: Promise.resolve() }),
  }),
  sqlite: (r) => ({
    describe,
    place: () => ({ root: r.tempDir(), location: SQLITE.root.decode({})!, ready: Promise.resolve() }),
  }),
  postgresql: (r) => ({
    describe: describePg,
    place: (sql) => {
      process.env[PG_REFERENCE] = PG_URL;
      const { location } = POSTGRESQL.root.choose!({ databaseUrl: `env:${PG_REFERENCE}`, schema: r.schema() });
      const ready = migratePostgres(postgresAt(location), sql.postgresql.component, sql.postgresql.migrations);
      return { root: r.tempDir(), location, ready };
    },
  }),
};

/** The names of the rows MAKERS covers (a test holds them equal to the table's). */
export const PLACED_PROVIDERS: readonly string[] = Object.keys(MAKERS).sort();

/** `port` whose calls wait for `ready` first (`close` and plain fields stay as they are). */
export function gated<P extends object>(port: P, ready: Promise<unknown>): P {
  return new Proxy(port, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || key === 'close')
        return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) => ready.then(() => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
}

/**
 * Runs `fn` once per row of the provider table, inside the row's `describe` (its name), with a
 * maker of fresh places. Call it at the top of a test file: the places are cleaned after it.
 */
export function eachProvider(
  fn: (row: StoreProvider, place: (sql: PortSql) => Place) => void,
  rows: readonly StoreProvider[] = STORE_PROVIDERS,
): void {
  const resources: FileResources = { tempDir: tempDirs('loopx-provider-'), schema: pgSchemas() };
  afterAll(() => POSTGRESQL.release?.());
  for (const row of rows) {
    const maker = MAKERS[row.name]?.(resources);
    if (maker === undefined)
      throw new Error(
        `storage provider ${row.name} has no conformance place: add one to test/owners/conformance/providers.ts`,
      );
    maker.describe(`provider ${row.name}`, () => fn(row, (sql) => maker.place(sql)));
  }
}

/** A root-wide port's harness on a fresh place of `row`: every `open()` is the row's factory again on that place (a restart). */
export function rootPortHarness<P extends object>(
  row: StoreProvider,
  place: Place,
  open: (ports: StoreProvider['ports'], root: string, location: StoreLocation) => P,
): PortHarness<P> {
  return { open: () => gated(open(row.ports, place.root, place.location), place.ready) };
}

/** The Goal directory a work store lives under (every provider's Goal has one: `openGoalWork` refuses a Goal without it). */
export function goalDirectory(root: string, goalId: string): void {
  mkdirSync(join(root, LAYOUT.goalDir(goalId)), { recursive: true, mode: 0o700 });
}
