/**
 * In-memory reference quota port: the port contract without a disk, for engine and owner tests.
 * Its entries live in a plain `MemoryQuotaState`, so a test can "restart" by opening a new port on
 * the same state. It checks each write's precondition and stores copies; it decides nothing about
 * debits (quota.ts does).
 */
import { MEMORY_PROVIDER } from '../../store/index.js';
import { APPLIED, conflictOf, providerClosed } from '../port.js';
import type { SpendEntry } from './contract.js';
import type { QuotaPort, SpendQuery } from './port.js';

export interface MemoryQuotaState {
  /** By effect id, in creation order. */
  readonly entries: Map<string, SpendEntry>;
}

export const createMemoryQuotaState = (): MemoryQuotaState => ({ entries: new Map() });

export interface MemoryQuotaPortOptions {
  /** Open on an existing state (a restart); a fresh state otherwise. */
  readonly state?: MemoryQuotaState;
}

const summed = (e: SpendEntry, q: SpendQuery): boolean =>
  e.status === 'written' &&
  e.goal_id === q.goal_id &&
  (q.goal_instance_id === null || e.goal_instance_id === q.goal_instance_id) &&
  e.created_at >= q.since &&
  (q.until === null || e.created_at < q.until);

export function memoryQuotaPort(options: MemoryQuotaPortOptions = {}): QuotaPort {
  const { entries } = options.state ?? createMemoryQuotaState();
  let closed = false;
  const clone = <T>(v: T): T => structuredClone(v);
  const open = (): void => {
    if (closed) throw providerClosed('quota');
  };

  const port = {
    provider: MEMORY_PROVIDER,
    async get(effectId) {
      open();
      return clone(entries.get(effectId));
    },
    async list(filter) {
      open();
      return clone(
        [...entries.values()].filter(
          (e) =>
            (filter.goal_id === undefined || e.goal_id === filter.goal_id) &&
            (filter.status === undefined || e.status === filter.status),
        ),
      );
    },
    async sumWritten(q) {
      open();
      const totals: Record<string, number> = {};
      let count = 0;
      for (const e of entries.values()) {
        if (!summed(e, q)) continue;
        totals[e.unit] = (totals[e.unit] ?? 0) + e.amount;
        count++;
      }
      return { totals, entries: count };
    },
    async commit(w) {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      const stored = entries.get(w.entry.effect_id);
      if (w.op === 'insert_spend') {
        if (stored !== undefined) return conflictOf('exists');
      } else {
        if (stored === undefined) return conflictOf('missing');
        if (stored.status !== 'written' || stored.request_digest !== w.entry.request_digest)
          return conflictOf('changed');
      }
      entries.set(w.entry.effect_id, clone(w.entry));
      return APPLIED;
    },
    close() {
      closed = true;
    },
  } satisfies QuotaPort;
  return port;
}
