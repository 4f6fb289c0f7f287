/**
 * Goals and Todos: the list of the root's Goals (GET /api/goals), and one Goal with its Todos
 * (GET /api/goals/:id) and the operator's actions through the same calls as `loopx todo` and
 * `loopx goal` — add a Todo, change a Todo's status or note, pause, resume or retire the Goal.
 * Every change is read back from the daemon after it answers; a refusal shows its code and next
 * action where it happened.
 */
import { useState, type FormEvent } from 'react';
import { ApiError, asApiError, enc, postJson } from './api';
import { ErrorBox, Loading, PageHeading, TableRegion, abbreviate } from './components';
import { useApiJson } from './hooks';
import { ROUTES } from './router';

interface GoalItem {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly title: string;
  readonly lifecycle: string;
}
interface TodoItem {
  readonly todo_id: string;
  readonly title: string;
  readonly status: string;
  readonly note: string | null;
  readonly lease_owner: string | null;
}
interface GoalDetailDoc extends GoalItem {
  readonly lineage: {
    readonly lineage_id: string;
    readonly generation: number;
    readonly supersedes: { readonly goal_instance_id: string; readonly recovery_id: string } | null;
  } | null;
  readonly counts: Readonly<Record<string, number>>;
  readonly committed_transactions: number;
  readonly handoff_mode: string;
  readonly todos: readonly TodoItem[];
}

const STATUSES = ['open', 'done', 'blocked', 'deferred'] as const;

export function GoalsPage() {
  const { data, error } = useApiJson<{ goals: GoalItem[] }>('/api/goals');
  return (
    <>
      <PageHeading>Goals</PageHeading>
      {error ? <ErrorBox error={error} title="Could not list the Goals" /> : null}
      {!data && !error ? <Loading what="the Goals" /> : null}
      {data && data.goals.length === 0 ? (
        <p>
          This root has no Goals yet. Create one with <code>loopx goal create</code>.
        </p>
      ) : null}
      {data && data.goals.length > 0 ? (
        <TableRegion label="Goals">
          <table data-testid="goals-table">
            <thead>
              <tr>
                <th scope="col">Goal</th>
                <th scope="col">Title</th>
                <th scope="col">Lifecycle</th>
                <th scope="col">Lifetime</th>
              </tr>
            </thead>
            <tbody>
              {data.goals.map((g) => (
                <tr key={g.goal_id}>
                  <td>
                    <a href={ROUTES.goal(g.goal_id)}>{g.goal_id}</a>
                  </td>
                  <td>{g.title}</td>
                  <td>{g.lifecycle}</td>
                  <td>
                    <code title={g.goal_instance_id}>{abbreviate(g.goal_instance_id, 14)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      ) : null}
    </>
  );
}

function TodoRow({ todo, act, busy }: { todo: TodoItem; act: (path: string, body: unknown) => Promise<void>; busy: boolean }) {
  const [status, setStatus] = useState(todo.status);
  const id = `todo-status-${todo.todo_id}`;
  return (
    <tr data-testid={`todo-${todo.todo_id}`}>
      <td>{todo.todo_id}</td>
      <td>{todo.title}</td>
      <td className="todo-status">{todo.status}</td>
      <td>{todo.note ?? '—'}</td>
      <td>{todo.lease_owner ?? '—'}</td>
      <td>
        <label htmlFor={id} className="visually-hidden">
          New status of {todo.todo_id}
        </label>
        <select id={id} value={status} onChange={(ev) => setStatus(ev.target.value)}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>{' '}
        <button type="button" disabled={busy || status === todo.status} onClick={() => void act(`todos/${enc(todo.todo_id)}`, { status })}>
          Update {todo.todo_id}
        </button>
      </td>
    </tr>
  );
}

function GoalActions({ goal, act, busy }: { goal: GoalDetailDoc; act: (path: string, body?: unknown) => Promise<void>; busy: boolean }) {
  const [title, setTitle] = useState('');
  const [retiring, setRetiring] = useState(false);
  const retired = goal.lifecycle === 'retired';
  async function add(ev: FormEvent) {
    ev.preventDefault();
    await act('todos', { title });
    setTitle('');
  }
  return (
    <section aria-labelledby="goal-actions-heading" className="card">
      <h2 id="goal-actions-heading">Actions</h2>
      <form className="add-todo" onSubmit={(ev) => void add(ev)}>
        <label htmlFor="new-todo-title">New Todo</label>
        <input id="new-todo-title" value={title} onChange={(ev) => setTitle(ev.target.value)} required maxLength={512} disabled={retired} />
        <button type="submit" disabled={busy || title === '' || retired}>
          Add Todo
        </button>
      </form>
      <div className="actions">
        <button type="button" disabled={busy || goal.lifecycle !== 'active'} onClick={() => void act('pause')}>
          Pause the Goal
        </button>
        <button type="button" disabled={busy || goal.lifecycle !== 'paused'} onClick={() => void act('resume')}>
          Resume the Goal
        </button>
        {retiring ? (
          <>
            <span>Retiring ends this lifetime for good. </span>
            <button type="button" className="danger" disabled={busy} onClick={() => void act('retire').then(() => setRetiring(false))}>
              Retire {goal.goal_id}
            </button>
            <button type="button" className="secondary" onClick={() => setRetiring(false)}>
              Keep it
            </button>
          </>
        ) : (
          <button type="button" className="secondary" disabled={busy || retired} onClick={() => setRetiring(true)}>
            Retire…
          </button>
        )}
      </div>
      {retired ? <p className="muted">A retired Goal takes no new work; creating it again mints a new lifetime.</p> : null}
    </section>
  );
}

function GoalFacts({ goal }: { goal: GoalDetailDoc }) {
  return (
    <dl className="facts card">
      <div>
        <dt>Lifecycle</dt>
        <dd data-testid="goal-lifecycle">{goal.lifecycle}</dd>
      </div>
      <div>
        <dt>Lifetime</dt>
        <dd>
          <code>{goal.goal_instance_id}</code>
        </dd>
      </div>
      <div>
        <dt>Todos</dt>
        <dd data-testid="goal-counts">{STATUSES.map((s) => `${goal.counts[s] ?? 0} ${s}`).join(', ')}</dd>
      </div>
      <div>
        <dt>Committed history</dt>
        <dd>{goal.committed_transactions} transactions</dd>
      </div>
      <div>
        <dt>Lease mode</dt>
        <dd>{goal.handoff_mode}</dd>
      </div>
      {goal.lineage?.supersedes ? (
        <div>
          <dt>Recovered</dt>
          <dd data-testid="goal-lineage">
            lifetime {goal.lineage.generation} of this Goal; it replaced <code>{abbreviate(goal.lineage.supersedes.goal_instance_id, 14)}</code> in recovery{' '}
            <code>{abbreviate(goal.lineage.supersedes.recovery_id)}</code>, whose old writers are refused
          </dd>
        </div>
      ) : null}
    </dl>
  );
}

export function GoalDetail({ goalId }: { goalId: string }) {
  const { data: goal, error, reload } = useApiJson<GoalDetailDoc>(`/api/goals/${enc(goalId)}`);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const act = async (path: string, body?: unknown) => {
    setBusy(true);
    setActionError(null);
    try {
      await postJson(`/api/goals/${enc(goalId)}/${path}`, body);
    } catch (e) {
      setActionError(asApiError(e));
    } finally {
      setBusy(false);
      reload();
    }
  };
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <a href={ROUTES.goals}>Goals</a> <span aria-hidden="true">▸</span> <span aria-current="page">{goalId}</span>
      </nav>
      <PageHeading>{goal ? `Goal ${goal.goal_id}: ${goal.title}` : `Goal ${goalId}`}</PageHeading>
      {error ? <ErrorBox error={error} title="Could not open the Goal" /> : null}
      {!goal && !error ? <Loading what="the Goal" /> : null}
      {goal ? (
        <>
          <GoalFacts goal={goal} />
          {actionError ? <ErrorBox error={actionError} title="Refused" testId="goal-refusal" /> : null}
          <GoalActions goal={goal} act={act} busy={busy} />
          <TableRegion label="Todos">
            <table data-testid="todos-table">
              <thead>
                <tr>
                  <th scope="col">Todo</th>
                  <th scope="col">Title</th>
                  <th scope="col">Status</th>
                  <th scope="col">Note</th>
                  <th scope="col">Lease holder</th>
                  <th scope="col">Change</th>
                </tr>
              </thead>
              <tbody>
                {goal.todos.map((t) => (
                  <TodoRow key={`${t.todo_id}:${t.status}`} todo={t} act={act} busy={busy} />
                ))}
              </tbody>
            </table>
          </TableRegion>
        </>
      ) : null}
    </>
  );
}
