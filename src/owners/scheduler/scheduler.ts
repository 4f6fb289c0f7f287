/**
 * The scheduler owner: the one place that decides Goal timers — idempotent creation, the
 * reset-token fence and acknowledge-once firing — over any `SchedulerPort` (port.ts). Every write
 * validates its request, reads the timer it decides on, asks the rules (rules.ts) and commits the
 * new row conditionally on the one it read (port.ts: decideAndCommit), so a writer that lost a
 * race re-decides against the winner's row. Fire times and timestamps come from the injected clock.
 */
import { decideAndCommit, shows, type Decided } from '../port.js';
import type { SchedulerStore, SchedulerStoreOptions, Timer, TimerWriteResult } from './contract.js';
import { timerNotFound } from './errors.js';
import { memorySchedulerPort } from './memory.js';
import type { SchedulerPort, SchedulerWrite, StoredTimer } from './port.js';
import { checkId, decideAck, decideCreate, decideReset, decideSetEnabled, instant, normalizeCreate } from './rules.js';
import { openSqliteSchedulerPort, type SqliteSchedulerPortOptions } from './sqlite.js';

const publicTimer = ({ create_digest: _digest, ...t }: StoredTimer): Timer => t;

export function schedulerStore(port: SchedulerPort, options: SchedulerStoreOptions = {}): SchedulerStore {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const run = <T>(decide: () => Promise<Decided<T, SchedulerWrite>>): Promise<T> =>
    decideAndCommit('scheduler', (w: SchedulerWrite) => port.commit(w), decide);
  const landed = (row: StoredTimer) => async () => shows(await port.get(row.timer_id), row);
  const requireTimer = async (id: string): Promise<StoredTimer> => {
    const t = await port.get(id);
    if (t === undefined) throw timerNotFound(id);
    return t;
  };
  /** The change from `read` to `next` (none when the rules kept the row), answered with `result`. */
  const change = <T>(read: StoredTimer, next: StoredTimer, result: T): Decided<T, SchedulerWrite> =>
    next === read
      ? { result }
      : { result, write: { op: 'update_timer', expected: read, timer: next }, landed: landed(next) };

  const store = {
    async createTimer(request) {
      const n = normalizeCreate(request);
      return run<TimerWriteResult>(async () => {
        const d = decideCreate(await port.get(n.timer_id), n, now());
        if ('replay' in d) return { result: { timer: publicTimer(d.replay), replayed: true } };
        return {
          result: { timer: publicTimer(d.write), replayed: false },
          write: { op: 'insert_timer', timer: d.write },
          landed: landed(d.write),
        };
      });
    },
    getTimer: async (id) => {
      const t = typeof id === 'string' ? await port.get(id) : undefined;
      return t === undefined ? undefined : publicTimer(t);
    },
    listTimers: async (goalId) => (await port.list(goalId)).map(publicTimer),
    dueTimers: async (at) => (await port.due(instant(at, 'at'))).map(publicTimer),
    async ackFire(timerId, request) {
      const id = checkId(timerId, 'timer_id');
      const dueAt = instant(request?.due_at, 'due_at');
      return run<TimerWriteResult>(async () => {
        const t = await requireTimer(id);
        const d = decideAck(t, request?.reset_token, dueAt, now());
        if ('replay' in d) return { result: { timer: publicTimer(d.replay), replayed: true } };
        return change(t, d.write, { timer: publicTimer(d.write), replayed: false });
      });
    },
    async setEnabled(timerId, enabled, expectedResetToken) {
      const id = checkId(timerId, 'timer_id');
      return run<Timer>(async () => {
        const t = await requireTimer(id);
        const next = decideSetEnabled(t, enabled, expectedResetToken, now());
        return change(t, next, publicTimer(next));
      });
    },
    async resetTimer(timerId, request) {
      const id = checkId(timerId, 'timer_id');
      return run<Timer>(async () => {
        const t = await requireTimer(id);
        const next = decideReset(t, request?.expected_reset_token, request?.next_due_at, request?.cadence, now());
        return change(t, next, publicTimer(next));
      });
    },
    close: () => port.close(),
  } satisfies SchedulerStore;
  return store;
}

/** The scheduler owner over the in-memory reference port. */
export const memorySchedulerStore = (options: SchedulerStoreOptions = {}): SchedulerStore =>
  schedulerStore(memorySchedulerPort(), options);

export interface SqliteSchedulerStoreOptions extends SchedulerStoreOptions, SqliteSchedulerPortOptions {}

/** The scheduler owner over `scheduler.db` at `path`. */
export const openSqliteSchedulerStore = (path: string, options: SqliteSchedulerStoreOptions = {}): SchedulerStore =>
  schedulerStore(
    openSqliteSchedulerPort(path, options.synchronous ? { synchronous: options.synchronous } : {}),
    options,
  );
