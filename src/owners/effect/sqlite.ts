/**
 * SQLite effect journal: `effects.db` in the runtime root. Each write is one IMMEDIATE transaction
 * that re-reads the row it decides on and lands the row, its history entry and its outbox change
 * together — so an intent is durable before dispatch and a dispatch is recorded before sending,
 * across processes sharing the file.
 */
import { canonicalJson, internal } from '../../core/index.js';
import { RowInvalid, openSqlite, setup, type SqliteDatabase } from '../../store/index.js';
import type { EffectJournal, EffectJournalOptions, EffectRecord, ExpectedEffectState, ReconcileQuery, ReconcileResult, OutboxEntry, ResolvedOutcome } from './contract.js';
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
  normalizeIntent,
  receiptText,
  type Change,
  type Decision,
  type NormalizedIntent,
} from './rules.js';
import { MIGRATIONS, decodeEffect, decodeTransition, type EffectRow, type HistoryRow, type OutboxRow } from './schema.js';

export interface SqliteEffectJournalOptions extends EffectJournalOptions {
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

export function openSqliteEffectJournal(path: string, options: SqliteEffectJournalOptions = {}): EffectJournal {
  const db: SqliteDatabase = openSqlite(path, options.synchronous ? { synchronous: options.synchronous } : {});
  setup(db, MIGRATIONS);
  const now = () => (options.now ?? (() => new Date()))().toISOString();

  const q = {
    get: db.prepare('SELECT * FROM effects WHERE operation_id = ?'),
    byKey: db.prepare('SELECT * FROM effects WHERE idempotency_key = ?'),
    list: db.prepare(
      'SELECT * FROM effects WHERE (@goal_id IS NULL OR goal_id = @goal_id) AND (@outcome IS NULL OR outcome = @outcome) ORDER BY rowid',
    ),
    holds: db.prepare("SELECT * FROM effects WHERE outcome = 'unknown' OR (outcome = 'pending' AND dispatched_at IS NOT NULL) ORDER BY rowid"),
    insert: db.prepare(
      `INSERT INTO effects (operation_id, idempotency_key, goal_id, kind, target, intent, intent_digest, outcome, receipt, attempt, dispatched_at, hold, reconcile_attempts, created_at, settled_at)
       VALUES (@operation_id, @idempotency_key, @goal_id, @kind, @target, @intent, @intent_digest, @outcome, @receipt, @attempt, @dispatched_at, @hold, @reconcile_attempts, @created_at, @settled_at)`,
    ),
    update: db.prepare(
      `UPDATE effects SET outcome = @outcome, receipt = @receipt, attempt = @attempt, dispatched_at = @dispatched_at, hold = @hold,
         reconcile_attempts = @reconcile_attempts, settled_at = @settled_at WHERE operation_id = @operation_id`,
    ),
    inOutbox: db.prepare('SELECT 1 FROM outbox WHERE operation_id = ?'),
    outboxAdd: db.prepare('INSERT INTO outbox (operation_id, enqueued_at) VALUES (?, ?)'),
    outboxRemove: db.prepare('DELETE FROM outbox WHERE operation_id = ?'),
    outbox: db.prepare(
      'SELECT o.operation_id, o.enqueued_at, e.idempotency_key, e.goal_id, e.kind, e.target FROM outbox o JOIN effects e USING (operation_id) ORDER BY o.rowid',
    ),
    historyCount: db.prepare('SELECT COUNT(*) AS n FROM effect_history WHERE operation_id = ?'),
    historyAdd: db.prepare('INSERT INTO effect_history (operation_id, seq, event, outcome, receipt, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    history: db.prepare('SELECT * FROM effect_history WHERE operation_id = ? ORDER BY seq'),
  };

  const decoded = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (e) {
      if (e instanceof RowInvalid) {
        throw internal('effect_store_corrupt', `effects.db holds a malformed row (${e.field}).`, { nextAction: 'run the backup verifier on a copy of effects.db', cause: e });
      }
      throw e;
    }
  };
  const read = (row: unknown): EffectRecord | undefined => (row === undefined ? undefined : decoded(() => decodeEffect(row as EffectRow)));
  const requireEffect = (operationId: string): EffectRecord => {
    const e = read(q.get.get(operationId));
    if (e === undefined) throw effectNotFound(operationId);
    return e;
  };

  const persist = (c: Change, insert: boolean): EffectRecord => {
    const at = now();
    const row = { ...c.next, receipt: c.next.receipt === null ? null : canonicalJson(c.next.receipt) };
    if (insert) q.insert.run(row);
    else q.update.run(row);
    if (c.outbox === 'add') q.outboxAdd.run(c.next.operation_id, at);
    if (c.outbox === 'remove') q.outboxRemove.run(c.next.operation_id);
    const seq = (q.historyCount.get(c.next.operation_id) as { n: number }).n + 1;
    q.historyAdd.run(c.next.operation_id, seq, c.event, c.next.outcome, c.receipt, c.reason, at);
    return c.next;
  };
  const outcomeOf = (d: Decision, insert = false) =>
    'readback' in d ? { effect: d.readback, replayed: true } : { effect: persist(d.change, insert), replayed: false };

  const tx = <A extends unknown[], R>(fn: (...args: A) => R) => {
    const t = db.transaction(fn);
    return (...args: A): R => t.immediate(...args);
  };
  const intentTx = tx((n: NormalizedIntent) => outcomeOf(decideRecordIntent(read(q.get.get(n.operation_id)), read(q.byKey.get(n.idempotency_key)), n, now()), true));
  const dispatchTx = tx((id: string) => persist(decideDispatch(requireEffect(id), q.inOutbox.get(id) !== undefined, now()), false));
  const settleTx = tx((id: string, outcome: ReturnType<typeof checkOutcome>, receipt: string) => outcomeOf(decideSettle(requireEffect(id), outcome, receipt, now())));
  const resolveTx = tx((id: string, expected: ExpectedEffectState, outcome: ResolvedOutcome, receipt: string) => outcomeOf(decideResolve(requireEffect(id), expected, outcome, receipt, now())));
  const holdTx = tx((id: string, reason: string) => persist(decideHold(requireEffect(id), reason), false));
  const reissueTx = tx((id: string) => persist(decideReissue(requireEffect(id)), false));

  const journal = {
    recordIntent: (request) => intentTx(normalizeIntent(request)),
    beginDispatch: (operationId) => dispatchTx(checkId(operationId, 'operation_id')),
    settle: (operationId, outcome, receipt) => settleTx(checkId(operationId, 'operation_id'), checkOutcome(outcome), receiptText(receipt)),
    resolve: (operationId, expected, outcome, receipt) =>
      resolveTx(checkId(operationId, 'operation_id'), checkExpected(expected), checkResolved(outcome), receiptText(receipt)),
    holdUnknown: (operationId, reason) => holdTx(checkId(operationId, 'operation_id'), checkReason(reason)),
    reissue: (operationId) => reissueTx(checkId(operationId, 'operation_id')),
    reconcile: (operationId: string, query: ReconcileQuery): Promise<ReconcileResult> => reconcileEffect(journal, operationId, query),
    get: (id) => read(q.get.get(id)),
    getByIdempotencyKey: (key) => read(q.byKey.get(key)),
    list: (filter = {}) => q.list.all({ goal_id: filter.goal_id ?? null, outcome: filter.outcome ?? null }).map((r) => read(r)!),
    outbox: () =>
      (q.outbox.all() as Array<OutboxRow & { idempotency_key: string; goal_id: string; kind: string; target: string }>).map(
        (r): OutboxEntry => ({ operation_id: String(r.operation_id), idempotency_key: r.idempotency_key, goal_id: r.goal_id, kind: r.kind, target: r.target, enqueued_at: String(r.enqueued_at) }),
      ),
    holds: () => q.holds.all().map((r) => read(r)!),
    history: (id) => (q.history.all(id) as HistoryRow[]).map((r) => decoded(() => decodeTransition(r))),
    close() {
      db.close();
    },
  } satisfies EffectJournal;
  return journal;
}
