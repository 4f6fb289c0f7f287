/**
 * SQLite scheduler port: `scheduler.db` in the runtime root. Each commit is one IMMEDIATE
 * transaction that checks the write's precondition on the current row (sqlite-port.ts), so the
 * reset-token fence and the acknowledge-once rule hold across processes sharing the file. Stores
 * rows; decides nothing about timers (scheduler.ts does).
 */
import { shows } from '../port.js';
import { openSqlitePort, type SqlitePortOptions } from '../sqlite-port.js';
import type { SchedulerPort, StoredTimer } from './port.js';
import { decodeTimer, timerRow, type TimerRow } from './schema.js';
import { MIGRATIONS } from './sql.js';

export type SqliteSchedulerPortOptions = SqlitePortOptions;

export function openSqliteSchedulerPort(path: string, options: SqliteSchedulerPortOptions = {}): SchedulerPort {
  const base = openSqlitePort(path, MIGRATIONS, 'scheduler', 'scheduler.db', options);
  const db = base.db;
  const q = {
    get: db.prepare('SELECT * FROM timers WHERE timer_id = ?'),
    list: db.prepare('SELECT * FROM timers WHERE (@goal_id IS NULL OR goal_id = @goal_id) ORDER BY rowid'),
    due: db.prepare('SELECT * FROM timers WHERE enabled = 1 AND next_due_at <= ? ORDER BY next_due_at, rowid'),
    insert: db.prepare(
      `INSERT INTO timers (timer_id, goal_id, cadence, next_due_at, enabled, reset_token, last_fired_due_at, create_digest, created_at, updated_at)
       VALUES (@timer_id, @goal_id, @cadence, @next_due_at, @enabled, @reset_token, @last_fired_due_at, @create_digest, @created_at, @updated_at)`,
    ),
    update: db.prepare(
      `UPDATE timers SET cadence = @cadence, next_due_at = @next_due_at, enabled = @enabled, reset_token = @reset_token,
         last_fired_due_at = @last_fired_due_at, updated_at = @updated_at WHERE timer_id = @timer_id`,
    ),
  };
  const read = (row: unknown): StoredTimer | undefined =>
    row === undefined ? undefined : decodeTimer(row as TimerRow);

  const port = {
    provider: base.provider,
    get: (timerId) => base.read(() => read(q.get.get(timerId))),
    list: (goalId) => base.read(() => q.list.all({ goal_id: goalId ?? null }).map((r) => read(r)!)),
    due: (at) => base.read(() => q.due.all(at).map((r) => read(r)!)),
    commit: (w) =>
      base.commit(() => {
        const stored = read(q.get.get(w.timer.timer_id));
        if (w.op === 'insert_timer') {
          if (stored !== undefined) return 'exists';
          q.insert.run(timerRow(w.timer));
          return undefined;
        }
        if (stored === undefined) return 'missing';
        if (!shows(stored, w.expected)) return 'changed';
        q.update.run(timerRow(w.timer));
        return undefined;
      }),
    close: () => base.close(),
  } satisfies SchedulerPort;
  return port;
}
