/**
 * SQLite quota port: `quota.db` in the runtime root. Each commit is one IMMEDIATE transaction
 * that checks the write's precondition on the current entry (sqlite-port.ts), so two processes
 * never debit one effect id twice. Stores entries; decides nothing about debits (quota.ts does).
 */
import { openSqlitePort, type SqlitePortOptions } from '../sqlite-port.js';
import type { QuotaPort } from './port.js';
import { decodeSpend, type SpendRow } from './schema.js';
import { MIGRATIONS } from './sql.js';

export type SqliteQuotaPortOptions = SqlitePortOptions;

export function openSqliteQuotaPort(path: string, options: SqliteQuotaPortOptions = {}): QuotaPort {
  const base = openSqlitePort(path, MIGRATIONS, 'quota', 'quota.db', options);
  const db = base.db;
  const q = {
    get: db.prepare('SELECT * FROM spends WHERE effect_id = ?'),
    list: db.prepare(
      'SELECT * FROM spends WHERE (@goal_id IS NULL OR goal_id = @goal_id) AND (@status IS NULL OR status = @status) ORDER BY rowid',
    ),
    insert: db.prepare(
      `INSERT INTO spends (effect_id, goal_id, goal_instance_id, amount, unit, request_digest, status, created_at, voided_at, void_reason)
       VALUES (@effect_id, @goal_id, @goal_instance_id, @amount, @unit, @request_digest, @status, @created_at, @voided_at, @void_reason)`,
    ),
    void: db.prepare(
      "UPDATE spends SET status = 'voided', voided_at = @voided_at, void_reason = @void_reason WHERE effect_id = @effect_id",
    ),
    total: db.prepare(
      `SELECT unit, SUM(amount) AS amount, COUNT(*) AS n FROM spends
       WHERE status = 'written' AND goal_id = @goal_id AND (@goal_instance_id IS NULL OR goal_instance_id = @goal_instance_id)
         AND created_at >= @since AND (@until IS NULL OR created_at < @until)
       GROUP BY unit ORDER BY unit`,
    ),
  };
  const read = (row: unknown) => (row === undefined ? undefined : decodeSpend(row as SpendRow));

  const port = {
    provider: base.provider,
    get: (effectId) => base.read(() => read(q.get.get(effectId))),
    list: (filter) =>
      base.read(() =>
        q.list.all({ goal_id: filter.goal_id ?? null, status: filter.status ?? null }).map((r) => read(r)!),
      ),
    sumWritten: (query) =>
      base.read(() => {
        const totals: Record<string, number> = {};
        let entries = 0;
        for (const r of q.total.all(query) as Array<{ unit: string; amount: number; n: number }>) {
          totals[r.unit] = r.amount;
          entries += r.n;
        }
        return { totals, entries };
      }),
    commit: (w) =>
      base.commit(() => {
        const stored = read(q.get.get(w.entry.effect_id));
        if (w.op === 'insert_spend') {
          if (stored !== undefined) return 'exists';
          q.insert.run(w.entry);
          return undefined;
        }
        if (stored === undefined) return 'missing';
        if (stored.status !== 'written' || stored.request_digest !== w.entry.request_digest) return 'changed';
        q.void.run(w.entry);
        return undefined;
      }),
    close: () => base.close(),
  } satisfies QuotaPort;
  return port;
}
