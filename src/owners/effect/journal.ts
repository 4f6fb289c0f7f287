/**
 * The effect owner: the one place that decides effects — intents, dispatches, outcomes, holds,
 * reissues, resolutions — over any `EffectPort` (port.ts). Every write validates its request,
 * reads the rows it decides on, asks the rules (rules.ts) and commits the finished rows
 * conditionally on the effect's revision (../port.ts: decideAndCommit): a conflict re-reads and
 * re-decides, so a racing duplicate becomes the rules' readback and a racing dispatch or
 * settlement its typed refusal (`effect_dispatch_in_flight`, `effect_already_settled`,
 * `effect_state_changed`). An ambiguous commit is answered only after the readback shows it.
 * Timestamps come from the injected clock and are recorded facts only. It never dispatches.
 */
import { decideAndCommit, shows, type Decided } from '../port.js';
import type {
  AdoptEffectRequest,
  EffectJournal,
  EffectJournalOptions,
  EffectRecord,
  EffectTransition,
  EffectWriteResult,
  JsonValue,
  ReconcileQuery,
  ReconcileResult,
} from './contract.js';
import { effectNotFound } from './errors.js';
import { memoryEffectPort, type MemoryEffectPortOptions } from './memory.js';
import type { EffectPort, EffectRows, EffectWrite } from './port.js';
import { reconcileEffect } from './reconcile.js';
import {
  checkExpected,
  checkId,
  checkOutcome,
  checkReason,
  checkResolved,
  decideAdopt,
  decideDispatch,
  decideHold,
  decideRecordIntent,
  decideReissue,
  decideResolve,
  decideSettle,
  normalizeIntent,
  receiptText,
  type Change,
  type Decision,
} from './rules.js';
import { openSqliteEffectPort, type SqliteEffectPortOptions } from './sqlite.js';

type Step<T> = Decided<T, EffectWrite>;

/** The write that makes `c` true of the effect read at `rows` (none: a new effect), its answer and its readback. */
function changed<T>(
  port: EffectPort,
  rows: EffectRows | undefined,
  c: Change,
  at: string,
  answer: (e: EffectRecord) => T,
): Step<T> {
  const id = c.next.operation_id;
  const transition: EffectTransition = {
    operation_id: id,
    seq: (rows?.last_transition?.seq ?? 0) + 1,
    event: c.event,
    outcome: c.next.outcome,
    receipt: c.receipt === null ? null : (JSON.parse(c.receipt) as JsonValue),
    reason: c.reason,
    at,
  };
  const write: EffectWrite =
    rows?.effect === undefined
      ? { op: 'create_effect', effect: c.next, transition, enqueued_at: at }
      : { op: 'update_effect', effect: c.next, transition, outbox: c.outbox === 'add' ? { add: at } : c.outbox };
  return {
    result: answer(c.next),
    write,
    // Landed exactly when the effect and its latest history row are this write's after-image.
    landed: async () => {
      const back = await port.read({ operation_id: id });
      return shows(back.effect, c.next) && shows(back.last_transition, transition);
    },
  };
}

const record = (e: EffectRecord): EffectRecord => e;

/** `adopt` (see the contract): the bare intent recorded under the original identity, then the reconciled outcome, never a dispatch. */
async function adopt(
  journal: Pick<EffectJournal, 'recordIntent'>,
  run: <T>(decide: () => Promise<Step<T>>) => Promise<T>,
  rowsOf: (id: string) => Promise<EffectRows & { readonly effect: EffectRecord }>,
  written: (rows: EffectRows, d: Decision, at: string) => Step<EffectWriteResult>,
  now: () => string,
  request: AdoptEffectRequest,
): Promise<EffectWriteResult> {
  const o = checkOutcome(request.outcome);
  const text = receiptText(request.receipt);
  const attempt = Number.isSafeInteger(request.attempt) && request.attempt >= 0 ? request.attempt : 0;
  const { effect } = await journal.recordIntent(request);
  return run(async () => {
    const rows = await rowsOf(effect.operation_id);
    const at = now();
    return written(rows, decideAdopt(rows.effect, o, text, attempt, at), at);
  });
}

export function effectJournal(port: EffectPort, options: EffectJournalOptions = {}): EffectJournal {
  const now = () => (options.now ?? (() => new Date()))().toISOString();
  const run = <T>(decide: () => Promise<Step<T>>): Promise<T> =>
    decideAndCommit('effect', (w: EffectWrite) => port.commit(w), decide);

  const rowsOf = async (operationId: string): Promise<EffectRows & { readonly effect: EffectRecord }> => {
    const rows = await port.read({ operation_id: operationId });
    if (rows.effect === undefined) throw effectNotFound(operationId);
    return rows as EffectRows & { readonly effect: EffectRecord };
  };

  const written = (rows: EffectRows, d: Decision, at: string): Step<EffectWriteResult> =>
    'readback' in d
      ? { result: { effect: d.readback, replayed: true } }
      : changed(port, rows, d.change, at, (effect) => ({ effect, replayed: false }));
  const journal = {
    async recordIntent(request) {
      const n = normalizeIntent(request);
      return run(async () => {
        const rows = await port.read({ operation_id: n.operation_id, idempotency_key: n.idempotency_key });
        const at = now();
        return written(rows, decideRecordIntent(rows.effect, rows.key_holder, n, at), at);
      });
    },
    async beginDispatch(operationId) {
      const id = checkId(operationId, 'operation_id');
      return run(async () => {
        const rows = await rowsOf(id);
        const at = now();
        return changed(port, rows, decideDispatch(rows.effect, rows.queued !== undefined, at), at, record);
      });
    },
    async settle(operationId, outcome, receipt) {
      const id = checkId(operationId, 'operation_id');
      const o = checkOutcome(outcome);
      const text = receiptText(receipt);
      return run(async () => {
        const rows = await rowsOf(id);
        const at = now();
        return written(rows, decideSettle(rows.effect, o, text, at), at);
      });
    },
    async resolve(operationId, expected, outcome, receipt) {
      const id = checkId(operationId, 'operation_id');
      const exp = checkExpected(expected);
      const o = checkResolved(outcome);
      const text = receiptText(receipt);
      return run(async () => {
        const rows = await rowsOf(id);
        const at = now();
        return written(rows, decideResolve(rows.effect, exp, o, text, at), at);
      });
    },
    async holdUnknown(operationId, reason) {
      const id = checkId(operationId, 'operation_id');
      const r = checkReason(reason);
      return run(async () => {
        const rows = await rowsOf(id);
        return changed(port, rows, decideHold(rows.effect, r), now(), record);
      });
    },
    async reissue(operationId) {
      const id = checkId(operationId, 'operation_id');
      return run(async () => {
        const rows = await rowsOf(id);
        return changed(port, rows, decideReissue(rows.effect), now(), record);
      });
    },
    adopt: (request): Promise<EffectWriteResult> => adopt(journal, run, rowsOf, written, now, request),
    reconcile: (operationId: string, query: ReconcileQuery): Promise<ReconcileResult> =>
      reconcileEffect(journal, operationId, query),
    get: async (id) => (typeof id === 'string' ? (await port.read({ operation_id: id })).effect : undefined),
    getByIdempotencyKey: async (key) =>
      typeof key === 'string' ? (await port.read({ idempotency_key: key })).key_holder : undefined,
    list: (filter = {}) => port.listEffects(filter),
    outbox: () => port.listOutbox(),
    holds: () => port.listHolds(),
    history: (id) => port.listHistory(id),
    close: () => port.close(),
  } satisfies EffectJournal;
  return journal;
}

/** The effect owner over the in-memory reference port. */
export const memoryEffectJournal = (options: EffectJournalOptions & MemoryEffectPortOptions = {}): EffectJournal =>
  effectJournal(memoryEffectPort(options.state ? { state: options.state } : {}), options);

export interface SqliteEffectJournalOptions extends EffectJournalOptions, SqliteEffectPortOptions {}

/** The effect owner over `effects.db` at `path`. */
export const openSqliteEffectJournal = (path: string, options: SqliteEffectJournalOptions = {}): EffectJournal =>
  effectJournal(openSqliteEffectPort(path, options.synchronous ? { synchronous: options.synchronous } : {}), options);
