/** The effect storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createMemoryEffectState, memoryEffectPort, openSqliteEffectPort } from '../../../src/owners/effect/index.js';
import { describeEffectPort } from '../conformance/effect-port.conformance.js';
import { tempDirs } from '../conformance/support.js';

const tempDir = tempDirs('loopx-effect-port-');
const NOT_AN_INSTANT = 'yesterday';

describeEffectPort('memory', () => {
  const state = createMemoryEffectState();
  return { open: () => memoryEffectPort({ state }), damage: (id) => void (state.effects.get(id)!.created_at = NOT_AN_INSTANT) };
});
describeEffectPort('sqlite', () => {
  const path = join(tempDir(), 'effects.db');
  const damage = (id: string): void => {
    const db = new Database(path);
    db.prepare('UPDATE effects SET created_at = ? WHERE operation_id = ?').run(NOT_AN_INSTANT, id);
    db.close();
  };
  return { open: () => openSqliteEffectPort(path), damage };
});
