/** The session storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import { SESSION_PG_MIGRATIONS, createMemorySessionState, memorySessionPort, openPgSessionPort, openSqliteSessionPort } from '../../../src/owners/session/index.js';
import { describeSessionPort } from '../conformance/session-port.conformance.js';
import { tempDirs } from '../conformance/support.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { describePg } from '../../support/pg.js';

const tempDir = tempDirs('loopx-session-port-');
const pg = pgHarnesses('session', SESSION_PG_MIGRATIONS);

describeSessionPort('memory', () => {
  const state = createMemorySessionState();
  return { open: () => memorySessionPort({ state }) };
});
describeSessionPort('sqlite', () => {
  const path = join(tempDir(), 'sessions.db');
  return { open: () => openSqliteSessionPort(path) };
});
describePg('PostgreSQL', () => {
  describeSessionPort('postgresql', () => pg.harness(openPgSessionPort));
});
