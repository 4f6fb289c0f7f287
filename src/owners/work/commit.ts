/**
 * The work owner's one commit loop, shared by every write (todos.ts, leases.ts, handoff.ts): check
 * the request, then per attempt load the head → refuse a stale fence → replay a known operation id
 * → check the authority precondition → plan (a synchronous decision over the loaded projection) →
 * conditional commit of events, next projection and receipt together. A conflict re-loads and
 * re-decides (a racing duplicate becomes its replay); an ambiguous commit is resolved by receipt
 * readback or answered `store_outcome_unproved` (also when the readback itself fails). The first attempt skips the load when the owner
 * committed the head itself, and the receipt read (see `execute`): same answers, fewer reads. It
 * reads the store only through the Promise-based `WorkProvider`, and it is the only place the owner
 * commits.
 */
import { canonicalJson, conflict, internal, rejected, sha256Hex } from '../../core/index.js';
import { outcomeUnproved } from '../port.js';
import { operationIdentityMismatch } from '../refusals.js';
import type { JsonValue, WorkCommitResult, WorkLoad, WorkProvider, WorkStoreIdentity } from './contract.js';
import { fenceOf } from './encoding.js';
import { protocolViolation, workStoreMoved } from './errors.js';
import {
  LEASE_OPERATIONS,
  MAX_ATTEMPTS,
  OPERATION_ID,
  REQUEST_SCHEMA,
  defined,
  fenceToken,
  invalid,
  nat,
} from './inputs.js';
import {
  applyTransaction,
  copyProjection,
  initialProjection,
  leaseAuthorization,
  projectionProblem,
  receiptProblem,
  toJson,
  RECEIPT_SCHEMA,
  type FenceToken,
  type HandoffMode,
  type RecoveredFrom,
  type Todo,
  type WorkEvent,
  type WorkOperation,
  type WorkProjection,
  type WorkReceipt,
} from './model.js';
import type { WorkOperationResult, WriteOptions } from './api.js';

/** What an owner instance works with: its provider, its clock and the store identity read at open. */
export interface WorkCore {
  readonly provider: WorkProvider;
  readonly clock: () => Date;
  readonly identity: WorkStoreIdentity;
  readonly goalId: string;
  /** The head this owner's last write committed (a private copy): its next write decides over it first. */
  head?: { readonly p: WorkProjection; readonly head: Head } | undefined;
}

/** A write's decision: the events to commit and what the receipt reports. */
export interface Plan {
  readonly events: WorkEvent[];
  readonly todo?: Todo;
  /** `update_todos` only: every Todo the batch changed, in request order. */
  readonly todos?: readonly Todo[];
  readonly handoff_mode?: HandoffMode;
  readonly fence?: FenceToken;
  /** `adopt_recovered_state` only: the source the receipt names. */
  readonly recovery?: RecoveredFrom;
}

export interface PlanContext {
  readonly p: WorkProjection;
  readonly now: Date;
  readonly at: string;
  readonly operationId: string;
  readonly storeIdentity: string;
}

export function projectionOf(core: WorkCore, loaded: WorkLoad): WorkProjection {
  if (loaded.head === null) return initialProjection(core.goalId);
  const problem = projectionProblem(loaded.head, core.goalId);
  if (problem) {
    throw rejected('work_head_invalid', `The work head cannot be used: ${problem}.`, {
      nextAction: 'do not write to this store; inspect a copy with the recovery read side',
    });
  }
  return loaded.head as unknown as WorkProjection;
}

export function receiptOf(json: unknown): WorkReceipt {
  const problem = receiptProblem(json);
  if (problem)
    throw rejected('work_receipt_invalid', `A stored receipt cannot be used: ${problem}.`, {
      nextAction: 'inspect a copy with the recovery read side',
    });
  return json as WorkReceipt;
}

export async function readProjection(core: WorkCore): Promise<{ p: WorkProjection; loaded: WorkLoad }> {
  const loaded = await core.provider.load();
  return { p: projectionOf(core, loaded), loaded };
}

/** Where a write decides from: the head's projection, cursor and revision. */
interface Head {
  readonly cursor: number;
  readonly provider_revision: string;
}

async function loadHead(core: WorkCore): Promise<{ p: WorkProjection; head: Head }> {
  const { p, loaded } = await readProjection(core);
  return { p, head: loaded };
}

const writerFenced = (token: FenceToken, currentEpoch: number | null) =>
  conflict('writer_fenced', 'This writer’s fence token is not the current one; another writer took over.', {
    nextAction: 'stop writing; re-engage the fence only if this process is meant to take over',
    details: { presented_epoch: token.epoch, current_epoch: currentEpoch },
  });

const isWriterFenced = (e: unknown): boolean => (e as { code?: unknown })?.code === 'writer_fenced';

/** A store whose work moved takes no write (a write that landed before the move still replays its receipt). */
function checkFence(p: WorkProjection, token: FenceToken | undefined): void {
  if (p.moved_to !== undefined) throw workStoreMoved(p.goal_id, p.moved_to);
  if (token === undefined) return;
  if (p.fence === null || p.fence.fence_id !== token.fence_id || p.fence.epoch !== token.epoch)
    throw writerFenced(token, p.fence?.epoch ?? null);
}

/** What a lease receipt is worth now (a historical receipt never grants authority). */
function authorizationOf(
  core: WorkCore,
  receipt: WorkReceipt,
  p: WorkProjection,
): WorkOperationResult['authorization_status'] {
  if (receipt.lease === null) return undefined;
  const current = p.todos.find((t) => t.todo_id === receipt.todo_id)?.lease ?? null;
  if (
    current === null ||
    current.lease_id !== receipt.lease.lease_id ||
    current.lease_epoch !== receipt.lease.lease_epoch
  )
    return 'superseded';
  const auth = leaseAuthorization(current, core.clock());
  return auth === 'none' ? 'superseded' : auth;
}

function result(
  core: WorkCore,
  kind: WorkOperationResult['result'],
  receipt: WorkReceipt,
  cursor: number,
  revision: string,
  p: WorkProjection,
): WorkOperationResult {
  const authorization = authorizationOf(core, receipt, p);
  return {
    result: kind,
    receipt,
    cursor,
    provider_revision: revision,
    observed_authority_revision: p.authority_revision,
    ...(authorization === undefined ? {} : { authorization_status: authorization }),
  };
}

async function replay(
  core: WorkCore,
  operationId: string,
  digest: string,
  p: WorkProjection,
): Promise<WorkOperationResult | undefined> {
  const prior = await core.provider.readReceipt(operationId);
  if (prior === undefined) return undefined;
  if (prior.request_digest !== digest) throw operationIdentityMismatch(operationId);
  return result(core, 'already_applied', receiptOf(prior.receipt), prior.cursor, prior.provider_revision, p);
}

/** The SHA-256 of the canonical semantic request: operation, Goal, parameters — not the operation id, not the fence token. */
const requestDigest = (
  core: WorkCore,
  operation: WorkOperation,
  write: WriteOptions,
  params: Record<string, JsonValue>,
): string =>
  sha256Hex(
    canonicalJson({
      schema_version: REQUEST_SCHEMA,
      goal_id: core.goalId,
      operation,
      params: defined({ ...params, expected_authority_revision: write.expected_authority_revision }),
    }),
  );

interface Attempt {
  readonly operation: WorkOperation;
  readonly operationId: string;
  readonly digest: string;
  readonly fence: FenceToken | undefined;
}

function receiptFor(
  core: WorkCore,
  a: Attempt,
  planned: Plan,
  next: WorkProjection,
  cursor: number,
  at: string,
): WorkReceipt {
  return {
    schema_version: RECEIPT_SCHEMA,
    result: 'applied',
    operation_id: a.operationId,
    operation: a.operation,
    request_digest: a.digest,
    goal_id: core.goalId,
    store_identity: core.identity.store_identity,
    authority_revision: next.authority_revision,
    cursor,
    committed_at: at,
    todo_id: planned.todo?.todo_id ?? null,
    todo_revision: planned.todo?.todo_revision ?? null,
    todo: planned.todo ?? null,
    lease: LEASE_OPERATIONS.has(a.operation) ? (planned.todo?.lease ?? null) : null,
    handoff_mode: planned.handoff_mode ?? null,
    fence: planned.fence ?? null,
    ...(planned.todos ? { todos: planned.todos } : {}),
    ...(planned.recovery ? { recovery: planned.recovery } : {}),
  };
}

/** The answer to a commit outcome; `undefined` for a conflict (load and decide again). */
async function settle(
  core: WorkCore,
  a: Attempt,
  r: WorkCommitResult,
  receipt: WorkReceipt,
  next: WorkProjection,
): Promise<WorkOperationResult | undefined> {
  switch (r.status) {
    case 'applied':
      if (r.cursor !== receipt.cursor) {
        throw protocolViolation(`the provider committed at cursor ${r.cursor}, expected ${receipt.cursor}`, {
          cursor: r.cursor,
          expected_cursor: receipt.cursor,
        });
      }
      return result(core, 'applied', receipt, r.cursor, r.provider_revision, next);
    case 'conflict':
      // The store itself refused a stale fence token (fenced_commit), whatever this process loaded.
      if (r.reason === 'writer_fenced' && a.fence !== undefined)
        throw writerFenced(a.fence, fenceOf(await core.provider.load().then((l) => l.head))?.epoch ?? null);
      return undefined; // another writer moved the head or committed this id: re-read and re-decide (or replay)
    case 'ambiguous': {
      // The store's readback decides: the receipt when it shows this commit; when it does not — or the
      // store cannot be read now — the outcome is unproved, never a generic failure: the same request
      // under the same operation id applies at most once.
      let readback: Awaited<ReturnType<typeof core.provider.readReceipt>>;
      try {
        readback = await core.provider.readReceipt(a.operationId);
      } catch {
        throw outcomeUnproved('work');
      }
      if (readback !== undefined && readback.request_digest === a.digest) {
        return result(
          core,
          'applied',
          receiptOf(readback.receipt),
          readback.cursor,
          readback.provider_revision,
          projectionOf(core, await core.provider.load()),
        );
      }
      throw outcomeUnproved('work');
    }
    case 'failed':
      throw internal('work_commit_failed', `The work store refused the commit (${r.code}).`, {
        nextAction: 'retry with the same operation id',
        details: { operation_id: a.operationId, provider_code: r.code },
      });
  }
}

/** The authority precondition, then the plan and its next projection and receipt, over `p` as loaded at `head`. */
function decide(
  core: WorkCore,
  a: Attempt,
  write: WriteOptions,
  plan: (ctx: PlanContext) => Plan,
  p: WorkProjection,
  head: Head,
) {
  if (write.expected_authority_revision !== undefined && write.expected_authority_revision !== p.authority_revision) {
    throw conflict('authority_revision_mismatch', 'The Goal’s work changed since the caller read it.', {
      nextAction: 'read the work again and decide anew',
      details: {
        expected_authority_revision: write.expected_authority_revision,
        authority_revision: p.authority_revision,
      },
    });
  }
  const now = core.clock();
  const at = now.toISOString();
  const planned = plan({ p, now, at, operationId: a.operationId, storeIdentity: core.identity.store_identity });
  const next = applyTransaction(p, planned.events, at);
  return { planned, next, receipt: receiptFor(core, a, planned, next, head.cursor + 1, at) };
}

/**
 * Runs one write: `plan` decides over the head, the loop commits it (see the header). The first
 * attempt is optimistic: it decides over the head this owner itself last committed, when it has
 * one (the commit's revision check refuses it if another writer moved the head since), and it does
 * not read the receipt first — the provider refuses a known operation id atomically
 * (`operation_id_exists`), and the replay is read then. A refusal decided over a remembered head is
 * decided again over a fresh load; a refusal over a fresh load first asks whether the operation is
 * a replay. The answers are those of a loop that loads and reads the receipt every time.
 */
export async function execute(
  core: WorkCore,
  operation: WorkOperation,
  write: WriteOptions,
  params: Record<string, JsonValue>,
  plan: (ctx: PlanContext) => Plan,
): Promise<WorkOperationResult> {
  if (typeof write.operation_id !== 'string' || !OPERATION_ID.test(write.operation_id)) {
    throw invalid('operation_id', '1–200 characters of A–Z a–z 0–9 . _ : @ / + = -, starting with a letter or digit');
  }
  const fence = fenceToken(write.fence);
  if (write.expected_authority_revision !== undefined)
    nat('expected_authority_revision', write.expected_authority_revision);
  const a: Attempt = {
    operation,
    operationId: write.operation_id,
    digest: requestDigest(core, operation, write, params),
    fence,
  };
  let optimistic = true;
  for (let attempt = 0; attempt < MAX_ATTEMPTS;) {
    const remembered = optimistic ? core.head : undefined;
    core.head = undefined;
    const { p, head } = remembered ?? (await loadHead(core));
    let d: ReturnType<typeof decide>;
    try {
      checkFence(p, fence);
      if (!optimistic) {
        const replayed = await replay(core, a.operationId, a.digest, p);
        if (replayed) return replayed;
      }
      d = decide(core, a, write, plan, p, head);
    } catch (e) {
      if (remembered) continue; // decided over a head that may be stale: decide again over a fresh one
      const replayed = optimistic && !isWriterFenced(e) ? await replay(core, a.operationId, a.digest, p) : undefined;
      if (replayed) return replayed;
      throw e;
    }
    const r = await core.provider.commit({
      expected_provider_revision: head.provider_revision,
      operation_id: a.operationId,
      request_digest: a.digest,
      events: d.planned.events.map(toJson),
      next_projection: toJson(d.next),
      receipt: toJson(d.receipt),
      ...(fence === undefined ? {} : { writer_fence: { fence_id: fence.fence_id, epoch: fence.epoch } }),
    });
    const answer = await settle(core, a, r, d.receipt, d.next);
    if (answer) {
      if (r.status === 'applied')
        core.head = { p: copyProjection(d.next), head: { cursor: r.cursor, provider_revision: r.provider_revision } };
      return answer;
    }
    if (!remembered) attempt++;
    optimistic = false;
  }
  throw conflict(
    'work_commit_contention',
    'Other writers kept changing the Goal’s work; the operation was not applied.',
    {
      nextAction: 'retry with the same operation id',
      details: { operation_id: a.operationId, attempts: MAX_ATTEMPTS },
    },
  );
}
