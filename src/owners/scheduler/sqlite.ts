/**
 * SQLite scheduler store: `scheduler.db` in the runtime root. Each write is one IMMEDIATE
 * transaction that re-reads the timer it decides on, so the reset-token fence and the
 * acknowledge-once rule hold across processes sharing the file.
 */
import { internal } from '../../core/index.js';
import { RowInvalid, openSqlite, setup, type SqliteDatabase } from '../../store/index.js';
import type { SchedulerStore, SchedulerStoreOptions, Timer } from './contract.js';
import { timerNotFound } from './errors.js';
import { checkId, decideAck, decideCreate, decideReset, decideSetEnabled, instant, normalizeCreate, type NormalizedCreate } from './rules.js';
import { MIGRATIONS, decodeTimer, timerRow, type TimerRow } from './schema.js';

type Row = Timer & { create_digest: string };

export interface SqliteSchedulerStoreOptions extends SchedulerStoreOptions {
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

const publicTimer = ({ create_digest: _digest, ...t }: Row): Timer => t;

export function openSqliteSchedulerStore(path: string, options: SqliteSchedulerStoreOptions = {}): SchedulerStore {
  const db: SqliteDatabase = openSqlite(path, options.synchronous ? { synchronous: options.synchronous } : {});
  setup(db, MIGRATIONS);
  const now = () => (options.now ?? (() => new Date()))().toISOString();

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

  const read = (row: unknown): Row | undefined => {
    if (row === undefined) return undefined;
    try {
      return decodeTimer(row as TimerRow);
    } catch (e) {
      if (e instanceof RowInvalid) {
        throw internal('scheduler_store_corrupt', `scheduler.db holds a malformed row (${e.field}).`, { nextAction: 'run the backup verifier on a copy of scheduler.db', cause: e });
      }
      throw e;
    }
  };
  const requireTimer = (id: string): Row => {
    const t = read(q.get.get(id));
    if (t === undefined) throw timerNotFound(id);
    return t;
  };
  const tx = <A extends unknown[], R>(fn: (...args: A) => R) => {
    const t = db.transaction(fn);
    return (...args: A): R => t.immediate(...args);
  };
  const save = (t: Row): Timer => {
    q.update.run(timerRow(t));
    return publicTimer(t);
  };

  const createTx = tx((n: NormalizedCreate) => {
    const d = decideCreate(read(q.get.get(n.timer_id)), n, now());
    if ('replay' in d) return { timer: publicTimer(d.replay), replayed: true };
    q.insert.run(timerRow(d.write));
    return { timer: publicTimer(d.write), replayed: false };
  });
  const ackTx = tx((id: string, token: unknown, dueAt: string) => {
    const d = decideAck(requireTimer(id), token, dueAt, now());
    return 'replay' in d ? { timer: publicTimer(d.replay), replayed: true } : { timer: save(d.write), replayed: false };
  });
  const enableTx = tx((id: string, enabled: boolean, token: string) => save(decideSetEnabled(requireTimer(id), enabled, token, now())));
  const resetTx = tx((id: string, token: unknown, nextDueAt: string, cadence: string | undefined) => save(decideReset(requireTimer(id), token, nextDueAt, cadence, now())));

  const store = {
    createTimer: (request) => createTx(normalizeCreate(request)),
    getTimer: (id) => {
      const t = read(q.get.get(id));
      return t === undefined ? undefined : publicTimer(t);
    },
    listTimers: (goalId) => q.list.all({ goal_id: goalId ?? null }).map((r) => publicTimer(read(r)!)),
    dueTimers: (at) => q.due.all(instant(at, 'at')).map((r) => publicTimer(read(r)!)),
    ackFire: (timerId, request) => ackTx(checkId(timerId, 'timer_id'), request?.reset_token, instant(request?.due_at, 'due_at')),
    setEnabled: (timerId, enabled, expectedResetToken) => enableTx(checkId(timerId, 'timer_id'), enabled, expectedResetToken),
    resetTimer: (timerId, request) => resetTx(checkId(timerId, 'timer_id'), request?.expected_reset_token, request?.next_due_at, request?.cadence),
    close() {
      db.close();
    },
  } satisfies SchedulerStore;
  return store;
}
