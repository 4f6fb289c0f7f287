/** The scheduler storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import { SCHEDULER_PG_MIGRATIONS, createMemorySchedulerState, memorySchedulerPort, openPgSchedulerPort, openSqliteSchedulerPort } from '../../../src/owners/scheduler/index.js';
import { describeSchedulerPort } from '../conformance/scheduler-port.conformance.js';
import { tempDirs } from '../conformance/support.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { describePg } from '../../support/pg.js';

const tempDir = tempDirs('loopx-scheduler-port-');
const pg = pgHarnesses('scheduler', SCHEDULER_PG_MIGRATIONS);

describeSchedulerPort('memory', () => {
  const state = createMemorySchedulerState();
  return { open: () => memorySchedulerPort({ state }) };
});
describeSchedulerPort('sqlite', () => {
  const path = join(tempDir(), 'scheduler.db');
  return { open: () => openSqliteSchedulerPort(path) };
});
describePg('PostgreSQL', () => {
  describeSchedulerPort('postgresql', () => pg.harness(openPgSchedulerPort));
});
