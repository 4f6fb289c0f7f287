/**
 * The PostgreSQL scheduler port: the same rows as `scheduler.db`, in one installation's schema
 * (sql.ts). Each commit is one transaction (pg-port.ts) that locks the timer's row
 * `FOR UPDATE` and compares it field for field with the row the decision read before writing, so
 * the reset-token fence and acknowledge-once hold against a writer in any other process or pool:
 * a stale writer fails in the database. An insert is `ON CONFLICT DO NOTHING` (a taken id is
 * `exists`). Stores rows; decides nothing about timers (scheduler.ts does).
 */
import type { PgDatabase, PgQuery } from '../../store/index.js';
import { shows } from '../port.js';
import { openPgPort } from '../pg-port.js';
import { SCHEDULER_PG_MIGRATIONS } from './sql.js';
import type { SchedulerPort, StoredTimer } from './port.js';
import { decodeTimer, timerRow, type TimerRow } from './schema.js';

const COLUMNS =
  'timer_id, goal_id, cadence, next_due_at, enabled, reset_token, last_fired_due_at, create_digest, created_at, updated_at';

const timers = async (q: PgQuery, where: string, args: unknown[]): Promise<StoredTimer[]> =>
  (await q<TimerRow & Record<string, unknown>>(`SELECT ${COLUMNS} FROM timers ${where}`, args)).map(decodeTimer);

const values = (t: StoredTimer): unknown[] => {
  const r = timerRow(t);
  return [
    r.timer_id,
    r.goal_id,
    r.cadence,
    r.next_due_at,
    r.enabled,
    r.reset_token,
    r.last_fired_due_at,
    r.create_digest,
    r.created_at,
    r.updated_at,
  ];
};

/** The scheduler port on `db`'s schema (migrated by `loopx db migrate`; checked on first use). `close` ends the port, not `db`. */
export function openPgSchedulerPort(db: PgDatabase): SchedulerPort {
  const base = openPgPort(db, 'scheduler', SCHEDULER_PG_MIGRATIONS, 'scheduler');
  return {
    provider: base.provider,
    get: (timerId) => base.read(async (q) => (await timers(q, 'WHERE timer_id = $1', [timerId]))[0]),
    list: (goalId) =>
      base.read((q) =>
        goalId === undefined ? timers(q, 'ORDER BY seq', []) : timers(q, 'WHERE goal_id = $1 ORDER BY seq', [goalId]),
      ),
    due: (at) => base.read((q) => timers(q, 'WHERE enabled = 1 AND next_due_at <= $1 ORDER BY next_due_at, seq', [at])),
    commit: (w) =>
      base.commit(async (q) => {
        if (w.op === 'insert_timer') {
          const inserted = await q(
            `INSERT INTO timers (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING 1 AS inserted`,
            values(w.timer),
          );
          return inserted.length === 1 ? undefined : 'exists';
        }
        const [stored] = await timers(q, 'WHERE timer_id = $1 FOR UPDATE', [w.timer.timer_id]);
        if (stored === undefined) return 'missing';
        if (!shows(stored, w.expected)) return 'changed';
        const [, , cadence, next, enabled, token, lastFired, , , updated] = values(w.timer);
        await q(
          'UPDATE timers SET cadence = $1, next_due_at = $2, enabled = $3, reset_token = $4, last_fired_due_at = $5, updated_at = $6 WHERE timer_id = $7',
          [cadence, next, enabled, token, lastFired, updated, w.timer.timer_id],
        );
        return undefined;
      }),
    close: () => base.close(),
  };
}
