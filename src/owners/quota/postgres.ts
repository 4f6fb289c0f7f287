/**
 * PostgreSQL quota port: the spend ledger as a table of the installation's schema (component
 * `quota`, migrated by `loopx db migrate`), with the columns of `quota.db` (instants as canonical
 * ISO text compared bytewise, amounts as BIGINT decoded explicitly), so one row decoder
 * (schema.ts) proves every entry of either provider well-formed. Each commit is one transaction
 * that checks the write's precondition in the database (pg-port.ts): a debit inserts only when its
 * effect id is free (`ON CONFLICT DO NOTHING`), a void locks the entry (`FOR UPDATE`) before
 * checking it — so two processes never debit one effect id twice. Stores entries; decides nothing
 * about debits (quota.ts does).
 */
import { intColumn, textColumn, type PgDatabase, type PgQuery } from '../../store/index.js';
import { openPgPort } from '../pg-port.js';
import { QUOTA_PG_MIGRATIONS } from './sql.js';
import type { ConflictReason } from '../port.js';
import type { SpendEntry } from './contract.js';
import type { QuotaPort, QuotaWrite } from './port.js';
import { decodeSpend, type SpendRow } from './schema.js';

/** A BIGINT (or numeric) column as `pg` returns it — a decimal string — as a bigint `intColumn` checks; anything else unchanged (and refused there). */
const pgInteger = (v: unknown): unknown => (typeof v === 'string' && /^-?\d{1,30}$/.test(v) ? BigInt(v) : v);

const COLUMNS =
  'effect_id, goal_id, goal_instance_id, amount, unit, request_digest, status, created_at, voided_at, void_reason';

type Row = Record<keyof SpendRow, unknown>;
const decode = (r: Row): SpendEntry => decodeSpend({ ...r, amount: pgInteger(r.amount) });

const entries = async (q: PgQuery, where: string, params: readonly unknown[]): Promise<SpendEntry[]> =>
  (await q<Row>(`SELECT ${COLUMNS} FROM spends ${where}`, params)).map(decode);

async function apply(q: PgQuery, w: QuotaWrite): Promise<ConflictReason | undefined> {
  const e = w.entry;
  if (w.op === 'insert_spend') {
    // The effect id debits once: checked by the insert itself, so a racing debit waits and then finds it taken.
    const inserted = await q(
      `INSERT INTO spends (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING effect_id`,
      [
        e.effect_id,
        e.goal_id,
        e.goal_instance_id,
        e.amount,
        e.unit,
        e.request_digest,
        e.status,
        e.created_at,
        e.voided_at,
        e.void_reason,
      ],
    );
    if (inserted.length > 0) return undefined;
    await entries(q, 'WHERE effect_id = $1 FOR SHARE', [e.effect_id]); // the entry in the way must decode, as in SQLite
    return 'exists';
  }
  const [stored] = await entries(q, 'WHERE effect_id = $1 FOR UPDATE', [e.effect_id]);
  if (stored === undefined) return 'missing';
  if (stored.status !== 'written' || stored.request_digest !== e.request_digest) return 'changed';
  await q("UPDATE spends SET status = 'voided', voided_at = $2, void_reason = $3 WHERE effect_id = $1", [
    e.effect_id,
    e.voided_at,
    e.void_reason,
  ]);
  return undefined;
}

/** The quota port over `db` (the pool is not its own: `close()` ends the port, not the pool). */
export function openPgQuotaPort(db: PgDatabase): QuotaPort {
  const base = openPgPort(db, 'quota', QUOTA_PG_MIGRATIONS, 'quota');
  const port = {
    provider: base.provider,
    get: (effectId) => base.read(async (q) => (await entries(q, 'WHERE effect_id = $1', [effectId]))[0]),
    list: (filter) =>
      base.read((q) =>
        entries(q, 'WHERE ($1::text IS NULL OR goal_id = $1) AND ($2::text IS NULL OR status = $2) ORDER BY position', [
          filter.goal_id ?? null,
          filter.status ?? null,
        ]),
      ),
    sumWritten: (query) =>
      base.read(async (q) => {
        const rows = await q<{ unit: unknown; amount: unknown; n: unknown }>(
          `SELECT unit, SUM(amount) AS amount, count(*) AS n FROM spends
           WHERE status = 'written' AND goal_id = $1 AND ($2::text IS NULL OR goal_instance_id = $2)
             AND created_at >= $3 AND ($4::text IS NULL OR created_at < $4)
           GROUP BY unit ORDER BY unit`,
          [query.goal_id, query.goal_instance_id, query.since, query.until],
        );
        const totals: Record<string, number> = {};
        let count = 0;
        for (const r of rows) {
          totals[textColumn(r.unit, 'unit')] = intColumn(pgInteger(r.amount), 'amount', 1);
          count += intColumn(pgInteger(r.n), 'n', 1);
        }
        return { totals, entries: count };
      }),
    commit: (w) => base.commit((q) => apply(q, w)),
    close: () => base.close(),
  } satisfies QuotaPort;
  return port;
}
