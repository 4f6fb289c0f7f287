/**
 * The effect storage port's conformance suite, once per row of the provider table, through the
 * row's own factory. Damaging a stored row is the one thing the suite asks that only the test tree
 * can do per provider (DAMAGE): a row without a way to damage it fails here, never skips.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { EFFECT_SQL } from '../../../src/owners/effect/index.js';
import { LAYOUT } from '../../../src/owners/index.js';
import {
  memorySpace,
  postgresAt,
  type MemoryLocation,
  type PostgresLocation,
} from '../../../src/owners/providers/index.js';
import { describeEffectPort } from '../conformance/effect-port.conformance.js';
import { eachProvider, rootPortHarness, type Place } from '../conformance/providers.js';

const NOT_AN_INSTANT = 'yesterday';

/** Makes the stored row of `id` at `place` one that does not decode, the way a bad disk would: per provider. */
const DAMAGE: Readonly<Record<string, (place: Place, id: string) => void | Promise<void>>> = {
  memory: (place, id) =>
    void (memorySpace(place.location as MemoryLocation).effect.effects.get(id)!.created_at = NOT_AN_INSTANT),
  sqlite: (place, id) => {
    const db = new Database(join(place.root, LAYOUT.effectsDb));
    db.prepare('UPDATE effects SET created_at = ? WHERE operation_id = ?').run(NOT_AN_INSTANT, id);
    db.close();
  },
  postgresql: async (place, id) => {
    await postgresAt(place.location as PostgresLocation).query(
      'UPDATE effects SET created_at = $1 WHERE operation_id = $2',
      [NOT_AN_INSTANT, id],
    );
  },
};

eachProvider((row, place) => {
  const damage = DAMAGE[row.name];
  if (damage === undefined) throw new Error(`no way to damage an effect row of provider ${row.name}: add it to DAMAGE`);
  describeEffectPort(row.name, () => {
    const at = place(EFFECT_SQL);
    return { ...rootPortHarness(row, at, (ports, root, l) => ports.effect(root, l)), damage: (id) => damage(at, id) };
  });
});
