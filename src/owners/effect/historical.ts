/**
 * Historical readback of a COPY of `effects.db` (the backup verifier's owner reader), through the
 * owners' one SQLite history reader (sqlite-history.ts: a private read-only copy, never written).
 * It grants no authority and dispatches nothing. Uncertain and undelivered effects become holds
 * (recovery reconciles them by their original operation ids); defects become error findings.
 */
import type { FindingSeverity, OwnerFinding } from '../contract.js';
import { RowInvalid } from '../../store/index.js';
import {
  VERIFY_COPY_AGAIN as VERIFY,
  readSqliteHistory,
  type ReadSqliteHistoryOptions,
  type SqliteHistorySpec,
} from '../sqlite-history.js';
import type { TableRows } from '../table-rows.js';
import type { EffectRecord, EffectTransition, OutboxEntry } from './contract.js';
import { intentDigest } from './rules.js';
import { decodeEffect, decodeTransition, type EffectRow, type HistoryRow, type OutboxRow } from './schema.js';
import { EFFECT_TABLES, MIGRATIONS, type EffectTable } from './sql.js';

/** Subjects are `<kind>:<id>` — ids only, never URLs, intents or receipts. */
export type EffectFinding = OwnerFinding;

export interface EffectHistory {
  readonly owner: 'effect';
  readonly schema_version: number | null;
  readonly effects: readonly EffectRecord[];
  readonly outbox: readonly OutboxEntry[];
  readonly transitions: readonly EffectTransition[];
  readonly findings: readonly EffectFinding[];
}

export type { ReadSqliteHistoryOptions as ReadHistoricalOptions } from '../sqlite-history.js';

const RECONCILE =
  'reconcile by the original operation id through the effect owner; never dispatch it under a new identity';

/** The effect journal read from a copy of `effects.db` (sqlite-history.ts). */
export const readHistoricalFile = (copiedFilePath: string, options: ReadSqliteHistoryOptions = {}): EffectHistory =>
  readSqliteHistory(EFFECT_HISTORY, copiedFilePath, options);

/** The journal decoded from its rows (either provider's), with its holds and defects as findings. */
export function decodeEffects(
  rows: TableRows<EffectTable>,
  findings: EffectFinding[],
): Omit<EffectHistory, 'schema_version'> {
  const push = (code: string, severity: FindingSeverity, subject: string, next_action: string) =>
    findings.push({ code, severity, subject, next_action });

  const effects: EffectRecord[] = [];
  for (const row of rows('effects') as unknown as EffectRow[]) {
    let e: EffectRecord;
    try {
      e = decodeEffect(row);
    } catch (err) {
      if (!(err instanceof RowInvalid)) throw err;
      push('effect_row_invalid', 'error', `effect:${String(row.operation_id)}`, VERIFY);
      continue;
    }
    if (e.intent_digest !== intentDigest(e)) {
      push('effect_intent_digest_mismatch', 'error', `effect:${e.operation_id}`, VERIFY);
      continue;
    }
    effects.push(e);
  }
  const byId = new Map(effects.map((e) => [e.operation_id, e]));

  const outbox: OutboxEntry[] = [];
  const queued = new Set<string>();
  for (const row of rows('outbox') as unknown as OutboxRow[]) {
    const e = byId.get(String(row.operation_id));
    if (e === undefined || e.outcome !== 'pending' || e.dispatched_at !== null || typeof row.enqueued_at !== 'string') {
      push('effect_outbox_inconsistent', 'error', `effect:${String(row.operation_id)}`, VERIFY);
      continue;
    }
    queued.add(e.operation_id);
    outbox.push({
      operation_id: e.operation_id,
      idempotency_key: e.idempotency_key,
      goal_id: e.goal_id,
      kind: e.kind,
      target: e.target,
      enqueued_at: row.enqueued_at,
    });
  }

  const transitions: EffectTransition[] = [];
  const lastOf = new Map<string, EffectTransition>();
  const broken = new Set<string>();
  for (const row of rows('history') as unknown as HistoryRow[]) {
    const id = String(row.operation_id);
    try {
      const t = decodeTransition(row);
      if (t.seq !== (lastOf.get(id)?.seq ?? 0) + 1) throw new RowInvalid('seq');
      lastOf.set(id, t);
      transitions.push(t);
    } catch (err) {
      if (!(err instanceof RowInvalid)) throw err;
      broken.add(id);
    }
  }

  for (const e of effects) {
    const subject = `effect:${e.operation_id}`;
    if (broken.has(e.operation_id) || lastOf.get(e.operation_id)?.outcome !== e.outcome)
      push('effect_history_invalid', 'error', subject, VERIFY);
    if (e.outcome === 'unknown') push('effect_outcome_unknown', 'hold', subject, RECONCILE);
    else if (e.outcome === 'pending' && e.dispatched_at !== null)
      push('effect_dispatch_in_flight', 'hold', subject, RECONCILE);
    else if (e.outcome === 'pending') {
      if (!queued.has(e.operation_id)) push('effect_outbox_inconsistent', 'error', subject, VERIFY);
      push(
        'effect_delivery_pending',
        'hold',
        subject,
        'deliver only through the effect owner, under the original operation id, after adoption',
      );
    }
  }
  return { owner: 'effect', effects, outbox, transitions, findings };
}

const EFFECT_HISTORY: SqliteHistorySpec<EffectTable, EffectHistory> = {
  owner: 'effect',
  file: 'effects.db',
  version: MIGRATIONS.length,
  tables: EFFECT_TABLES,
  none: () => ({ effects: [], outbox: [], transitions: [] }),
  decode: decodeEffects,
};
