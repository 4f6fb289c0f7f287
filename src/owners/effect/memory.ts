/**
 * In-memory reference effect port: the port contract without a disk, for engine and owner tests.
 * Its rows live in a plain `MemoryEffectState` in the shape effects.db stores them (JSON as
 * canonical text) and are decoded by the same decoders on every read — so reads are copies, and a
 * damaged row is `effect_store_corrupt` here as it is in SQLite. A test can "restart" by opening a
 * new port on the same state. It checks each write's precondition and stores rows; it decides
 * nothing about effects (journal.ts does).
 */
import { canonicalJson } from '../../core/index.js';
import { MEMORY_PROVIDER, RowInvalid } from '../../store/index.js';
import { APPLIED, conflictOf, providerClosed, storeCorrupt, type CommitResult } from '../port.js';
import type { EffectRecord, EffectTransition, OutboxEntry } from './contract.js';
import type { EffectPort, EffectRows, EffectWrite } from './port.js';
import { decodeEffect, decodeTransition, type EffectRow, type HistoryRow } from './schema.js';

export interface MemoryEffectState {
  /** Effect rows by operation id, in creation order. */
  readonly effects: Map<string, EffectRow>;
  /** Idempotency key → operation id. */
  readonly keys: Map<string, string>;
  /** Operation id → enqueued_at, in enqueue order. */
  readonly outbox: Map<string, string>;
  /** History rows by operation id, in seq order. */
  readonly history: Map<string, HistoryRow[]>;
}

export const createMemoryEffectState = (): MemoryEffectState => ({
  effects: new Map(),
  keys: new Map(),
  outbox: new Map(),
  history: new Map(),
});

export interface MemoryEffectPortOptions {
  /** Open on an existing state (a restart); a fresh state otherwise. */
  readonly state?: MemoryEffectState;
}

const jsonText = (v: unknown): string | null => (v === null ? null : canonicalJson(v));
const effectRow = (e: EffectRecord): EffectRow => ({ ...e, receipt: jsonText(e.receipt) });
const historyRow = (t: EffectTransition): HistoryRow => ({ ...t, receipt: jsonText(t.receipt) });
/** The state fields `update_effect` writes; the identity fields stay as created. */
const stateOf = (e: EffectRecord) => ({
  outcome: e.outcome,
  receipt: jsonText(e.receipt),
  attempt: e.attempt,
  dispatched_at: e.dispatched_at,
  hold: e.hold,
  reconcile_attempts: e.reconcile_attempts,
  settled_at: e.settled_at,
});

/** Lands `w` in `state` when its precondition holds (port.ts), else the conflict; nothing is written on a conflict. */
function apply(state: MemoryEffectState, w: EffectWrite): CommitResult {
  const id = w.effect.operation_id;
  if (w.op === 'create_effect') {
    if (state.effects.has(id) || state.keys.has(w.effect.idempotency_key)) return conflictOf('exists');
    state.effects.set(id, effectRow(w.effect));
    state.keys.set(w.effect.idempotency_key, id);
    state.outbox.set(id, w.enqueued_at);
    state.history.set(id, [historyRow(w.transition)]);
    return APPLIED;
  }
  const row = state.effects.get(id);
  if (row === undefined) return conflictOf('missing');
  if ((state.history.get(id) ?? []).length !== w.transition.seq - 1) return conflictOf('changed');
  state.effects.set(id, { ...row, ...stateOf(w.effect) });
  if (w.outbox !== 'keep') state.outbox.delete(id);
  if (w.outbox !== 'keep' && w.outbox !== 'remove') state.outbox.set(id, w.outbox.add);
  state.history.get(id)!.push(historyRow(w.transition));
  return APPLIED;
}

/** A stored row decoded; a damaged one is `effect_store_corrupt`, as in SQLite. */
const decoded = <T>(fn: () => T): T => {
  try {
    return fn();
  } catch (e) {
    if (e instanceof RowInvalid) throw storeCorrupt('effect', 'effects.db', e);
    throw e;
  }
};

/** The effect stored under operation id `id` (none when `id` is undefined), decoded. */
const effectOf = (state: MemoryEffectState, id: string | undefined): EffectRecord | undefined => {
  const row = id === undefined ? undefined : state.effects.get(id);
  return row === undefined ? undefined : decoded(() => decodeEffect(row));
};

/** The transitions of effect `id`, decoded, in seq order. */
const historyOf = (state: MemoryEffectState, id: string): EffectTransition[] =>
  (state.history.get(id) ?? []).map((r) => decoded(() => decodeTransition(r)));

/** The outbox entry of effect `id`, enqueued at `enqueued_at`. */
const queuedOf = (state: MemoryEffectState, id: string, enqueued_at: string): OutboxEntry => {
  const e = effectOf(state, id)!;
  return {
    operation_id: id,
    idempotency_key: e.idempotency_key,
    goal_id: e.goal_id,
    kind: e.kind,
    target: e.target,
    enqueued_at,
  };
};

export function memoryEffectPort(options: MemoryEffectPortOptions = {}): EffectPort {
  const state = options.state ?? createMemoryEffectState();
  let closed = false;
  const open = (): void => {
    if (closed) throw providerClosed('effect');
  };
  const port = {
    provider: MEMORY_PROVIDER,
    async read(q) {
      open();
      const effect = effectOf(state, q.operation_id);
      const enqueued = effect === undefined ? undefined : state.outbox.get(effect.operation_id);
      const last = effect === undefined ? undefined : historyOf(state, effect.operation_id).at(-1);
      const holder = effectOf(state, q.idempotency_key === undefined ? undefined : state.keys.get(q.idempotency_key));
      const rows: EffectRows = {
        ...(effect ? { effect } : {}),
        ...(last ? { last_transition: last } : {}),
        ...(enqueued !== undefined ? { queued: queuedOf(state, effect!.operation_id, enqueued) } : {}),
        ...(holder ? { key_holder: holder } : {}),
      };
      return rows;
    },
    async listEffects(filter = {}) {
      open();
      return [...state.effects.keys()]
        .map((id) => effectOf(state, id)!)
        .filter(
          (e) =>
            (filter.goal_id === undefined || e.goal_id === filter.goal_id) &&
            (filter.outcome === undefined || e.outcome === filter.outcome),
        );
    },
    async listOutbox() {
      open();
      return [...state.outbox.entries()].map(([id, at]) => queuedOf(state, id, at));
    },
    async listHolds() {
      open();
      return [...state.effects.keys()]
        .map((id) => effectOf(state, id)!)
        .filter((e) => e.outcome === 'unknown' || (e.outcome === 'pending' && e.dispatched_at !== null));
    },
    async listHistory(operationId) {
      open();
      return historyOf(state, operationId);
    },
    async commit(write) {
      if (closed) return { status: 'failed', code: 'provider_closed' };
      return apply(state, write);
    },
    close() {
      closed = true;
    },
  } satisfies EffectPort;
  return port;
}
