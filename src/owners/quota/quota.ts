/**
 * The quota owner: the one place that decides debits and voids of the spend ledger, over any
 * `QuotaPort` (port.ts). Every write validates its request, reads the entry it decides on, asks
 * the rules (rules.ts) and commits the finished entry conditionally (port.ts: decideAndCommit) —
 * a conflict re-reads and re-decides, so a racing identical debit becomes a replay and a racing
 * different one `quota_spend_conflict`. It decides no policy; `created_at` is a recorded fact.
 */
import { decideAndCommit, shows, type Decided } from '../port.js';
import type { QuotaLedger, QuotaLedgerOptions, SpendEntry, SpendResult, VoidResult } from './contract.js';
import { spendNotFound } from './errors.js';
import { memoryQuotaPort } from './memory.js';
import type { QuotaPort, QuotaWrite } from './port.js';
import { checkId, checkReason, decideSpend, decideVoid, normalizeSpend, normalizeTotal } from './rules.js';
import { openSqliteQuotaPort, type SqliteQuotaPortOptions } from './sqlite.js';

export function quotaLedger(port: QuotaPort, options: QuotaLedgerOptions = {}): QuotaLedger {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const run = <T>(decide: () => Promise<Decided<T, QuotaWrite>>): Promise<T> =>
    decideAndCommit('quota', (w: QuotaWrite) => port.commit(w), decide);
  const landed = (entry: SpendEntry) => async () => shows(await port.get(entry.effect_id), entry);

  const ledger = {
    async spend(request) {
      const n = normalizeSpend(request);
      return run<SpendResult>(async () => {
        const d = decideSpend(await port.get(n.effect_id), n, now());
        if ('replay' in d) return { result: { status: 'replayed', entry: d.replay } };
        return {
          result: { status: 'written', entry: d.write },
          write: { op: 'insert_spend', entry: d.write },
          landed: landed(d.write),
        };
      });
    },
    async void(effectId, reason) {
      const id = checkId(effectId, 'effect_id');
      const r = checkReason(reason);
      return run<VoidResult>(async () => {
        const e = await port.get(id);
        if (e === undefined) throw spendNotFound(id);
        const d = decideVoid(e, r, now());
        if ('replay' in d) return { result: { status: 'replayed', entry: d.replay } };
        return {
          result: { status: 'voided', entry: d.write },
          write: { op: 'void_spend', entry: d.write },
          landed: landed(d.write),
        };
      });
    },
    get: async (effectId) => (typeof effectId === 'string' ? port.get(effectId) : undefined),
    list: (filter = {}) => port.list(filter),
    async total(goal, window) {
      const q = normalizeTotal(goal, window);
      return { ...q, ...(await port.sumWritten(q)) };
    },
    close: () => port.close(),
  } satisfies QuotaLedger;
  return ledger;
}

/** The quota owner over the in-memory reference port. */
export const memoryQuotaLedger = (options: QuotaLedgerOptions = {}): QuotaLedger =>
  quotaLedger(memoryQuotaPort(), options);

export interface SqliteQuotaLedgerOptions extends QuotaLedgerOptions, SqliteQuotaPortOptions {}

/** The quota owner over `quota.db` at `path`. */
export const openSqliteQuotaLedger = (path: string, options: SqliteQuotaLedgerOptions = {}): QuotaLedger =>
  quotaLedger(openSqliteQuotaPort(path, options.synchronous ? { synchronous: options.synchronous } : {}), options);
