/** The quota storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import { QUOTA_PG_MIGRATIONS, createMemoryQuotaState, memoryQuotaPort, openPgQuotaPort, openSqliteQuotaPort } from '../../../src/owners/quota/index.js';
import { describePg } from '../../support/pg.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { describeQuotaPort } from '../conformance/quota-port.conformance.js';
import { tempDirs } from '../conformance/support.js';

const tempDir = tempDirs('loopx-quota-port-');
const pg = pgHarnesses('quota', QUOTA_PG_MIGRATIONS);

describeQuotaPort('memory', () => {
  const state = createMemoryQuotaState();
  return { open: () => memoryQuotaPort({ state }) };
});
describeQuotaPort('sqlite', () => {
  const path = join(tempDir(), 'quota.db');
  return { open: () => openSqliteQuotaPort(path) };
});
describePg('on the real PostgreSQL server', () => {
  describeQuotaPort('postgresql', () => pg.harness(openPgQuotaPort));
});
