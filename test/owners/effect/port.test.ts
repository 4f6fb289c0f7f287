/** The effect storage port's conformance suite, once per provider (a new provider adds one line). */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { EFFECT_PG_MIGRATIONS, createMemoryEffectState, memoryEffectPort, openPgEffectPort, openSqliteEffectPort } from '../../../src/owners/effect/index.js';
import type { PgDatabase } from '../../../src/store/index.js';
import { describePg } from '../../support/pg.js';
import { describeEffectPort } from '../conformance/effect-port.conformance.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { tempDirs } from '../conformance/support.js';

const tempDir = tempDirs('loopx-effect-port-');
const pg = pgHarnesses('effect', EFFECT_PG_MIGRATIONS);
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
describePg('on the real PostgreSQL server', () => {
  describeEffectPort('postgresql', () => {
    let db: PgDatabase | undefined; // the latest pool opened on the harness's schema
    const h = pg.harness((d) => openPgEffectPort((db = d)));
    const damage = async (id: string): Promise<void> => {
      await db!.query('UPDATE effects SET created_at = $1 WHERE operation_id = $2', [NOT_AN_INSTANT, id]);
    };
    return { open: () => h.open(), damage };
  });
});
