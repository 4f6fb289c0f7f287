/** The scheduler owner's recovery contract: `scheduler.db` — or its tables of a PostgreSQL root — through its historical reader (sqlite-recovery.ts). Arms nothing. */
import { LAYOUT } from '../layout.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey } from '../export.js';
import { sqliteOwner } from '../sqlite-recovery.js';
import { decodeTimers, readHistoricalFile, type SchedulerHistory } from './historical.js';
import { SCHEDULER_TABLES } from './sql.js';

export const recovery = sqliteOwner<SchedulerHistory>({
  name: 'scheduler',
  decides: 'timers and cadence; automations and skills as disabled data when restored',
  file: LAYOUT.schedulerDb,
  requiredForGoal: true,
  optionalInV0Audits: true,
  dependsOn: ['config'],
  classification: 'historical_only',
  exportSchema: 'loopx_scheduler_export_v0',
  maxItems: OWNER_EXPORT_MAX_ITEMS,
  read: (abs, scratchDir) => readHistoricalFile(abs, scratchDir === undefined ? {} : { scratchDir }),
  // On a root whose Goal state is in PostgreSQL: the same reader over the schema's rows.
  postgresql: { tables: SCHEDULER_TABLES, read: (rows) => ({ ...decodeTimers(rows, []), schema_version: null }) },
  itemCounts: { timer: 'timers' },
  counts: (h) => ({ timers: h.timers.length }),
  items: (h) => byKey(h.timers, (t) => t.timer_id).map((value) => ({ kind: 'timer', value })),
});
