/**
 * Every RunAuthority provider passes the one conformance suite: the local authority on a fresh
 * private directory, the in-memory reference implementation, and PostgreSQL (a real server; keys
 * stay in a host directory). A new provider joins here by one line.
 */
import { join } from 'node:path';
import { afterAll, describe } from 'vitest';
import {
  memoryRunAuthority,
  openPgRunAuthority,
  openRunAuthority,
  RUN_AUTHORITY_COMPONENT,
  RUN_AUTHORITY_PG_MIGRATIONS,
} from '../../src/run-authority/index.js';
import { migratePostgres } from '../../src/store/index.js';
import { PG_AVAILABLE, pgDatabases } from '../support/pg.js';
import { describeRunAuthority } from './conformance/run-authority.conformance.js';
import { cleanup, tempBase } from './support.js';

afterAll(cleanup);

describeRunAuthority('local', ({ importWaitMs }) =>
  openRunAuthority({
    dir: join(tempBase(), 'authority'),
    create: true,
    ...(importWaitMs !== undefined ? { importWaitMs } : {}),
  }),
);
describeRunAuthority('memory', ({ importWaitMs }) =>
  memoryRunAuthority(importWaitMs !== undefined ? { importWaitMs } : {}),
);

// PostgreSQL: records, leases, bindings and lifetimes in a fresh schema per authority; keys in the host's own directory.
const pgDatabase = pgDatabases();
const describePgAuthority: typeof describeRunAuthority = PG_AVAILABLE
  ? describeRunAuthority
  : (name) => describe.skip(`RunAuthority conformance: ${name}`, () => undefined);
describePgAuthority('postgresql', async ({ importWaitMs }) => {
  const db = pgDatabase();
  await migratePostgres(db, RUN_AUTHORITY_COMPONENT, RUN_AUTHORITY_PG_MIGRATIONS);
  const keys = openRunAuthority({ dir: join(tempBase(), 'authority'), create: true });
  return openPgRunAuthority({ db, keys, ...(importWaitMs !== undefined ? { importWaitMs } : {}) });
});
