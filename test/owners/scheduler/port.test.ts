/** The scheduler storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import { createMemorySchedulerState, memorySchedulerPort, openSqliteSchedulerPort } from '../../../src/owners/scheduler/index.js';
import { describeSchedulerPort } from '../conformance/scheduler-port.conformance.js';
import { tempDirs } from '../conformance/support.js';

const tempDir = tempDirs('loopx-scheduler-port-');

describeSchedulerPort('memory', () => {
  const state = createMemorySchedulerState();
  return { open: () => memorySchedulerPort({ state }) };
});
describeSchedulerPort('sqlite', () => {
  const path = join(tempDir(), 'scheduler.db');
  return { open: () => openSqliteSchedulerPort(path) };
});
