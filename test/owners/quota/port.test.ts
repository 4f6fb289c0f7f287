/** The quota storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import { createMemoryQuotaState, memoryQuotaPort, openSqliteQuotaPort } from '../../../src/owners/quota/index.js';
import { describeQuotaPort } from '../conformance/quota-port.conformance.js';
import { tempDirs } from '../conformance/support.js';

const tempDir = tempDirs('loopx-quota-port-');

describeQuotaPort('memory', () => {
  const state = createMemoryQuotaState();
  return { open: () => memoryQuotaPort({ state }) };
});
describeQuotaPort('sqlite', () => {
  const path = join(tempDir(), 'quota.db');
  return { open: () => openSqliteQuotaPort(path) };
});
