/** The quota owner's recovery contract: `quota.db` — or its tables of a PostgreSQL root — through its historical reader (sqlite-recovery.ts). Admits nothing. */
import { LAYOUT } from '../layout.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey } from '../export.js';
import { sqliteOwner } from '../sqlite-recovery.js';
import { decodeQuota, readHistoricalFile, type QuotaHistory } from './historical.js';
import { QUOTA_TABLES } from './sql.js';

export const recovery = sqliteOwner<QuotaHistory>({
  name: 'quota',
  decides: 'the spend ledger and Turn settlement identity',
  file: LAYOUT.quotaDb,
  requiredForGoal: true,
  optionalInV0Audits: true,
  dependsOn: ['config'],
  classification: 'historical_only',
  exportSchema: 'loopx_quota_export_v0',
  maxItems: OWNER_EXPORT_MAX_ITEMS,
  read: (abs, scratchDir) => readHistoricalFile(abs, scratchDir === undefined ? {} : { scratchDir }),
  // On a root whose Goal state is in PostgreSQL: the same reader over the schema's rows.
  postgresql: { tables: QUOTA_TABLES, read: (rows) => ({ ...decodeQuota(rows, []), schema_version: null }) },
  itemCounts: { spend: 'entries' },
  counts: (h) => ({ entries: h.entries.length }),
  items: (h) => byKey(h.entries, (e) => e.effect_id).map((value) => ({ kind: 'spend', value })),
});
