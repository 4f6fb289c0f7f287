/**
 * Reads of the work owner: the view, Todos, receipts and committed history, each from one
 * Promise-based provider read. History is checked as it is read — a page with a cursor gap or an
 * event the owner cannot read is refused (`provider_protocol_violation`, `work_event_invalid`),
 * never passed on. Reads decide nothing and grant no authority.
 */
import { eventsProblem, type WorkEvent } from './model.js';
import { readProjection, receiptOf, type WorkCore } from './commit.js';
import { protocolViolation, workEventInvalid } from './errors.js';
import { HISTORY_PAGE } from './inputs.js';
import type { ReceiptReadback, WorkHistoryPage, WorkTransaction, WorkView } from './api.js';

export async function view(core: WorkCore): Promise<WorkView> {
  const { p, loaded } = await readProjection(core);
  return {
    goal_id: core.goalId,
    store_identity: core.identity.store_identity,
    incarnation: core.identity.incarnation,
    authority_revision: p.authority_revision,
    cursor: loaded.cursor,
    provider_revision: loaded.provider_revision,
    handoff_mode: p.handoff_mode,
    fence_epoch: p.fence?.epoch ?? null,
    todos: p.todos,
    ...(p.moved_to === undefined ? {} : { moved_to: p.moved_to }),
    delivery_incarnation: (core.provider.restoreGeneration ?? 0) + (p.installation_base ?? 0),
  };
}

export async function readReceipt(core: WorkCore, operationId: string): Promise<ReceiptReadback | undefined> {
  const r = await core.provider.readReceipt(operationId);
  return r === undefined
    ? undefined
    : { receipt: receiptOf(r.receipt), cursor: r.cursor, provider_revision: r.provider_revision };
}

function toTransaction(t: {
  cursor: number;
  provider_revision: string;
  operation_id: string;
  request_digest: string;
  events: readonly unknown[];
  receipt: unknown;
}): WorkTransaction {
  const problem = eventsProblem(t.events);
  if (problem) throw workEventInvalid(`transaction ${t.cursor}: ${problem}`, { cursor: t.cursor });
  return {
    cursor: t.cursor,
    provider_revision: t.provider_revision,
    operation_id: t.operation_id,
    request_digest: t.request_digest,
    events: t.events as WorkEvent[],
    receipt: receiptOf(t.receipt),
  };
}

const gap = (cursor: number) => protocolViolation(`the history has a gap at cursor ${cursor}`, { cursor });

export async function history(core: WorkCore, afterCursor: number, limit: number): Promise<WorkHistoryPage> {
  const page = await core.provider.scanCommitted(afterCursor, limit);
  let expected = afterCursor + 1;
  const transactions = page.transactions.map((t) => {
    if (t.cursor !== expected) throw gap(expected);
    expected++;
    return toTransaction(t);
  });
  return { transactions, next_cursor: page.next_cursor, has_more: page.has_more };
}

/** Every transaction after `afterCursor` up to (at least) the head seen when iteration starts; a shortfall is a gap. */
export async function* iterateHistory(
  core: WorkCore,
  afterCursor = 0,
  pageSize = HISTORY_PAGE,
): AsyncGenerator<WorkTransaction, void, undefined> {
  const floor = (await core.provider.load()).cursor;
  let after = afterCursor;
  for (;;) {
    const page = await history(core, after, pageSize);
    yield* page.transactions;
    after = page.next_cursor;
    if (!page.has_more) break;
  }
  if (after < floor) throw gap(after + 1);
}
