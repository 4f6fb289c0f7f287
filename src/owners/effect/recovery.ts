/** The effect owner's recovery contract: `effects.db` — or its tables of a PostgreSQL root — through its historical reader (sqlite-recovery.ts). Dispatches nothing. */
import { LAYOUT } from '../layout.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey } from '../export.js';
import { sqliteOwner } from '../sqlite-recovery.js';
import { decodeEffects, readHistoricalFile, type EffectHistory } from './historical.js';
import { EFFECT_TABLES } from './sql.js';

export const recovery = sqliteOwner<EffectHistory>({
  name: 'effect',
  decides: 'external effects: operation identity, intent, outcome, receipts and the outbox',
  file: LAYOUT.effectsDb,
  requiredForGoal: true,
  dependsOn: ['config'],
  classification: 'historical_only',
  exportSchema: 'loopx_effect_export_v0',
  maxItems: OWNER_EXPORT_MAX_ITEMS,
  read: (abs, scratchDir) => readHistoricalFile(abs, scratchDir === undefined ? {} : { scratchDir }),
  // On a root whose Goal state is in PostgreSQL: the same reader over the schema's rows.
  postgresql: { tables: EFFECT_TABLES, read: (rows) => ({ ...decodeEffects(rows, []), schema_version: null }) },
  itemCounts: { effect: 'effects', outbox: 'outbox', transition: 'transitions' },
  inFlight: (h) => h.effects.filter((e) => e.outcome === 'pending' && e.dispatched_at !== null).length,
  counts: (h) => ({ effects: h.effects.length, outbox: h.outbox.length, transitions: h.transitions.length }),
  items: (h) => [
    ...byKey(h.effects, (e) => e.operation_id).map((value) => ({ kind: 'effect', value })),
    ...byKey(h.outbox, (o) => o.operation_id).map((value) => ({ kind: 'outbox', value })),
    ...byKey(h.transitions, (t) => `${t.operation_id}\u0000${String(t.seq).padStart(12, '0')}`).map((value) => ({
      kind: 'transition',
      value,
    })),
  ],
});
