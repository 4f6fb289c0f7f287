/**
 * SQLite quota ledger: `quota.db` in the runtime root. Each write is one IMMEDIATE transaction
 * that re-reads the entry it decides on, so two processes never debit one effect id twice.
 */
import { internal } from '../../core/index.js';
import { RowInvalid, openSqlite, setup, type SqliteDatabase } from '../../store/index.js';
import type { QuotaLedger, QuotaLedgerOptions, SpendEntry } from './contract.js';
import { spendNotFound } from './errors.js';
import { checkId, checkReason, decideSpend, decideVoid, normalizeSpend, normalizeTotal } from './rules.js';
import { MIGRATIONS, decodeSpend, type SpendRow } from './schema.js';

export interface SqliteQuotaLedgerOptions extends QuotaLedgerOptions {
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

export function openSqliteQuotaLedger(path: string, options: SqliteQuotaLedgerOptions = {}): QuotaLedger {
  const db: SqliteDatabase = openSqlite(path, options.synchronous ? { synchronous: options.synchronous } : {});
  setup(db, MIGRATIONS);
  const now = () => (options.now ?? (() => new Date()))().toISOString();

  const q = {
    get: db.prepare('SELECT * FROM spends WHERE effect_id = ?'),
    list: db.prepare('SELECT * FROM spends WHERE (@goal_id IS NULL OR goal_id = @goal_id) AND (@status IS NULL OR status = @status) ORDER BY rowid'),
    insert: db.prepare(
      `INSERT INTO spends (effect_id, goal_id, goal_instance_id, amount, unit, request_digest, status, created_at, voided_at, void_reason)
       VALUES (@effect_id, @goal_id, @goal_instance_id, @amount, @unit, @request_digest, @status, @created_at, @voided_at, @void_reason)`,
    ),
    void: db.prepare("UPDATE spends SET status = 'voided', voided_at = @voided_at, void_reason = @void_reason WHERE effect_id = @effect_id"),
    total: db.prepare(
      `SELECT unit, SUM(amount) AS amount, COUNT(*) AS n FROM spends
       WHERE status = 'written' AND goal_id = @goal_id AND (@goal_instance_id IS NULL OR goal_instance_id = @goal_instance_id)
         AND created_at >= @since AND (@until IS NULL OR created_at < @until)
       GROUP BY unit ORDER BY unit`,
    ),
  };

  const read = (row: unknown): SpendEntry | undefined => {
    if (row === undefined) return undefined;
    try {
      return decodeSpend(row as SpendRow);
    } catch (e) {
      if (e instanceof RowInvalid) {
        throw internal('quota_store_corrupt', `quota.db holds a malformed row (${e.field}).`, { nextAction: 'run the backup verifier on a copy of quota.db', cause: e });
      }
      throw e;
    }
  };
  const tx = <A extends unknown[], R>(fn: (...args: A) => R) => {
    const t = db.transaction(fn);
    return (...args: A): R => t.immediate(...args);
  };

  const spendTx = tx((n: ReturnType<typeof normalizeSpend>) => {
    const d = decideSpend(read(q.get.get(n.effect_id)), n, now());
    if ('replay' in d) return { status: 'replayed' as const, entry: d.replay };
    q.insert.run(d.write);
    return { status: 'written' as const, entry: d.write };
  });
  const voidTx = tx((effectId: string, reason: string) => {
    const e = read(q.get.get(effectId));
    if (e === undefined) throw spendNotFound(effectId);
    const d = decideVoid(e, reason, now());
    if ('replay' in d) return { status: 'replayed' as const, entry: d.replay };
    q.void.run(d.write);
    return { status: 'voided' as const, entry: d.write };
  });

  const ledger = {
    spend: (request) => spendTx(normalizeSpend(request)),
    void: (effectId, reason) => voidTx(checkId(effectId, 'effect_id'), checkReason(reason)),
    get: (effectId) => read(q.get.get(effectId)),
    list: (filter = {}) => q.list.all({ goal_id: filter.goal_id ?? null, status: filter.status ?? null }).map((r) => read(r)!),
    total(goal, window) {
      const nq = normalizeTotal(goal, window);
      const totals: Record<string, number> = {};
      let count = 0;
      for (const r of q.total.all(nq) as Array<{ unit: string; amount: number; n: number }>) {
        totals[r.unit] = r.amount;
        count += r.n;
      }
      return { ...nq, totals, entries: count };
    },
    close() {
      db.close();
    },
  } satisfies QuotaLedger;
  return ledger;
}
