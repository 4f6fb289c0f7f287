/**
 * One Goal's page (GET /api/goals/:id, its activity and progress): what it is and where it came
 * from (a recovered lifetime names its backup and what was lost), the operator's actions through
 * the same calls as the CLI — add or change a Todo, start a work run, pause, resume or retire —
 * its Todos with lease holders and last receipts, its holds, progress, runs, effects and committed
 * history. Every change is read back from the daemon after it answers; a refusal shows its code
 * and next action where it happened; a disabled control says why. A lifetime a recovery superseded
 * says so at the top, links to the Goal in the root it continues in when the daemon serves that
 * root, and disables every control that would write (the daemon would refuse it). While a run
 * works on the Goal the page reads it again every few seconds, so work done elsewhere shows
 * without a reload.
 */
import { useEffect, useRef, useState, type FormEvent, type RefObject } from 'react';
import { ApiError, asApiError, enc, postJson } from './api';
import { ErrorBox, Loading, PageHeading, TableRegion, abbreviate } from './components';
import { GoalEffects, GoalHistory, GoalHolds, GoalRuns } from './GoalActivity';
import {
  countsText,
  STATUSES,
  supersededWhy,
  when,
  type GoalActivityDoc,
  type GoalDetailDoc,
  type ProgressDoc,
  type SupersededBy,
  type TodoItem,
} from './goalTypes';
import { useApiJson } from './hooks';
import { ProgressChart } from './ProgressChart';
import { ROUTES, navigate, rootQuery } from './router';
import { StartRun } from './StartRun';

type Act = (path: string, body?: unknown) => Promise<unknown>;

/** The id of the visible sentence that says why a superseded lifetime's controls are disabled. */
const SUPERSEDED_WHY = 'goal-superseded-why';

/** At the top of a superseded lifetime's page: where the Goal continues, with a link when this daemon serves that root. */
function SupersededNotice({ goalId, by }: { goalId: string; by: SupersededBy }) {
  return (
    <div
      className="card severity-hold"
      role="note"
      aria-labelledby="goal-superseded-title"
      data-testid="goal-superseded"
    >
      <p id="goal-superseded-title">
        <strong>
          Superseded by the recovery into{' '}
          {by.root !== null ? <code>{by.root}</code> : `another root (root id ${by.root_id})`}.
        </strong>
      </p>
      <p>
        This lifetime is kept here as history and takes no more work. The Goal continues there as lifetime{' '}
        <code title={by.goal_instance_id}>{abbreviate(by.goal_instance_id, 14)}</code>, recovered {when(by.recorded_at)}
        .
      </p>
      <p>
        {by.root !== null ? (
          <a href={ROUTES.goal(goalId, by.root)} data-testid="goal-superseded-link">
            Continue Goal {goalId} in {by.root}
          </a>
        ) : (
          <>
            This daemon does not serve that root: continue there with{' '}
            <code>loopx goal show {goalId} --root &lt;the recovered root&gt;</code>.
          </>
        )}
      </p>
    </div>
  );
}

function TodoRow({
  todo,
  act,
  busy,
  closed,
  last,
}: {
  todo: TodoItem;
  act: Act;
  busy: boolean;
  closed: boolean;
  last: ProgressDoc['last_receipts'][string] | undefined;
}) {
  const [status, setStatus] = useState(todo.status);
  const id = `todo-status-${todo.todo_id}`;
  return (
    <tr data-testid={`todo-${todo.todo_id}`}>
      <td data-label="Todo">{todo.todo_id}</td>
      <td data-label="Title">{todo.title}</td>
      <td data-label="Status" className="todo-status">
        {todo.status}
      </td>
      <td data-label="Note">{todo.note ?? '—'}</td>
      <td data-label="Lease holder">
        {todo.lease_owner ? `${todo.lease_owner}, until ${when(todo.lease_expires_at)}` : '—'}
      </td>
      <td data-label="Last receipt">
        {last ? `#${last.cursor} ${last.operation.replace(/_/g, ' ')}, ${when(last.committed_at)}` : '—'}
      </td>
      <td data-label="Change">
        <label htmlFor={id} className="visually-hidden">
          New status of {todo.todo_id}
        </label>
        <select
          id={id}
          value={status}
          onChange={(ev) => setStatus(ev.target.value as TodoItem['status'])}
          disabled={closed}
          aria-describedby={closed ? SUPERSEDED_WHY : undefined}
        >
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>{' '}
        <button
          type="button"
          disabled={busy || closed || status === todo.status}
          aria-describedby={closed ? SUPERSEDED_WHY : status === todo.status ? `${id}-why` : undefined}
          onClick={() => void act(`todos/${enc(todo.todo_id)}`, { status })}
        >
          Update {todo.todo_id}
        </button>
        {status === todo.status && !closed ? (
          <span id={`${id}-why`} className="visually-hidden">
            Choose another status first.
          </span>
        ) : null}
      </td>
    </tr>
  );
}

/** The form that adds a Todo to the Goal; disabled once the Goal is retired or its lifetime superseded. */
function AddTodoForm({ act, busy, retired, closed }: { act: Act; busy: boolean; retired: boolean; closed: boolean }) {
  const [title, setTitle] = useState('');
  async function add(ev: FormEvent) {
    ev.preventDefault();
    await act('todos', { title });
    setTitle('');
  }
  return (
    <form className="add-todo" onSubmit={(ev) => void add(ev)}>
      <label htmlFor="new-todo-title">New Todo</label>
      <input
        id="new-todo-title"
        value={title}
        onChange={(ev) => setTitle(ev.target.value)}
        required
        maxLength={512}
        disabled={retired || closed}
        aria-describedby={closed ? SUPERSEDED_WHY : 'goal-retired-why'}
      />
      <button
        type="submit"
        disabled={busy || title === '' || retired || closed}
        aria-describedby={closed ? SUPERSEDED_WHY : undefined}
      >
        Add Todo
      </button>
    </form>
  );
}

/** Pause, resume and retire (retiring asks to confirm first), each enabled only where the lifecycle allows it. */
function LifecycleButtons({
  goal,
  act,
  busy,
  closed,
  lifecycleWhy,
}: {
  goal: GoalDetailDoc;
  act: Act;
  busy: boolean;
  closed: boolean;
  lifecycleWhy: string;
}) {
  const [retiring, setRetiring] = useState(false);
  const retired = goal.lifecycle === 'retired';
  return (
    <div className="actions">
      <button
        type="button"
        disabled={busy || closed || goal.lifecycle !== 'active'}
        onClick={() => void act('pause')}
        aria-describedby={lifecycleWhy}
      >
        Pause the Goal
      </button>
      <button
        type="button"
        disabled={busy || closed || goal.lifecycle !== 'paused'}
        onClick={() => void act('resume')}
        aria-describedby={lifecycleWhy}
      >
        Resume the Goal
      </button>
      {retiring ? (
        <>
          <span>Retiring ends this lifetime for good. </span>
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => void act('retire').then(() => setRetiring(false))}
          >
            Retire {goal.goal_id}
          </button>
          <button type="button" className="secondary" onClick={() => setRetiring(false)}>
            Keep it
          </button>
        </>
      ) : (
        <button
          type="button"
          className="secondary"
          disabled={busy || retired || closed}
          onClick={() => setRetiring(true)}
          aria-describedby={closed ? SUPERSEDED_WHY : undefined}
        >
          Retire…
        </button>
      )}
    </div>
  );
}

/** The Goal's actions: add a Todo, change its lifecycle, and why a control is disabled. */
function GoalActions({
  goal,
  act,
  busy,
  headingRef,
}: {
  goal: GoalDetailDoc;
  act: Act;
  busy: boolean;
  headingRef: RefObject<HTMLHeadingElement | null>;
}) {
  const retired = goal.lifecycle === 'retired';
  // A superseded lifetime takes no write at all: every control below is disabled, the reason shown.
  const closedWhy = supersededWhy(goal);
  const closed = closedWhy !== null;
  const lifecycleWhy = closed ? SUPERSEDED_WHY : 'goal-lifecycle-why';
  return (
    <section aria-labelledby="goal-actions-heading" className="card">
      <h2 id="goal-actions-heading" ref={headingRef} tabIndex={-1}>
        Actions
      </h2>
      <AddTodoForm act={act} busy={busy} retired={retired} closed={closed} />
      <LifecycleButtons goal={goal} act={act} busy={busy} closed={closed} lifecycleWhy={lifecycleWhy} />
      {closedWhy ? (
        <p id={SUPERSEDED_WHY} data-testid="goal-superseded-why">
          {closedWhy}
        </p>
      ) : null}
      <p className="muted" id="goal-lifecycle-why">
        {closed
          ? `This lifetime was ${goal.lifecycle} when a recovery superseded it.`
          : goal.lifecycle === 'active'
            ? 'The Goal is active: it takes work. Pause it to stop new runs.'
            : goal.lifecycle === 'paused'
              ? 'The Goal is paused: it takes no new run until it is resumed.'
              : 'The Goal is retired: it takes no new work; creating it again mints a new lifetime.'}
      </p>
      {retired ? (
        <p className="visually-hidden" id="goal-retired-why">
          A retired Goal takes no new Todo.
        </p>
      ) : null}
    </section>
  );
}

function GoalFacts({ goal }: { goal: GoalDetailDoc }) {
  const rec = goal.recovery;
  return (
    <dl className="facts card">
      <div>
        <dt>Lifecycle</dt>
        <dd data-testid="goal-lifecycle">
          {goal.superseded_by ? `superseded (was ${goal.lifecycle})` : goal.lifecycle}
        </dd>
      </div>
      <div>
        <dt>Lifetime</dt>
        <dd>
          <code>{goal.goal_instance_id}</code>
        </dd>
      </div>
      <div>
        <dt>Todos</dt>
        <dd data-testid="goal-counts">{countsText(goal.counts)}</dd>
      </div>
      <div>
        <dt>Committed history</dt>
        <dd>
          {goal.committed_transactions} transactions, the last {when(goal.last_activity)}
        </dd>
      </div>
      <div>
        <dt>Lease mode</dt>
        <dd>{goal.handoff_mode}</dd>
      </div>
      {goal.lineage?.supersedes ? (
        <div>
          <dt>Recovered</dt>
          <dd data-testid="goal-lineage">
            lifetime {goal.lineage.generation} of this Goal; it replaced{' '}
            <code>{abbreviate(goal.lineage.supersedes.goal_instance_id, 14)}</code>, whose old writers are refused.{' '}
            {rec ? (
              <>
                Recovered from backup <code>{rec.backup_id}</code> as captured{' '}
                {rec.captured_at_end ? `up to ${when(rec.captured_at_end)}` : ''} ({rec.achieved_profile}) —{' '}
                <a href={ROUTES.recovery(rec.recovery_id)}>the recovery</a>.
              </>
            ) : (
              <>
                Recovery <code>{abbreviate(goal.lineage.supersedes.recovery_id)}</code>.
              </>
            )}
          </dd>
        </div>
      ) : null}
      {rec ? (
        <div>
          <dt>Lost or unknown</dt>
          <dd data-testid="goal-lost">
            {rec.lost_or_unknown.length === 0 ? 'nothing' : rec.lost_or_unknown.join('; ')}
          </dd>
        </div>
      ) : null}
    </dl>
  );
}

function TodosTable({
  goal,
  act,
  busy,
  progress,
}: {
  goal: GoalDetailDoc;
  act: Act;
  busy: boolean;
  progress: ProgressDoc | null;
}) {
  return (
    <TableRegion label="Todos">
      <table className="reflow" data-testid="todos-table">
        <thead>
          <tr>
            <th scope="col">Todo</th>
            <th scope="col">Title</th>
            <th scope="col">Status</th>
            <th scope="col">Note</th>
            <th scope="col">Lease holder</th>
            <th scope="col">Last receipt</th>
            <th scope="col">Change</th>
          </tr>
        </thead>
        <tbody>
          {goal.todos.map((t) => (
            <TodoRow
              key={`${t.todo_id}:${t.status}`}
              todo={t}
              act={act}
              busy={busy}
              closed={goal.superseded_by !== null}
              last={progress?.last_receipts[t.todo_id]}
            />
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

/** The Goal, its activity and its progress; read again every few seconds while a run works on it. */
function useGoal(goalId: string, root: string | null) {
  const q = rootQuery(root);
  const goal = useApiJson<GoalDetailDoc>(`/api/goals/${enc(goalId)}${q}`);
  const activity = useApiJson<GoalActivityDoc>(`/api/goals/${enc(goalId)}/activity${q}`);
  const progress = useApiJson<ProgressDoc>(`/api/goals/${enc(goalId)}/progress${q}`);
  const working = activity.data?.runs.some((r) => r.status === 'active' && r.waiting_for === null) ?? false;
  const [rg, ra, rp] = [goal.reload, activity.reload, progress.reload];
  const reloadAll = () => {
    rg();
    ra();
  };
  useEffect(() => {
    if (!working) return;
    const t = setInterval(() => {
      rg();
      ra();
    }, 3000);
    return () => clearInterval(t);
  }, [working, rg, ra]);
  // The progress reads the whole committed history: read again only when the history grew.
  const head = goal.data?.committed_transactions;
  const seenHead = useRef(head);
  useEffect(() => {
    if (head === undefined) return;
    if (seenHead.current !== undefined && seenHead.current !== head) rp();
    seenHead.current = head;
  }, [head, rp]);
  return { goal, activity, progress, reloadAll };
}

export function GoalDetail({ goalId, root }: { goalId: string; root: string | null }) {
  const { goal: g, activity, progress, reloadAll } = useGoal(goalId, root);
  const goal = g.data;
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const actionsHeading = useRef<HTMLHeadingElement>(null);
  // A control an action disables or replaces takes the focus with it: once the Goal is read back,
  // the focus lands where the change shows instead (the Todos for a Todo's change, else Actions).
  const pendingFocus = useRef<string | null>(null);
  useEffect(() => {
    const path = pendingFocus.current;
    if (path === null || g.data === null) return;
    pendingFocus.current = null;
    const el = document.activeElement as HTMLElement | null;
    if (el && el !== document.body && !(el as HTMLButtonElement).disabled && el.isConnected) return;
    const todos = document.querySelector<HTMLElement>('[role="region"][aria-label="Todos"]');
    (path.startsWith('todos/') && todos ? todos : actionsHeading.current)?.focus();
  }, [g.data]);
  const act: Act = async (path, body) => {
    setBusy(true);
    setActionError(null);
    try {
      return await postJson(`/api/goals/${enc(goalId)}/${path}${rootQuery(root)}`, body);
    } catch (e) {
      setActionError(asApiError(e));
      return undefined;
    } finally {
      setBusy(false);
      pendingFocus.current = path;
      reloadAll();
    }
  };
  const startRun = async (body: unknown) => {
    const r = (await act('work-runs', body)) as { run_id?: string } | undefined;
    if (r?.run_id) navigate(ROUTES.run(r.run_id, root));
  };
  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <a href={ROUTES.goals}>Goals</a> <span aria-hidden="true">▸</span>{' '}
        {root ? (
          <>
            <code>{root}</code> <span aria-hidden="true">▸</span>{' '}
          </>
        ) : null}
        <span aria-current="page">{goalId}</span>
      </nav>
      <PageHeading>{goal ? `Goal ${goal.goal_id}: ${goal.title}` : `Goal ${goalId}`}</PageHeading>
      {root ? (
        <p className="muted">
          In <code>{root}</code>, the new root a recovery made beside this one.
        </p>
      ) : null}
      {g.error ? <ErrorBox error={g.error} title="Could not open the Goal" /> : null}
      {!goal && !g.error ? <Loading what="the Goal" /> : null}
      {goal?.superseded_by ? <SupersededNotice goalId={goal.goal_id} by={goal.superseded_by} /> : null}
      {goal ? (
        <>
          <GoalFacts goal={goal} />
          {actionError ? <ErrorBox error={actionError} title="Refused" testId="goal-refusal" /> : null}
          <GoalActions goal={goal} act={act} busy={busy} headingRef={actionsHeading} />
          <StartRun goal={goal} busy={busy} onStart={startRun} />
          <TodosTable goal={goal} act={act} busy={busy} progress={progress.data} />
          {activity.data ? <GoalHolds activity={activity.data} root={root} /> : null}
          {progress.data ? (
            <section aria-labelledby="progress-heading" className="card">
              <h2 id="progress-heading">Progress</h2>
              <ProgressChart progress={progress.data} />
            </section>
          ) : null}
          {activity.data ? <GoalRuns activity={activity.data} root={root} /> : null}
          {activity.data ? <GoalEffects activity={activity.data} root={root} /> : null}
          <GoalHistory goalId={goalId} root={root} head={goal.committed_transactions} />
          {activity.error ? (
            <ErrorBox error={activity.error} title="Could not read the Goal's runs and effects" />
          ) : null}
        </>
      ) : null}
    </>
  );
}
