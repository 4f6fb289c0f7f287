/**
 * In-memory reference scheduler port: the port contract without a disk, for engine and owner
 * tests. Its timers live in a plain `MemorySchedulerState`, so a test can "restart" by opening a
 * new port on the same state. It checks each write's precondition and stores copies; it decides
 * nothing about timers (scheduler.ts does).
 */
import { MEMORY_PROVIDER } from '../../store/index.js';
import { APPLIED, conflictOf, providerClosed, shows } from '../port.js';
import type { SchedulerPort, StoredTimer } from './port.js';

export interface MemorySchedulerState {
  /** By timer id, in creation order. */
  readonly timers: Map<string, StoredTimer>;
}

export const createMemorySchedulerState = (): MemorySchedulerState => ({ timers: new Map() });

export interface MemorySchedulerPortOptions {
  /** Open on an existing state (a restart); a fresh state otherwise. */
  readonly state?: MemorySchedulerState;
}

export function memorySchedulerPort(options: MemorySchedulerPortOptions = {}): SchedulerPort {
  const { timers } = options.state ?? createMemorySchedulerState();
  let closed = false;
  const clone = <T>(v: T): T => structuredClone(v);
  const open = (): void => {
    if (closed) throw providerClosed('scheduler');
  };

  const port = {
    provider: MEMORY_PROVIDER,
    async get(timerId) {
      open();
      return clone(timers.get(timerId));
    },
    async list(goalId) {
      open();
      return clone([...timers.values()].filter((t) => goalId === undefined || t.goal_id === goalId));
    },
    async due(at) {
      open();
      // A stable sort keeps creation order among equal instants.
      return clone(
        [...timers.values()]
          .filter((t) => t.enabled && t.next_due_at <= at)
          .sort((a, b) => (a.next_due_at < b.next_due_at ? -1 : a.next_due_at > b.next_due_at ? 1 : 0)),
      );
    },
    async commit(w) {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      const stored = timers.get(w.timer.timer_id);
      if (w.op === 'insert_timer') {
        if (stored !== undefined) return conflictOf('exists');
      } else {
        if (stored === undefined) return conflictOf('missing');
        if (!shows(stored, w.expected)) return conflictOf('changed');
      }
      timers.set(w.timer.timer_id, clone(w.timer));
      return APPLIED;
    },
    close() {
      closed = true;
    },
  } satisfies SchedulerPort;
  return port;
}
