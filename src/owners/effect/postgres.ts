/**
 * PostgreSQL effect port: the effects, their history and the outbox as tables of the
 * installation's schema (component `effect`, migrated by `loopx db migrate`). The columns are
 * those of `effects.db` (instants as canonical ISO text, JSON as canonical text), so one row
 * decoder (schema.ts) proves every row of either provider well-formed; creation and outbox order
 * are identity columns. Each commit is one transaction that checks the write's precondition in the
 * database (pg-port.ts): a create inserts only when neither its operation id nor its idempotency
 * key is taken (`ON CONFLICT DO NOTHING`), an update locks the effect row (`FOR UPDATE`) and then
 * checks its revision — so two writers racing on one effect never both apply. Stores rows; decides
 * nothing about effects (journal.ts does).
 */
import { canonicalJson } from '../../core/index.js';
import type { PgDatabase, PgQuery } from '../../store/index.js';
import { openPgPort } from '../pg-port.js';
import { EFFECT_PG_MIGRATIONS } from './sql.js';
import type { ConflictReason } from '../port.js';
import type { EffectTransition, OutboxEntry } from './contract.js';
import type { EffectPort, EffectRows, EffectWrite } from './port.js';
import { decodeEffect, decodeTransition, type EffectRow, type HistoryRow } from './schema.js';

const EFFECT_COLUMNS =
  'operation_id, idempotency_key, goal_id, kind, target, intent, intent_digest, outcome, receipt, attempt, dispatched_at, hold, reconcile_attempts, created_at, settled_at';
const HISTORY_COLUMNS = 'operation_id, seq, event, outcome, receipt, reason, at';
const OUTBOX_JOIN =
  'SELECT o.operation_id, o.enqueued_at, e.idempotency_key, e.goal_id, e.kind, e.target FROM outbox o JOIN effects e USING (operation_id)';

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

const effectRows = async (q: PgQuery, where: string, params: readonly unknown[]) =>
  (await q<Record<keyof EffectRow, unknown>>(`SELECT ${EFFECT_COLUMNS} FROM effects ${where}`, params)).map(
    decodeEffect,
  );

const addHistory = (q: PgQuery, t: EffectTransition) =>
  q(`INSERT INTO effect_history (${HISTORY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
    t.operation_id,
    t.seq,
    t.event,
    t.outcome,
    jsonText(t.receipt),
    t.reason,
    t.at,
  ]);

async function create(
  q: PgQuery,
  w: Extract<EffectWrite, { op: 'create_effect' }>,
): Promise<ConflictReason | undefined> {
  const e = w.effect;
  // Neither the operation id nor the idempotency key may be taken: checked by the insert itself, so a racing creator waits and then finds it taken.
  const inserted = await q(
    `INSERT INTO effects (${EFFECT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT DO NOTHING RETURNING operation_id`,
    [
      e.operation_id,
      e.idempotency_key,
      e.goal_id,
      e.kind,
      e.target,
      e.intent,
      e.intent_digest,
      e.outcome,
      jsonText(e.receipt),
      e.attempt,
      e.dispatched_at,
      e.hold,
      e.reconcile_attempts,
      e.created_at,
      e.settled_at,
    ],
  );
  if (inserted.length === 0) return 'exists';
  await q('INSERT INTO outbox (operation_id, enqueued_at) VALUES ($1, $2)', [e.operation_id, w.enqueued_at]);
  await addHistory(q, w.transition);
  return undefined;
}

async function update(
  q: PgQuery,
  w: Extract<EffectWrite, { op: 'update_effect' }>,
): Promise<ConflictReason | undefined> {
  const e = w.effect;
  // The effect row locked first: a racing updater waits here, then sees this one's history row.
  if ((await q('SELECT 1 FROM effects WHERE operation_id = $1 FOR UPDATE', [e.operation_id])).length === 0)
    return 'missing';
  const [rev] = await q<{ n: number }>('SELECT count(*)::int AS n FROM effect_history WHERE operation_id = $1', [
    e.operation_id,
  ]);
  if (rev?.n !== w.transition.seq - 1) return 'changed';
  await q(
    `UPDATE effects SET outcome = $2, receipt = $3, attempt = $4, dispatched_at = $5, hold = $6, reconcile_attempts = $7, settled_at = $8
     WHERE operation_id = $1`,
    [
      e.operation_id,
      e.outcome,
      jsonText(e.receipt),
      e.attempt,
      e.dispatched_at,
      e.hold,
      e.reconcile_attempts,
      e.settled_at,
    ],
  );
  if (w.outbox !== 'keep') await q('DELETE FROM outbox WHERE operation_id = $1', [e.operation_id]);
  if (w.outbox !== 'keep' && w.outbox !== 'remove')
    await q('INSERT INTO outbox (operation_id, enqueued_at) VALUES ($1, $2)', [e.operation_id, w.outbox.add]);
  await addHistory(q, w.transition);
  return undefined;
}

/** The effect port over `db` (the pool is not its own: `close()` ends the port, not the pool). */
export interface PgEffectPortOptions {
  /**
   * Run first inside every write's transaction (a cluster's run fence: the writer still holds the
   * effect's run at its epoch); a typed refusal it raises refuses the write and passes through.
   */
  readonly fence?: (q: PgQuery, write: EffectWrite) => Promise<unknown>;
}

export function openPgEffectPort(db: PgDatabase, options: PgEffectPortOptions = {}): EffectPort {
  const base = openPgPort(db, 'effect', EFFECT_PG_MIGRATIONS, 'effect');

  const port = {
    provider: base.provider,
    read: (query) =>
      base.read(async (q): Promise<EffectRows> => {
        const [effect] =
          query.operation_id === undefined ? [] : await effectRows(q, 'WHERE operation_id = $1', [query.operation_id]);
        const id = effect?.operation_id;
        const [last] =
          id === undefined
            ? []
            : await q<Record<keyof HistoryRow, unknown>>(
                `SELECT ${HISTORY_COLUMNS} FROM effect_history WHERE operation_id = $1 ORDER BY seq DESC LIMIT 1`,
                [id],
              );
        const [queued] =
          id === undefined ? [] : await q<OutboxJoinRow>(`${OUTBOX_JOIN} WHERE o.operation_id = $1`, [id]);
        const [holder] =
          query.idempotency_key === undefined
            ? []
            : await effectRows(q, 'WHERE idempotency_key = $1', [query.idempotency_key]);
        return {
          ...(effect ? { effect } : {}),
          ...(last ? { last_transition: decodeTransition(last) } : {}),
          ...(queued ? { queued: outboxEntry(queued) } : {}),
          ...(holder ? { key_holder: holder } : {}),
        };
      }),
    listEffects: (filter = {}) =>
      base.read((q) =>
        effectRows(
          q,
          'WHERE ($1::text IS NULL OR goal_id = $1) AND ($2::text IS NULL OR outcome = $2) ORDER BY position',
          [filter.goal_id ?? null, filter.outcome ?? null],
        ),
      ),
    listOutbox: () =>
      base.read(async (q) => (await q<OutboxJoinRow>(`${OUTBOX_JOIN} ORDER BY o.position`)).map(outboxEntry)),
    listHolds: () =>
      base.read((q) =>
        effectRows(
          q,
          "WHERE outcome = 'unknown' OR (outcome = 'pending' AND dispatched_at IS NOT NULL) ORDER BY position",
          [],
        ),
      ),
    listHistory: (operationId) =>
      base.read(async (q) =>
        (
          await q<Record<keyof HistoryRow, unknown>>(
            `SELECT ${HISTORY_COLUMNS} FROM effect_history WHERE operation_id = $1 ORDER BY seq`,
            [operationId],
          )
        ).map(decodeTransition),
      ),
    commit: (write) =>
      base.commit(async (q) => {
        await options.fence?.(q, write);
        return write.op === 'create_effect' ? create(q, write) : update(q, write);
      }),
    close: () => base.close(),
  } satisfies EffectPort;
  return port;
}
