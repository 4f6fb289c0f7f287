/**
 * The work owner's shared decision rules: finding a Todo, terminal Todos, the hard-lease mode and
 * the lease a caller must hold, and the shape of a Todo change. Pure functions over a loaded
 * projection and the clock's "now"; they read no store and commit nothing (commit.ts does).
 */
import { conflict, notFound, rejected, sha256Hex } from '../../core/index.js';
import { leaseNotHolder, leaseVersionMismatch } from './errors.js';
import { isTerminal, leaseExpired, type Lease, type Todo, type TodoChange, type WorkProjection } from './model.js';
import type { LeaseProof } from './api.js';
import type { Plan } from './commit.js';

export function findTodo(p: WorkProjection, id: string): Todo {
  const t = p.todos.find((x) => x.todo_id === id);
  if (!t)
    throw notFound('todo_not_found', `Todo ${id} does not exist in this Goal.`, {
      nextAction: `list the Goal’s Todos: loopx todo list --goal ${p.goal_id}`,
      details: { todo_id: id },
    });
  return t;
}

export function refuseTerminal(t: Todo): void {
  if (isTerminal(t.status)) {
    throw rejected('todo_terminal', `Todo ${t.todo_id} is ${t.status}.`, {
      nextAction: 'reopen the Todo first',
      details: { todo_id: t.todo_id, status: t.status },
    });
  }
}

export function requireHardLease(p: WorkProjection): void {
  if (p.handoff_mode !== 'hard_lease') {
    throw rejected(
      'handoff_mode_soft_claim',
      'This Goal uses soft claims; leases are not acquired, renewed or transferred in soft_claim mode.',
      {
        nextAction: 'set the handoff mode to hard_lease, or use claim/unclaim',
      },
    );
  }
}

/**
 * The caller must hold the Todo's lease. `use`: a proof is required and the lease must be active
 * and unexpired (hard_lease completion, claim change). `maintain`: as `use` with the exact
 * version. `release`: as `maintain`, but an expired lease may still be released.
 */
export function requireLease(
  t: Todo,
  proof: LeaseProof | undefined,
  now: Date,
  mode: 'use' | 'maintain' | 'release',
  expectedVersion?: number,
): Lease {
  const lease = t.lease;
  if (proof === undefined || lease === null || lease.status !== 'active') {
    if (mode === 'use') {
      throw rejected('lease_required', `Todo ${t.todo_id} needs its active lease for this change.`, {
        nextAction: 'acquire the lease, then retry with it',
        details: { todo_id: t.todo_id },
      });
    }
    throw conflict('lease_not_active', `Todo ${t.todo_id} has no active lease.`, {
      nextAction: 'acquire the lease',
      details: { todo_id: t.todo_id },
    });
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
    throw conflict('lease_expired', `The lease of Todo ${t.todo_id} expired at ${lease.expires_at}.`, {
      nextAction: 'acquire the lease again',
      details: { todo_id: t.todo_id, expires_at: lease.expires_at },
    });
  }
  return lease;
}

/** A Todo change: the next revision of the Todo and its one event. */
export function changed(t: Todo, change: TodoChange, at: string, fields: Partial<Todo>): Plan {
  const todo: Todo = { ...t, ...fields, updated_at: at, todo_revision: t.todo_revision + 1 };
  return { events: [{ type: 'todo_changed', change, todo }], todo };
}

export const expiry = (now: Date, ttlMs: number): string => new Date(now.getTime() + ttlMs).toISOString();

/** A lease's id: derived from the store and the operation that minted it, so a replay names the same lease. */
export const leaseId = (storeIdentity: string, operationId: string): string =>
  `lease_${sha256Hex(`${storeIdentity}\u0000${operationId}`).slice(0, 24)}`;
