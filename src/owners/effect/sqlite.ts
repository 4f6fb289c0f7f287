/**
 * SQLite effect port: `effects.db` in the runtime root, on the schema it has always had (existing
 * roots and backups read unchanged). Each commit is one IMMEDIATE transaction that checks the
 * write's precondition on the current rows and lands the effect, its history row and its outbox
 * change together (sqlite-port.ts) — so an intent is durable before dispatch and a dispatch is
 * recorded before sending, across processes sharing the file. Stores rows; decides nothing about
 * effects (journal.ts does).
 */
import { canonicalJson } from '../../core/index.js';
import { type ConflictReason } from '../port.js';
import { openSqlitePort, type SqlitePortBase, type SqlitePortOptions } from '../sqlite-port.js';
import type { EffectTransition, OutboxEntry } from './contract.js';
import type { EffectPort, EffectRows, EffectWrite } from './port.js';
import { decodeEffect, decodeTransition, type EffectRow, type HistoryRow } from './schema.js';
import { MIGRATIONS } from './sql.js';

export type SqliteEffectPortOptions = SqlitePortOptions;

type OutboxJoinRow = {
  operation_id: string;
  enqueued_at: string;
  idempotency_key: string;
  goal_id: string;
  kind: string;
  target: string;
};

const jsonText = (v: unknown): string | null => (v === null ? null : canonicalJson(v));
const outboxEntry = (r: OutboxJoinRow): OutboxEntry => ({
  operation_id: String(r.operation_id),
  idempotency_key: r.idempotency_key,
  goal_id: r.goal_id,
  kind: r.kind,
  target: r.target,
  enqueued_at: String(r.enqueued_at),
});

/** The statements of effects.db, prepared once per port. */
function effectStatements(db: SqlitePortBase['db']) {
  return {
    get: db.prepare('SELECT * FROM effects WHERE operation_id = ?'),
    byKey: db.prepare('SELECT * FROM effects WHERE idempotency_key = ?'),
    taken: db.prepare('SELECT 1 FROM effects WHERE operation_id = ? OR idempotency_key = ?'),
    list: db.prepare(
      'SELECT * FROM effects WHERE (@goal_id IS NULL OR goal_id = @goal_id) AND (@outcome IS NULL OR outcome = @outcome) ORDER BY rowid',
    ),
    holds: db.prepare(
      "SELECT * FROM effects WHERE outcome = 'unknown' OR (outcome = 'pending' AND dispatched_at IS NOT NULL) ORDER BY rowid",
    ),
    insert: db.prepare(
      `INSERT INTO effects (operation_id, idempotency_key, goal_id, kind, target, intent, intent_digest, outcome, receipt, attempt, dispatched_at, hold, reconcile_attempts, created_at, settled_at)
       VALUES (@operation_id, @idempotency_key, @goal_id, @kind, @target, @intent, @intent_digest, @outcome, @receipt, @attempt, @dispatched_at, @hold, @reconcile_attempts, @created_at, @settled_at)`,
    ),
    update: db.prepare(
      `UPDATE effects SET outcome = @outcome, receipt = @receipt, attempt = @attempt, dispatched_at = @dispatched_at, hold = @hold,
         reconcile_attempts = @reconcile_attempts, settled_at = @settled_at WHERE operation_id = @operation_id`,
    ),
    queued: db.prepare(
      'SELECT o.operation_id, o.enqueued_at, e.idempotency_key, e.goal_id, e.kind, e.target FROM outbox o JOIN effects e USING (operation_id) WHERE o.operation_id = ?',
    ),
    outboxAdd: db.prepare('INSERT INTO outbox (operation_id, enqueued_at) VALUES (?, ?)'),
    outboxRemove: db.prepare('DELETE FROM outbox WHERE operation_id = ?'),
    outbox: db.prepare(
      'SELECT o.operation_id, o.enqueued_at, e.idempotency_key, e.goal_id, e.kind, e.target FROM outbox o JOIN effects e USING (operation_id) ORDER BY o.rowid',
    ),
    revision: db.prepare('SELECT COUNT(*) AS n FROM effect_history WHERE operation_id = ?'),
    last: db.prepare('SELECT * FROM effect_history WHERE operation_id = ? ORDER BY seq DESC LIMIT 1'),
    historyAdd: db.prepare(
      'INSERT INTO effect_history (operation_id, seq, event, outcome, receipt, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    history: db.prepare('SELECT * FROM effect_history WHERE operation_id = ? ORDER BY seq'),
  };
}

type EffectStatements = ReturnType<typeof effectStatements>;

/** A stored effect row decoded (none for no row). */
const effectOf = (row: unknown) => (row === undefined ? undefined : decodeEffect(row as EffectRow));
/** Appends transition `t` to its effect's history. */
const addHistory = (q: EffectStatements, t: EffectTransition): void => {
  q.historyAdd.run(t.operation_id, t.seq, t.event, t.outcome, jsonText(t.receipt), t.reason, t.at);
};

/** Lands `w` when its precondition holds on the current rows (port.ts), else the conflict's reason; inside the commit's transaction. */
function apply(q: EffectStatements, w: EffectWrite): ConflictReason | undefined {
  const e = w.effect;
  const row = { ...e, receipt: jsonText(e.receipt) };
  if (w.op === 'create_effect') {
    if (q.taken.get(e.operation_id, e.idempotency_key) !== undefined) return 'exists';
    q.insert.run(row);
    q.outboxAdd.run(e.operation_id, w.enqueued_at);
    addHistory(q, w.transition);
    return undefined;
  }
  if (q.get.get(e.operation_id) === undefined) return 'missing';
  if ((q.revision.get(e.operation_id) as { n: number }).n !== w.transition.seq - 1) return 'changed';
  q.update.run(row);
  if (w.outbox !== 'keep') q.outboxRemove.run(e.operation_id);
  if (w.outbox !== 'keep' && w.outbox !== 'remove') q.outboxAdd.run(e.operation_id, w.outbox.add);
  addHistory(q, w.transition);
  return undefined;
}

export function openSqliteEffectPort(path: string, options: SqliteEffectPortOptions = {}): EffectPort {
  const base = openSqlitePort(path, MIGRATIONS, 'effect', 'effects.db', options);
  const q = effectStatements(base.db);

  const port = {
    provider: base.provider,
    read: (query) =>
      base.read((): EffectRows => {
        const effect = query.operation_id === undefined ? undefined : effectOf(q.get.get(query.operation_id));
        const lastRow = effect === undefined ? undefined : (q.last.get(effect.operation_id) as HistoryRow | undefined);
        const queuedRow =
          effect === undefined ? undefined : (q.queued.get(effect.operation_id) as OutboxJoinRow | undefined);
        const holder = query.idempotency_key === undefined ? undefined : effectOf(q.byKey.get(query.idempotency_key));
        return {
          ...(effect ? { effect } : {}),
          ...(lastRow ? { last_transition: decodeTransition(lastRow) } : {}),
          ...(queuedRow ? { queued: outboxEntry(queuedRow) } : {}),
          ...(holder ? { key_holder: holder } : {}),
        };
      }),
    listEffects: (filter = {}) =>
      base.read(() =>
        (q.list.all({ goal_id: filter.goal_id ?? null, outcome: filter.outcome ?? null }) as EffectRow[]).map(
          decodeEffect,
        ),
      ),
    listOutbox: () => base.read(() => (q.outbox.all() as OutboxJoinRow[]).map(outboxEntry)),
    listHolds: () => base.read(() => (q.holds.all() as EffectRow[]).map(decodeEffect)),
    listHistory: (operationId) => base.read(() => (q.history.all(operationId) as HistoryRow[]).map(decodeTransition)),
    commit: (write) => base.commit(() => apply(q, write)),
    close: () => base.close(),
  } satisfies EffectPort;
  return port;
}
