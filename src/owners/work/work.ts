/**
 * The work owner: the one decision owner of a Goal's canonical work — Todos, leases, the writer
 * fence, operation receipts and committed history — on top of a storage-only `WorkProvider`.
 *
 * Every write is an operation with an idempotency key (`operation_id`). Its request digest is the
 * SHA-256 of the canonical semantic request (operation, Goal, parameters — not the operation id,
 * not the fence token). The receipt commits in the same provider transaction as the state it
 * describes. Same id + same digest returns the ORIGINAL receipt (`already_applied`) and applies
 * nothing; same id + another digest is `operation_identity_mismatch`. Both hold across restarts
 * because the provider keeps receipts durably.
 *
 * A write carrying a fence token that is not the current one is refused (`writer_fenced`) before
 * anything else, replays included: a fenced writer learns nothing and changes nothing. The clock is
 * injected; lease expiry is decided only against it (an expiry equal to "now" is expired).
 * Never owns anything but work state; never touches another owner's store.
 *
 * `openWork` is one long factory on purpose: every operation is a plan over the same loaded
 * projection, replay check and conditional commit, and those are closures over one provider and
 * clock; splitting it would pass that state around instead. Its requests and results are in
 * api.ts, the input checks in inputs.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { canonicalJson, sha256Hex, conflict, internal, notFound, rejected } from '../../core/index.js';
import { goalNotFound } from '../goal/index.js';
import { LAYOUT } from '../layout.js';
import { operationIdentityMismatch } from '../refusals.js';
import type { JsonValue, WorkLoad } from './contract.js';
import {
  applyTransaction,
  eventsProblem,
  initialProjection,
  isTerminal,
  leaseAuthorization,
  leaseExpired,
  projectionProblem,
  receiptProblem,
  toJson,
  HANDOFF_MODES,
  RECEIPT_SCHEMA,
  type FenceToken,
  type HandoffMode,
  type Lease,
  type Todo,
  type TodoChange,
  type TodoStatus,
  type WorkEvent,
  type WorkOperation,
  type WorkProjection,
  type WorkReceipt,
} from './model.js';
import { exportRetainedPrefix } from './retained-prefix.js';
import { openSqliteWorkProvider } from './sqlite.js';
import { leaseNotHolder, leaseVersionMismatch, protocolViolation, workEventInvalid } from './errors.js';

import type {
  LeaseProof,
  WorkHistoryPage,
  WorkOperationResult,
  WorkOwner,
  WorkOwnerOptions,
  WorkTransaction,
  WriteOptions,
} from './api.js';
import {
  OPERATION_ID,
  MAX_TITLE,
  MAX_TEXT,
  MAX_ATTEMPTS,
  HISTORY_PAGE,
  REQUEST_SCHEMA,
  LEASE_OPERATIONS,
  invalid,
  text,
  nat,
  todoId,
  status,
  priority,
  ttl,
  note,
  actor,
  leaseProof,
  fenceToken,
  defined,
} from './inputs.js';

// ---------------------------------------------------------------------------------------------
// Owner

interface Plan {
  readonly events: WorkEvent[];
  readonly todo?: Todo;
  readonly handoff_mode?: HandoffMode;
  readonly fence?: FenceToken;
}

interface PlanContext {
  readonly p: WorkProjection;
  readonly now: Date;
  readonly at: string;
  readonly operationId: string;
  readonly storeIdentity: string;
}

export function openWork(options: WorkOwnerOptions): WorkOwner {
  const provider = options.provider;
  const clock = options.clock ?? (() => new Date());
  const identity = provider.storeIdentity();
  const goalId = identity.goal_id;

  const projectionOf = (loaded: WorkLoad): WorkProjection => {
    if (loaded.head === null) return initialProjection(goalId);
    const problem = projectionProblem(loaded.head, goalId);
    if (problem) {
      throw rejected('work_head_invalid', `The work head cannot be used: ${problem}.`, { nextAction: 'do not write to this store; inspect a copy with the recovery read side' });
    }
    return loaded.head as unknown as WorkProjection;
  };

  const receiptOf = (json: unknown): WorkReceipt => {
    const problem = receiptProblem(json);
    if (problem) throw rejected('work_receipt_invalid', `A stored receipt cannot be used: ${problem}.`, { nextAction: 'inspect a copy with the recovery read side' });
    return json as WorkReceipt;
  };

  const checkFence = (p: WorkProjection, token: FenceToken | undefined): void => {
    if (token === undefined) return;
    if (p.fence === null || p.fence.fence_id !== token.fence_id || p.fence.epoch !== token.epoch) {
      throw conflict('writer_fenced', 'This writer’s fence token is not the current one; another writer took over.', {
        nextAction: 'stop writing; re-engage the fence only if this process is meant to take over',
        details: { presented_epoch: token.epoch, current_epoch: p.fence?.epoch ?? null },
      });
    }
  };

  const authorizationOf = (receipt: WorkReceipt, p: WorkProjection): WorkOperationResult['authorization_status'] => {
    if (receipt.lease === null) return undefined;
    const current = p.todos.find((t) => t.todo_id === receipt.todo_id)?.lease ?? null;
    if (current === null || current.lease_id !== receipt.lease.lease_id || current.lease_epoch !== receipt.lease.lease_epoch) return 'superseded';
    const auth = leaseAuthorization(current, clock());
    return auth === 'none' ? 'superseded' : auth;
  };

  const result = (kind: WorkOperationResult['result'], receipt: WorkReceipt, cursor: number, revision: string, p: WorkProjection): WorkOperationResult => {
    const authorization = authorizationOf(receipt, p);
    return {
      result: kind,
      receipt,
      cursor,
      provider_revision: revision,
      observed_authority_revision: p.authority_revision,
      ...(authorization === undefined ? {} : { authorization_status: authorization }),
    };
  };

  const replay = (operationId: string, digest: string, p: WorkProjection): WorkOperationResult | undefined => {
    const prior = provider.readReceipt(operationId);
    if (prior === undefined) return undefined;
    if (prior.request_digest !== digest) {
      throw operationIdentityMismatch(operationId);
    }
    return result('already_applied', receiptOf(prior.receipt), prior.cursor, prior.provider_revision, p);
  };

  function execute(operation: WorkOperation, write: WriteOptions, params: Record<string, JsonValue>, plan: (ctx: PlanContext) => Plan): WorkOperationResult {
    if (typeof write.operation_id !== 'string' || !OPERATION_ID.test(write.operation_id)) {
      throw invalid('operation_id', '1–200 characters of A–Z a–z 0–9 . _ : @ / + = -, starting with a letter or digit');
    }
    const operationId = write.operation_id;
    const fence = fenceToken(write.fence);
    if (write.expected_authority_revision !== undefined) nat('expected_authority_revision', write.expected_authority_revision);
    const digest = sha256Hex(
      canonicalJson({ schema_version: REQUEST_SCHEMA, goal_id: goalId, operation, params: defined({ ...params, expected_authority_revision: write.expected_authority_revision }) }),
    );
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const loaded = provider.load();
      const p = projectionOf(loaded);
      checkFence(p, fence);
      const replayed = replay(operationId, digest, p);
      if (replayed) return replayed;
      if (write.expected_authority_revision !== undefined && write.expected_authority_revision !== p.authority_revision) {
        throw conflict('authority_revision_mismatch', 'The Goal’s work changed since the caller read it.', {
          nextAction: 'read the work again and decide anew',
          details: { expected_authority_revision: write.expected_authority_revision, authority_revision: p.authority_revision },
        });
      }
      const now = clock();
      const at = now.toISOString();
      const planned = plan({ p, now, at, operationId, storeIdentity: identity.store_identity });
      const next = applyTransaction(p, planned.events, at);
      const cursor = loaded.cursor + 1;
      const receipt: WorkReceipt = {
        schema_version: RECEIPT_SCHEMA,
        result: 'applied',
        operation_id: operationId,
        operation,
        request_digest: digest,
        goal_id: goalId,
        store_identity: identity.store_identity,
        authority_revision: next.authority_revision,
        cursor,
        committed_at: at,
        todo_id: planned.todo?.todo_id ?? null,
        todo_revision: planned.todo?.todo_revision ?? null,
        todo: planned.todo ?? null,
        lease: LEASE_OPERATIONS.has(operation) ? (planned.todo?.lease ?? null) : null,
        handoff_mode: planned.handoff_mode ?? null,
        fence: planned.fence ?? null,
      };
      const r = provider.commit({
        expected_provider_revision: loaded.provider_revision,
        operation_id: operationId,
        request_digest: digest,
        events: planned.events.map(toJson),
        next_projection: toJson(next),
        receipt: toJson(receipt),
      });
      switch (r.status) {
        case 'applied':
          if (r.cursor !== cursor) {
            throw protocolViolation(`the provider committed at cursor ${r.cursor}, expected ${cursor}`, { cursor: r.cursor, expected_cursor: cursor });
          }
          return result('applied', receipt, r.cursor, r.provider_revision, next);
        case 'conflict':
          continue; // another writer moved the head or committed this id: re-read and re-decide (or replay)
        case 'ambiguous': {
          const readback = provider.readReceipt(operationId);
          if (readback !== undefined && readback.request_digest === digest) {
            return result('applied', receiptOf(readback.receipt), readback.cursor, readback.provider_revision, projectionOf(provider.load()));
          }
          throw internal('provider_outcome_unproved', `The commit of operation ${operationId} may or may not have landed.`, {
            nextAction: 'retry with the same operation id (it applies at most once)',
            details: { operation_id: operationId },
          });
        }
        case 'failed':
          throw internal('work_commit_failed', `The work store refused the commit (${r.code}).`, {
            nextAction: 'retry with the same operation id',
            details: { operation_id: operationId, provider_code: r.code },
          });
      }
    }
    throw conflict('work_commit_contention', 'Other writers kept changing the Goal’s work; the operation was not applied.', {
      nextAction: 'retry with the same operation id',
      details: { operation_id: operationId, attempts: MAX_ATTEMPTS },
    });
  }

  const findTodo = (p: WorkProjection, id: string): Todo => {
    const t = p.todos.find((x) => x.todo_id === id);
    if (!t) throw notFound('todo_not_found', `Todo ${id} does not exist in this Goal.`, { nextAction: `list the Goal’s Todos: loopx todo list --goal ${goalId}`, details: { todo_id: id } });
    return t;
  };

  const refuseTerminal = (t: Todo): void => {
    if (isTerminal(t.status)) {
      throw rejected('todo_terminal', `Todo ${t.todo_id} is ${t.status}.`, { nextAction: 'reopen the Todo first', details: { todo_id: t.todo_id, status: t.status } });
    }
  };

  const requireHardLease = (p: WorkProjection): void => {
    if (p.handoff_mode !== 'hard_lease') {
      throw rejected('handoff_mode_soft_claim', 'This Goal uses soft claims; leases are not acquired, renewed or transferred in soft_claim mode.', {
        nextAction: 'set the handoff mode to hard_lease, or use claim/unclaim',
      });
    }
  };

  /**
   * The caller must hold the Todo's lease. `use`: a proof is required and the lease must be active
   * and unexpired (hard_lease completion, claim change). `maintain`: as `use` with the exact
   * version. `release`: as `maintain`, but an expired lease may still be released.
   */
  function requireLease(t: Todo, proof: LeaseProof | undefined, now: Date, mode: 'use' | 'maintain' | 'release', expectedVersion?: number): Lease {
    const lease = t.lease;
    if (proof === undefined || lease === null || lease.status !== 'active') {
      if (mode === 'use') {
        throw rejected('lease_required', `Todo ${t.todo_id} needs its active lease for this change.`, { nextAction: 'acquire the lease, then retry with it', details: { todo_id: t.todo_id } });
      }
      throw conflict('lease_not_active', `Todo ${t.todo_id} has no active lease.`, { nextAction: 'acquire the lease', details: { todo_id: t.todo_id } });
    }
    if (lease.lease_epoch !== proof.lease_epoch) {
      throw conflict('lease_epoch_stale', `The lease epoch ${proof.lease_epoch} of Todo ${t.todo_id} is stale.`, {
        nextAction: 'stop working on this Todo; its lease moved on',
        details: { todo_id: t.todo_id, presented_epoch: proof.lease_epoch, lease_epoch: lease.lease_epoch },
      });
    }
    if (lease.owner !== proof.owner || lease.execution_key !== proof.execution_key) {
      throw leaseNotHolder(t.todo_id, 'The caller');
    }
    if (expectedVersion !== undefined && lease.version !== expectedVersion) {
      throw leaseVersionMismatch(t.todo_id, lease.version, expectedVersion);
    }
    if (mode !== 'release' && leaseExpired(lease, now)) {
      throw conflict('lease_expired', `The lease of Todo ${t.todo_id} expired at ${lease.expires_at}.`, { nextAction: 'acquire the lease again', details: { todo_id: t.todo_id, expires_at: lease.expires_at } });
    }
    return lease;
  }

  const changed = (t: Todo, change: TodoChange, at: string, fields: Partial<Todo>): Plan => {
    const todo: Todo = { ...t, ...fields, updated_at: at, todo_revision: t.todo_revision + 1 };
    return { events: [{ type: 'todo_changed', change, todo }], todo };
  };

  const expiry = (now: Date, ttlMs: number): string => new Date(now.getTime() + ttlMs).toISOString();
  const leaseId = (storeIdentity: string, operationId: string): string => `lease_${sha256Hex(`${storeIdentity}\u0000${operationId}`).slice(0, 24)}`;

  function readProjection(): { p: WorkProjection; loaded: WorkLoad } {
    const loaded = provider.load();
    return { p: projectionOf(loaded), loaded };
  }

  function toTransaction(t: { cursor: number; provider_revision: string; operation_id: string; request_digest: string; events: readonly unknown[]; receipt: unknown }): WorkTransaction {
    const problem = eventsProblem(t.events);
    if (problem) throw workEventInvalid(`transaction ${t.cursor}: ${problem}`, { cursor: t.cursor });
    return { cursor: t.cursor, provider_revision: t.provider_revision, operation_id: t.operation_id, request_digest: t.request_digest, events: t.events as WorkEvent[], receipt: receiptOf(t.receipt) };
  }

  const gap = (cursor: number) => protocolViolation(`the history has a gap at cursor ${cursor}`, { cursor });

  function history(afterCursor: number, limit: number): WorkHistoryPage {
    const page = provider.scanCommitted(afterCursor, limit);
    let expected = afterCursor + 1;
    const transactions = page.transactions.map((t) => {
      if (t.cursor !== expected) throw gap(expected);
      expected++;
      return toTransaction(t);
    });
    return { transactions, next_cursor: page.next_cursor, has_more: page.has_more };
  }

  return {
    goal_id: goalId,
    storeIdentity: () => provider.storeIdentity(),
    view() {
      const { p, loaded } = readProjection();
      return {
        goal_id: goalId,
        store_identity: identity.store_identity,
        incarnation: identity.incarnation,
        authority_revision: p.authority_revision,
        cursor: loaded.cursor,
        provider_revision: loaded.provider_revision,
        handoff_mode: p.handoff_mode,
        fence_epoch: p.fence?.epoch ?? null,
        todos: p.todos,
      };
    },
    listTodos: () => [...readProjection().p.todos],
    getTodo: (id) => readProjection().p.todos.find((t) => t.todo_id === id),
    leaseStatus(id) {
      const t = findTodo(readProjection().p, id);
      const now = clock();
      return { todo_id: id, lease: t.lease, authorization: leaseAuthorization(t.lease, now), observed_at: now.toISOString() };
    },

    addTodo(r) {
      const explicitId = r.todo_id === undefined ? undefined : todoId(r.todo_id);
      const params = defined({
        todo_id: explicitId,
        title: text('title', r.title, MAX_TITLE),
        text: text('text', r.text ?? '', MAX_TEXT, true),
        status: status(r.status ?? 'open'),
        priority: priority(r.priority ?? 0),
        note: note(r.note ?? null),
      });
      if (params.status === 'done') throw invalid('status', 'a new Todo is open, blocked or deferred');
      return execute('add_todo', r, params, ({ p, at }) => {
        let seq = p.todo_seq;
        let id = explicitId;
        if (id === undefined) {
          do id = `t${++seq}`;
          while (p.todos.some((t) => t.todo_id === id));
        } else if (p.todos.some((t) => t.todo_id === id)) {
          throw conflict('todo_exists', `Todo ${id} already exists.`, { nextAction: 'choose another todo_id', details: { todo_id: id } });
        }
        const todo: Todo = {
          todo_id: id,
          title: params.title as string,
          text: params.text as string,
          status: params.status as TodoStatus,
          priority: params.priority as number,
          note: params.note as string | null,
          claimed_by: null,
          created_at: at,
          updated_at: at,
          todo_revision: 1,
          lease: null,
        };
        return { events: [{ type: 'todo_added', todo, todo_seq: seq }], todo };
      });
    },

    updateTodo(r) {
      const id = todoId(r.todo_id);
      const proof = leaseProof(r.lease);
      const fields = defined({
        title: r.title === undefined ? undefined : text('title', r.title, MAX_TITLE),
        text: r.text === undefined ? undefined : text('text', r.text, MAX_TEXT, true),
        status: r.status === undefined ? undefined : status(r.status),
        priority: r.priority === undefined ? undefined : priority(r.priority),
        note: r.note === undefined ? undefined : note(r.note),
      });
      if (Object.keys(fields).length === 0) throw invalid('update', 'name at least one of title, text, status, priority, note');
      const expectedRevision = r.expected_todo_revision === undefined ? undefined : nat('expected_todo_revision', r.expected_todo_revision);
      const params = defined({ todo_id: id, ...fields, expected_todo_revision: expectedRevision, lease: proof ? toJson(proof) : undefined });
      return execute('update_todo', r, params, ({ p, now, at }) => {
        const t = findTodo(p, id);
        if (expectedRevision !== undefined && t.todo_revision !== expectedRevision) {
          throw conflict('todo_revision_mismatch', `Todo ${id} is at revision ${t.todo_revision}, not ${expectedRevision}.`, {
            nextAction: 'read the Todo again and decide anew',
            details: { todo_id: id, expected_todo_revision: expectedRevision, todo_revision: t.todo_revision },
          });
        }
        const nextStatus = (fields.status as TodoStatus | undefined) ?? t.status;
        const closing = isTerminal(nextStatus) && nextStatus !== t.status;
        if (proof !== undefined || (closing && p.handoff_mode === 'hard_lease')) requireLease(t, proof, now, 'use');
        // Closing a Todo ends its lease; the record stays (released, same epoch and version).
        const lease = closing && t.lease?.status === 'active' ? { ...t.lease, status: 'released' as const, released_at: at } : t.lease;
        return changed(t, 'update', at, { ...(fields as Partial<Todo>), lease });
      });
    },

    claimTodo(r) {
      const id = todoId(r.todo_id);
      const agent = actor('agent', r.agent);
      const proof = leaseProof(r.lease);
      return execute('claim_todo', r, defined({ todo_id: id, agent, lease: proof ? toJson(proof) : undefined }), ({ p, now, at }) => {
        const t = findTodo(p, id);
        refuseTerminal(t);
        if (p.handoff_mode === 'hard_lease' || proof !== undefined) {
          const lease = requireLease(t, proof, now, 'use');
          if (lease.owner !== agent) throw leaseNotHolder(id, agent);
        } else if (t.claimed_by !== null && t.claimed_by !== agent) {
          throw conflict('todo_claimed', `Todo ${id} is claimed by another agent.`, { nextAction: 'pick another Todo, or ask its claimant to unclaim it', details: { todo_id: id, claimed_by: t.claimed_by } });
        }
        return changed(t, 'claim', at, { claimed_by: agent });
      });
    },

    unclaimTodo(r) {
      const id = todoId(r.todo_id);
      const agent = actor('agent', r.agent);
      const proof = leaseProof(r.lease);
      return execute('unclaim_todo', r, defined({ todo_id: id, agent, lease: proof ? toJson(proof) : undefined }), ({ p, now, at }) => {
        const t = findTodo(p, id);
        if (p.handoff_mode === 'hard_lease' || proof !== undefined) {
          const lease = requireLease(t, proof, now, 'use');
          if (lease.owner !== agent) throw leaseNotHolder(id, agent);
        }
        if (t.claimed_by !== agent) {
          throw conflict('todo_not_claimed_by_agent', `Todo ${id} is not claimed by ${agent}.`, { nextAction: 'read the Todo again', details: { todo_id: id, claimed_by: t.claimed_by } });
        }
        return changed(t, 'unclaim', at, { claimed_by: null });
      });
    },

    acquireLease(r) {
      const id = todoId(r.todo_id);
      const owner = actor('owner', r.owner);
      const key = actor('execution_key', r.execution_key);
      const ttlMs = ttl(r.ttl_ms);
      const expectedVersion = nat('expected_version', r.expected_version);
      return execute('acquire_lease', r, { todo_id: id, owner, execution_key: key, ttl_ms: ttlMs, expected_version: expectedVersion }, ({ p, now, at, operationId, storeIdentity }) => {
        requireHardLease(p);
        const t = findTodo(p, id);
        refuseTerminal(t);
        const current = t.lease;
        const version = current?.version ?? 0;
        if (version !== expectedVersion) {
          throw leaseVersionMismatch(id, version, expectedVersion);
        }
        if (current !== null && current.status === 'active' && !leaseExpired(current, now)) {
          throw conflict('lease_held', `Todo ${id} is leased until ${current.expires_at}.`, {
            nextAction: 'wait for the lease to expire or be released',
            details: { todo_id: id, lease_epoch: current.lease_epoch, expires_at: current.expires_at },
          });
        }
        const lease: Lease = {
          lease_id: leaseId(storeIdentity, operationId),
          owner,
          execution_key: key,
          lease_epoch: (current?.lease_epoch ?? 0) + 1,
          version: version + 1,
          status: 'active',
          acquired_at: at,
          expires_at: expiry(now, ttlMs),
          released_at: null,
        };
        return changed(t, 'lease_acquire', at, { lease, claimed_by: owner });
      });
    },

    renewLease(r) {
      const id = todoId(r.todo_id);
      const proof = leaseProof({ owner: r.owner, execution_key: r.execution_key, lease_epoch: r.lease_epoch })!;
      const expectedVersion = nat('expected_version', r.expected_version);
      const ttlMs = ttl(r.ttl_ms);
      return execute('renew_lease', r, { todo_id: id, ...proof, expected_version: expectedVersion, ttl_ms: ttlMs }, ({ p, now, at }) => {
        requireHardLease(p);
        const t = findTodo(p, id);
        const lease = requireLease(t, proof, now, 'maintain', expectedVersion);
        return changed(t, 'lease_renew', at, { lease: { ...lease, version: lease.version + 1, expires_at: expiry(now, ttlMs) } });
      });
    },

    transferLease(r) {
      const id = todoId(r.todo_id);
      const proof = leaseProof({ owner: r.owner, execution_key: r.execution_key, lease_epoch: r.lease_epoch })!;
      const expectedVersion = nat('expected_version', r.expected_version);
      const ttlMs = ttl(r.ttl_ms);
      const toOwner = actor('to_owner', r.to_owner);
      const toKey = actor('to_execution_key', r.to_execution_key);
      if (toOwner === proof.owner && toKey === proof.execution_key) throw invalid('to_owner', 'a transfer names another owner or execution key');
      const params = { todo_id: id, ...proof, expected_version: expectedVersion, ttl_ms: ttlMs, to_owner: toOwner, to_execution_key: toKey };
      return execute('transfer_lease', r, params, ({ p, now, at, operationId, storeIdentity }) => {
        requireHardLease(p);
        const t = findTodo(p, id);
        const lease = requireLease(t, proof, now, 'maintain', expectedVersion);
        const next: Lease = {
          ...lease,
          lease_id: leaseId(storeIdentity, operationId),
          owner: toOwner,
          execution_key: toKey,
          lease_epoch: lease.lease_epoch + 1,
          version: lease.version + 1,
          acquired_at: at,
          expires_at: expiry(now, ttlMs),
        };
        return changed(t, 'lease_transfer', at, { lease: next, claimed_by: toOwner });
      });
    },

    releaseLease(r) {
      const id = todoId(r.todo_id);
      const proof = leaseProof({ owner: r.owner, execution_key: r.execution_key, lease_epoch: r.lease_epoch })!;
      const expectedVersion = nat('expected_version', r.expected_version);
      return execute('release_lease', r, { todo_id: id, ...proof, expected_version: expectedVersion }, ({ p, now, at }) => {
        const t = findTodo(p, id);
        const lease = requireLease(t, proof, now, 'release', expectedVersion);
        return changed(t, 'lease_release', at, {
          lease: { ...lease, status: 'released', released_at: at },
          claimed_by: t.claimed_by === lease.owner ? null : t.claimed_by,
        });
      });
    },

    setHandoffMode(r) {
      if (!(HANDOFF_MODES as readonly unknown[]).includes(r.handoff_mode)) throw invalid('handoff_mode', `one of ${HANDOFF_MODES.join(', ')}`);
      const mode = r.handoff_mode;
      return execute('set_handoff_mode', r, { handoff_mode: mode }, ({ p, now }) => {
        if (mode !== p.handoff_mode) {
          const busy = p.todos.find((t) => (!isTerminal(t.status) && t.claimed_by !== null) || leaseAuthorization(t.lease, now) === 'active');
          if (busy) {
            throw conflict('handoff_mode_not_quiescent', 'The handoff mode changes only while no open Todo is claimed and no lease is active.', {
              nextAction: 'release claims and leases (or let leases expire), then retry',
              details: { todo_id: busy.todo_id },
            });
          }
        }
        return { events: [{ type: 'handoff_mode_set', handoff_mode: mode }], handoff_mode: mode };
      });
    },

    engageFence(r) {
      return execute('engage_fence', r, {}, ({ p, at }) => {
        const fence = { fence_id: randomBytes(16).toString('hex'), epoch: (p.fence?.epoch ?? 0) + 1 };
        return { events: [{ type: 'fence_engaged', fence: { ...fence, engaged_at: at } }], fence };
      });
    },

    readReceipt(operationId) {
      const r = provider.readReceipt(operationId);
      return r === undefined ? undefined : { receipt: receiptOf(r.receipt), cursor: r.cursor, provider_revision: r.provider_revision };
    },
    history,
    *iterateHistory(afterCursor = 0, pageSize = HISTORY_PAGE) {
      const floor = provider.load().cursor;
      let after = afterCursor;
      for (;;) {
        const page = history(after, pageSize);
        yield* page.transactions;
        after = page.next_cursor;
        if (!page.has_more) break;
      }
      if (after < floor) throw gap(after + 1);
    },
    transactionCount: () => provider.load().cursor,
    exportRetainedPrefix: () => exportRetainedPrefix(provider, clock),
    close: () => provider.close(),
  };
}

export interface OpenGoalWorkOptions {
  /** The runtime root. */
  readonly root: string;
  readonly goal_id: string;
  readonly clock?: () => Date;
  readonly expected_incarnation?: string;
  readonly expected_store_identity?: string;
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

/** Opens the work owner of a Goal on its SQLite store `goals/<goal_id>/work.db` (created on first open; the Goal directory must exist). */
export function openGoalWork(options: OpenGoalWorkOptions): WorkOwner {
  const path = join(options.root, LAYOUT.workDb(options.goal_id));
  if (!existsSync(dirname(path))) {
    throw goalNotFound(options.goal_id);
  }
  const provider = openSqliteWorkProvider(path, {
    goal_id: options.goal_id,
    ...(options.expected_incarnation === undefined ? {} : { expected_incarnation: options.expected_incarnation }),
    ...(options.expected_store_identity === undefined ? {} : { expected_store_identity: options.expected_store_identity }),
    ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }),
  });
  return openWork({ provider, ...(options.clock ? { clock: options.clock } : {}) });
}
