/** The quota owner's recovery contract: `quota.db` through its historical reader (sqlite-recovery.ts). Admits nothing. */
import { LAYOUT } from '../layout.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey } from '../export.js';
import { sqliteOwner } from '../sqlite-recovery.js';
import { readHistoricalFile, type QuotaHistory } from './historical.js';

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
  counts: (h) => ({ entries: h.entries.length }),
  items: (h) => byKey(h.entries, (e) => e.effect_id).map((value) => ({ kind: 'spend', value })),
});
