/** The fixture owner's recovery contract: its database through its historical reader, built by the owners' kit (src/owners/sqlite-recovery.ts). */
import { OWNER_EXPORT_MAX_ITEMS, byKey } from '../../../src/owners/export.js';
import { sqliteOwner } from '../../../src/owners/sqlite-recovery.js';
import { readHistoricalFile, type FixtureHistory } from './historical.js';
import { FIXTURE_FILE } from './schema.js';

export const recovery = sqliteOwner<FixtureHistory>({
  name: 'fixture',
  decides: 'notes about a Goal (a test fixture: an owner that lives only in the test tree)',
  file: FIXTURE_FILE,
  requiredForGoal: false,
  dependsOn: ['config'],
  classification: 'historical_only',
  exportSchema: 'loopx_fixture_export_v0',
  maxItems: OWNER_EXPORT_MAX_ITEMS,
  read: (abs, scratchDir) => readHistoricalFile(abs, scratchDir === undefined ? {} : { scratchDir }),
  itemCounts: { note: 'notes' },
  counts: (h) => ({ notes: h.notes.length }),
  items: (h) => byKey(h.notes, (n) => n.note_id).map((value) => ({ kind: 'note', value })),
});
