/** In-memory reference effect journal: the contract without a disk, for engine and owner tests. */
import type { EffectJournal, EffectJournalOptions, EffectRecord, ReconcileQuery, ReconcileResult, EffectTransition, OutboxEntry } from './contract.js';
import { effectNotFound } from './errors.js';
import { reconcileEffect } from './reconcile.js';
import {
  checkExpected,
  checkId,
  checkOutcome,
  checkReason,
  checkResolved,
  decideDispatch,
  decideHold,
  decideRecordIntent,
  decideReissue,
  decideResolve,
  decideSettle,
  isUncertain,
  normalizeIntent,
  receiptText,
  type Change,
} from './rules.js';

export function memoryEffectJournal(options: EffectJournalOptions = {}): EffectJournal {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const effects = new Map<string, EffectRecord>();
  const byKey = new Map<string, string>();
  const outbox = new Map<string, string>(); // operation_id → enqueued_at, in enqueue order
  const history = new Map<string, EffectTransition[]>();
  const clone = <T>(v: T): T => structuredClone(v);

  const effect = (operationId: string): EffectRecord => {
    const e = effects.get(checkId(operationId, 'operation_id'));
    if (e === undefined) throw effectNotFound(operationId);
    return e;
  };
  const apply = (c: Change): EffectRecord => {
    const at = now();
    const id = c.next.operation_id;
    effects.set(id, c.next);
    byKey.set(c.next.idempotency_key, id);
    if (c.outbox === 'add') outbox.set(id, at);
    if (c.outbox === 'remove') outbox.delete(id);
    const h = history.get(id) ?? [];
    h.push({ operation_id: id, seq: h.length + 1, event: c.event, outcome: c.next.outcome, receipt: c.receipt === null ? null : JSON.parse(c.receipt), reason: c.reason, at });
    history.set(id, h);
    return clone(c.next);
  };

  const journal = {
    recordIntent(request) {
      const n = normalizeIntent(request);
      const holder = byKey.get(n.idempotency_key);
      const d = decideRecordIntent(effects.get(n.operation_id), holder === undefined ? undefined : effects.get(holder), n, now());
      return 'readback' in d ? { effect: clone(d.readback), replayed: true } : { effect: apply(d.change), replayed: false };
    },
    beginDispatch(operationId) {
      const e = effect(operationId);
      return apply(decideDispatch(e, outbox.has(e.operation_id), now()));
    },
    settle(operationId, outcome, receipt) {
      const e = effect(operationId);
      const d = decideSettle(e, checkOutcome(outcome), receiptText(receipt), now());
      return 'readback' in d ? { effect: clone(d.readback), replayed: true } : { effect: apply(d.change), replayed: false };
    },
    resolve(operationId, expected, outcome, receipt) {
      const e = effect(operationId);
      const d = decideResolve(e, checkExpected(expected), checkResolved(outcome), receiptText(receipt), now());
      return 'readback' in d ? { effect: clone(d.readback), replayed: true } : { effect: apply(d.change), replayed: false };
    },
    holdUnknown(operationId, reason) {
      const e = effect(operationId);
      return apply(decideHold(e, checkReason(reason)));
    },
    reissue(operationId) {
      return apply(decideReissue(effect(operationId)));
    },
    reconcile: (operationId: string, query: ReconcileQuery): Promise<ReconcileResult> => reconcileEffect(journal, operationId, query),
    get: (id) => (effects.has(id) ? clone(effects.get(id)) : undefined),
    getByIdempotencyKey(key) {
      const id = byKey.get(key);
      return id === undefined ? undefined : clone(effects.get(id));
    },
    list: (filter = {}) =>
      [...effects.values()]
        .filter((e) => (filter.goal_id === undefined || e.goal_id === filter.goal_id) && (filter.outcome === undefined || e.outcome === filter.outcome))
        .map(clone),
    outbox: () =>
      [...outbox.entries()].map(([id, enqueued_at]): OutboxEntry => {
        const e = effects.get(id)!;
        return { operation_id: id, idempotency_key: e.idempotency_key, goal_id: e.goal_id, kind: e.kind, target: e.target, enqueued_at };
      }),
    holds: () => [...effects.values()].filter(isUncertain).map(clone),
    history: (id) => clone(history.get(id) ?? []),
    close() {},
  } satisfies EffectJournal;
  return journal;
}
