/** The session storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import { createMemorySessionState, memorySessionPort, openSqliteSessionPort } from '../../../src/owners/session/index.js';
import { describeSessionPort } from '../conformance/session-port.conformance.js';
import { tempDirs } from '../conformance/support.js';

const tempDir = tempDirs('loopx-session-port-');

describeSessionPort('memory', () => {
  const state = createMemorySessionState();
  return { open: () => memorySessionPort({ state }) };
});
describeSessionPort('sqlite', () => {
  const path = join(tempDir(), 'sessions.db');
  return { open: () => openSqliteSessionPort(path) };
});
