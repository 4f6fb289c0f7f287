/**
 * A Goal's Todos for an operator (`loopx todo add|list|update`): canonical work through the work
 * owner, with the lease discipline the Goal's handoff mode asks for. Several Todos updated at once
 * are one work transaction (all or none).
 *
 * - In `hard_lease` mode (a Goal worked by sessions) an operator's update takes the Todo's lease
 *   first — refused while a session holds it — updates under it, and releases it again.
 * - Every change carries an operation id. Repeating it replays the original receipt, with the
 *   lease proof the first request was made under; a different request under the same id is
 *   refused by the work owner. Nothing is applied twice.
 * - With the run authority as `guard`, a write to a Goal lifetime a recovery superseded is refused
 *   (`goal_lifetime_superseded`) before the work store is opened.
 */
import { randomBytes } from 'node:crypto';
import { work as workOwner } from '../owners/index.js';
import type { LifetimeGuard } from '../engine/index.js';
import { withGoalWork } from './goals.js';

export const TODO_STATUSES: readonly workOwner.TodoStatus[] = ['open', 'done', 'blocked', 'deferred'];

/** How long an operator's lease lives if the process dies between taking and releasing it. */
const OPERATOR_LEASE_TTL_MS = 60_000;

/** The public shape of a Todo (`loopx todo … --json`). */
export const todoView = (t: workOwner.Todo) => ({
  todo_id: t.todo_id,
  title: t.title,
  status: t.status,
  note: t.note,
  todo_revision: t.todo_revision,
  lease_owner: t.lease?.status === 'active' ? t.lease.owner : null,
});

/** A fresh operation id for an operator's change that named none. */
export const operatorOperationId = (prefix: string): string => `${prefix}:${randomBytes(8).toString('hex')}`;

export interface AddTodoInput {
  readonly operation_id: string;
  readonly title: string;
  readonly todo_id?: string;
  readonly text?: string;
}

export const addTodo = (root: string, goalId: string, input: AddTodoInput, guard?: LifetimeGuard) =>
  withGoalWork(root, goalId, (work) => work.addTodo(input), { write: 'todo add', ...(guard ? { guard } : {}) });

export const listTodos = (root: string, goalId: string) => withGoalWork(root, goalId, (work) => work.listTodos());

export interface UpdateTodoInput {
  readonly operation_id: string;
  readonly todo_id: string;
  readonly status?: workOwner.TodoStatus;
  readonly note?: string;
  /** Who takes the Todo's lease in hard-lease mode, e.g. `operator:cli`. */
  readonly lease_owner: string;
}

/** Change a Todo's status and/or note as an operator (see the header for leases and repeats). */
export function updateTodo(root: string, goalId: string, input: UpdateTodoInput, guard?: LifetimeGuard) {
  const { operation_id: op, todo_id: todoId } = input;
  const changes = {
    ...(input.status !== undefined ? { status: input.status } : {}),
    ...(input.note !== undefined ? { note: input.note } : {}),
  };
  return withGoalWork(
    root,
    goalId,
    async (work) => {
      const done = await work.readReceipt(op);
      if (done) {
        // Under the lease it was made with: the one its Todo held then (a retry after a rotation took a new one).
        const proof =
          (await work.readReceipt(`${op}:lease`)) === undefined ? undefined : (done.receipt.todo?.lease ?? undefined);
        return work.updateTodo({
          operation_id: op,
          todo_id: todoId,
          ...changes,
          ...(proof
            ? { lease: { owner: proof.owner, execution_key: proof.execution_key, lease_epoch: proof.lease_epoch } }
            : {}),
        });
      }
      if ((await work.view()).handoff_mode !== 'hard_lease')
        return work.updateTodo({ operation_id: op, todo_id: todoId, ...changes });
      const current = await work.leaseStatus(todoId);
      // A lease this operation took before its answer was lost (a crash, a failover) is its own, when still held;
      // else it takes one again under an id the lease's version makes distinct (a retry in the same state repeats it).
      const landed = (await work.readReceipt(`${op}:lease`))?.receipt.lease;
      const held =
        landed != null &&
        current.authorization === 'active' &&
        current.lease !== null &&
        current.lease.execution_key === op &&
        current.lease.owner === input.lease_owner &&
        current.lease.lease_epoch === landed.lease_epoch;
      const lease = held
        ? landed
        : (
            await work.acquireLease({
              operation_id: landed == null ? `${op}:lease` : `${op}:lease:v${current.lease?.version ?? 0}`,
              todo_id: todoId,
              owner: input.lease_owner,
              execution_key: op,
              ttl_ms: OPERATOR_LEASE_TTL_MS,
              expected_version: current.lease?.version ?? 0,
            })
          ).receipt.lease!;
      const updated = await work.updateTodo({
        operation_id: op,
        todo_id: todoId,
        ...changes,
        lease: { owner: lease.owner, execution_key: lease.execution_key, lease_epoch: lease.lease_epoch },
      });
      const after = await work.leaseStatus(todoId);
      if (after.lease?.status === 'active') {
        await work.releaseLease({
          operation_id: `${op}:release`,
          todo_id: todoId,
          owner: lease.owner,
          execution_key: lease.execution_key,
          lease_epoch: after.lease.lease_epoch,
          expected_version: after.lease.version,
        });
      }
      return updated;
    },
    { write: 'todo update', ...(guard ? { guard } : {}) },
  );
}

export interface UpdateTodosInput {
  readonly operation_id: string;
  /** Two or more distinct Todos, changed alike as one transaction. */
  readonly todo_ids: readonly string[];
  readonly status?: workOwner.TodoStatus;
  readonly note?: string;
  readonly lease_owner: string;
}

type Proof = workOwner.LeaseProof;
const proofOf = (l: workOwner.Lease): Proof => ({
  owner: l.owner,
  execution_key: l.execution_key,
  lease_epoch: l.lease_epoch,
});

/**
 * Change several Todos alike as one work transaction (`loopx todo update t1 t2 …`): every Todo
 * changes or none does. The batch is checked first (at most 100 Todos, each named once). In
 * hard_lease mode the operator then takes each Todo's lease — a Todo that would refuse its lease (a
 * session holds it, it is closed, it is missing) is asked first, so such a refusal takes no lease —,
 * commits the batch under them, and releases every lease it took, also when it is refused. A
 * repeat replays with the proofs the committed receipt names, and releases what an interrupted
 * first attempt left held. Each attempt's lease operations have ids of their own, so the same
 * operation id can be retried after a refusal.
 */
export async function updateTodos(root: string, goalId: string, input: UpdateTodosInput, guard?: LifetimeGuard) {
  const { operation_id: op, todo_ids: ids } = input;
  const changes = {
    ...(input.status !== undefined ? { status: input.status } : {}),
    ...(input.note !== undefined ? { note: input.note } : {}),
  };
  const batch = (proofs: ReadonlyMap<string, Proof>) => ({
    operation_id: op,
    updates: ids.map((todo_id) => ({
      todo_id,
      ...changes,
      ...(proofs.has(todo_id) ? { lease: proofs.get(todo_id)! } : {}),
    })),
  });
  workOwner.checkTodoUpdates(batch(new Map()).updates);
  return withGoalWork(
    root,
    goalId,
    async (work) => {
      const prior = await work.readReceipt(op);
      if (prior) {
        const proofs = new Map<string, Proof>();
        for (const t of prior.receipt.todos ?? [])
          if (t.lease?.execution_key === op && t.lease.owner === input.lease_owner)
            proofs.set(t.todo_id, proofOf(t.lease));
        const replayed = await work.updateTodos(batch(proofs));
        await releaseTaken(work, ids, op, attemptTag());
        return replayed;
      }
      if ((await work.view()).handoff_mode !== 'hard_lease') return work.updateTodos(batch(new Map()));
      return underLeases(work, input, batch);
    },
    { write: 'todo update', ...(guard ? { guard } : {}) },
  );
}

const attemptTag = (): string => randomBytes(6).toString('hex');

/** The most Todos one update changes (the work owner's batch limit). */
export const MAX_TODOS_PER_UPDATE = workOwner.MAX_TODO_UPDATES;

/** Hard-lease mode: each Todo's lease taken (the ones that may refuse first), the batch committed under them, every one released after. */
async function underLeases(
  work: workOwner.WorkOwner,
  input: UpdateTodosInput,
  batch: (proofs: ReadonlyMap<string, Proof>) => workOwner.UpdateTodosRequest,
) {
  const { operation_id: op, todo_ids: ids } = input;
  const tag = attemptTag();
  await releaseTaken(work, ids, op, tag); // what an interrupted attempt under this id left held
  // A Todo whose lease would be refused (missing, closed, leased by another) is asked first, so such a refusal takes no lease.
  const now = new Date();
  const todos = new Map((await work.listTodos()).map((t) => [t.todo_id, t]));
  const mayRefuse = (id: string): boolean => {
    const t = todos.get(id);
    return t === undefined || workOwner.isTerminal(t.status) || workOwner.leaseAuthorization(t.lease, now) === 'active';
  };
  const taken = new Map<string, Proof>();
  let refused = true;
  try {
    for (const id of [...ids.filter(mayRefuse), ...ids.filter((i) => !mayRefuse(i))]) {
      const lease = (
        await work.acquireLease({
          operation_id: `${op}:lease:${id}:${tag}`,
          todo_id: id,
          owner: input.lease_owner,
          execution_key: op,
          ttl_ms: OPERATOR_LEASE_TTL_MS,
          expected_version: todos.get(id)?.lease?.version ?? 0,
        })
      ).receipt.lease!;
      taken.set(id, proofOf(lease));
    }
    const result = await work.updateTodos(batch(taken));
    refused = false;
    return result;
  } finally {
    // After a refusal, a lease that will not release expires on its own: the refusal is what the operator must see.
    const released = releaseTaken(work, [...taken.keys()], op, tag);
    await (refused ? released.catch(() => undefined) : released);
  }
}

/** Releases each of these Todos' leases that is still active under this operation (its execution key), from one read of the Todos. */
async function releaseTaken(work: workOwner.WorkOwner, ids: readonly string[], op: string, tag: string): Promise<void> {
  const wanted = new Set(ids);
  for (const t of await work.listTodos()) {
    const lease = t.lease;
    if (!wanted.has(t.todo_id) || lease?.status !== 'active' || lease.execution_key !== op) continue;
    await work.releaseLease({
      operation_id: `${op}:release:${t.todo_id}:${tag}`,
      todo_id: t.todo_id,
      owner: lease.owner,
      execution_key: op,
      lease_epoch: lease.lease_epoch,
      expected_version: lease.version,
    });
  }
}
