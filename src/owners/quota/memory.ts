/** In-memory reference quota ledger: the contract without a disk, for engine and owner tests. */
import type { QuotaLedger, QuotaLedgerOptions, QuotaTotal, SpendEntry } from './contract.js';
import { spendNotFound } from './errors.js';
import { checkId, checkReason, decideSpend, decideVoid, inWindow, normalizeSpend, normalizeTotal } from './rules.js';

export function memoryQuotaLedger(options: QuotaLedgerOptions = {}): QuotaLedger {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const entries = new Map<string, SpendEntry>();
  const clone = <T>(v: T): T => structuredClone(v);

  const ledger = {
    spend(request) {
      const n = normalizeSpend(request);
      const d = decideSpend(entries.get(n.effect_id), n, now());
      if ('replay' in d) return { status: 'replayed', entry: clone(d.replay) };
      entries.set(n.effect_id, d.write);
      return { status: 'written', entry: clone(d.write) };
    },
    void(effectId, reason) {
      const e = entries.get(checkId(effectId, 'effect_id'));
      const r = checkReason(reason);
      if (e === undefined) throw spendNotFound(effectId);
      const d = decideVoid(e, r, now());
      if ('replay' in d) return { status: 'replayed', entry: clone(d.replay) };
      entries.set(e.effect_id, d.write);
      return { status: 'voided', entry: clone(d.write) };
    },
    get: (effectId) => (entries.has(effectId) ? clone(entries.get(effectId)) : undefined),
    list: (filter = {}) =>
      [...entries.values()]
        .filter((e) => (filter.goal_id === undefined || e.goal_id === filter.goal_id) && (filter.status === undefined || e.status === filter.status))
        .map(clone),
    total(goal, window): QuotaTotal {
      const q = normalizeTotal(goal, window);
      const totals: Record<string, number> = {};
      let count = 0;
      for (const e of entries.values()) {
        if (!inWindow(e, q)) continue;
        totals[e.unit] = (totals[e.unit] ?? 0) + e.amount;
        count++;
      }
      return { ...q, totals, entries: count };
    },
    close() {},
  } satisfies QuotaLedger;
  return ledger;
}
