/** In-memory reference scheduler store: the contract without a disk, for engine and owner tests. */
import type { SchedulerStore, SchedulerStoreOptions, Timer } from './contract.js';
import { timerNotFound } from './errors.js';
import { checkId, decideAck, decideCreate, decideReset, decideSetEnabled, instant, normalizeCreate } from './rules.js';

type Row = Timer & { create_digest: string };

const publicTimer = ({ create_digest: _digest, ...t }: Row): Timer => structuredClone(t);

export function memorySchedulerStore(options: SchedulerStoreOptions = {}): SchedulerStore {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const timers = new Map<string, Row>();
  const timer = (id: string): Row => {
    const t = timers.get(checkId(id, 'timer_id'));
    if (t === undefined) throw timerNotFound(id);
    return t;
  };

  const store = {
    createTimer(request) {
      const n = normalizeCreate(request);
      const d = decideCreate(timers.get(n.timer_id), n, now());
      if ('replay' in d) return { timer: publicTimer(d.replay), replayed: true };
      timers.set(n.timer_id, d.write);
      return { timer: publicTimer(d.write), replayed: false };
    },
    getTimer: (id) => (timers.has(id) ? publicTimer(timers.get(id)!) : undefined),
    listTimers: (goalId) => [...timers.values()].filter((t) => goalId === undefined || t.goal_id === goalId).map(publicTimer),
    dueTimers(at) {
      const limit = instant(at, 'at');
      return [...timers.values()]
        .filter((t) => t.enabled && t.next_due_at <= limit)
        .sort((a, b) => (a.next_due_at < b.next_due_at ? -1 : a.next_due_at > b.next_due_at ? 1 : 0))
        .map(publicTimer);
    },
    ackFire(timerId, request) {
      const t = timer(timerId);
      const d = decideAck(t, request?.reset_token, instant(request?.due_at, 'due_at'), now());
      if ('replay' in d) return { timer: publicTimer(d.replay), replayed: true };
      timers.set(t.timer_id, d.write);
      return { timer: publicTimer(d.write), replayed: false };
    },
    setEnabled(timerId, enabled, expectedResetToken) {
      const t = timer(timerId);
      const next = decideSetEnabled(t, enabled, expectedResetToken, now());
      timers.set(t.timer_id, next);
      return publicTimer(next);
    },
    resetTimer(timerId, request) {
      const t = timer(timerId);
      const next = decideReset(t, request?.expected_reset_token, request?.next_due_at, request?.cadence, now());
      timers.set(t.timer_id, next);
      return publicTimer(next);
    },
    close() {},
  } satisfies SchedulerStore;
  return store;
}
