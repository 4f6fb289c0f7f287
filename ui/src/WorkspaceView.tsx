/**
 * An audit's recovery workspace read back (GET /api/audits/:recovery_id/workspace and
 * …/workspace/goals/:goal_id): the Goals, Todos, committed history, sessions, runs and effects the
 * inert workspace holds, as the owners' historical readers see them. Read only: nothing here
 * offers an action on what it shows, and run ids are not links (they are not runs of this root).
 */
import { useEffect, useRef, useState } from 'react';
import { enc } from './api';
import { useApiJson } from './hooks';
import { ErrorBox, ExecutionStatement, Loading, TableRegion, WORKSPACE_STATEMENT } from './components';
import type { WorkspaceFinding, WorkspaceGoalDetail, WorkspaceListing, WorkspaceRun } from './types';

const TODO_ORDER = ['open', 'blocked', 'deferred', 'done'];
const OUTCOME_ORDER = ['committed', 'absent', 'unknown', 'rejected', 'superseded', 'pending'];

/** "1 open, 1 blocked, 1 done": known keys in `order` first, then any other in the answer's order. */
export function countsText(by: Readonly<Record<string, number>>, order: readonly string[]): string {
  const keys = [...order.filter((k) => k in by), ...Object.keys(by).filter((k) => !order.includes(k))];
  return keys.map((k) => `${by[k]} ${k}`).join(', ') || 'none';
}

const GOAL_DETAIL_ID = 'workspace-goal';

export function WorkspaceSection({ recoveryId }: { recoveryId: string }) {
  const { data: ws, error } = useApiJson<WorkspaceListing>(`/api/audits/${enc(recoveryId)}/workspace`);
  const [open, setOpen] = useState<string | null>(null);
  // Closing the Goal returns focus to the button that opened it (the detail it had is gone).
  const close = (goalId: string) => {
    setOpen(null);
    document.querySelector<HTMLButtonElement>(`[data-goal-toggle="${CSS.escape(goalId)}"]`)?.focus();
  };

  return (
    <>
      <section aria-labelledby="workspace-heading" className="card" data-testid="workspace">
        <h2 id="workspace-heading">Workspace contents (read only)</h2>
        <ExecutionStatement text={WORKSPACE_STATEMENT} label="What the workspace is" />
        {error ? <ErrorBox error={error} title="Could not read the workspace" /> : null}
        {!ws && !error ? <Loading what="the workspace" /> : null}
        {ws ? <WorkspaceBody ws={ws} open={open} onToggle={(id) => (open === id ? close(id) : setOpen(id))} /> : null}
      </section>
      {open !== null ? (
        <WorkspaceGoal key={open} recoveryId={recoveryId} goalId={open} onClose={() => close(open)} />
      ) : null}
    </>
  );
}

function WorkspaceBody({
  ws,
  open,
  onToggle,
}: {
  ws: WorkspaceListing;
  open: string | null;
  onToggle: (goalId: string) => void;
}) {
  return (
    <>
      <WorkspaceFacts ws={ws} />

      <h3>Goals</h3>
      <WorkspaceGoals ws={ws} open={open} onToggle={onToggle} />

      <h3>Runs</h3>
      {!ws.runs_readable ? (
        <p className="muted">The workspace’s run store could not be read; see the findings.</p>
      ) : (
        <RunsTable runs={ws.runs} label="Workspace runs" testId="workspace-run-row" />
      )}

      {ws.findings.length > 0 ? (
        <>
          <h3>Readback findings</h3>
          <FindingsTable findings={ws.findings} label="Workspace findings" />
        </>
      ) : null}
    </>
  );
}

/** How much the workspace holds, and that it grants no execution authority. */
function WorkspaceFacts({ ws }: { ws: WorkspaceListing }) {
  return (
    <dl className="facts" data-testid="workspace-facts">
      <div>
        <dt>Goals</dt>
        <dd>{ws.goals.length}</dd>
      </div>
      <div>
        <dt>Runs</dt>
        <dd>{ws.runs_readable ? ws.runs.length : 'unreadable'}</dd>
      </div>
      <div>
        <dt>Sessions</dt>
        <dd data-testid="workspace-sessions">{ws.sessions}</dd>
      </div>
      <div>
        <dt>Effects by outcome</dt>
        <dd data-testid="workspace-effects">{countsText(ws.effects_by_outcome, OUTCOME_ORDER)}</dd>
      </div>
      <div>
        <dt>Execution authority</dt>
        <dd data-testid="workspace-execution-authority">
          {ws.execution_authority_granted ? 'granted' : 'not granted'}
        </dd>
      </div>
    </dl>
  );
}

/** The workspace's Goals, each with a button that opens its detail. */
function WorkspaceGoals({
  ws,
  open,
  onToggle,
}: {
  ws: WorkspaceListing;
  open: string | null;
  onToggle: (goalId: string) => void;
}) {
  if (ws.goals.length === 0) return <p className="muted">The workspace holds no readable Goal.</p>;
  return (
    <TableRegion label="Workspace Goals">
      <table>
        <caption className="visually-hidden">
          Goals in the workspace, with their Todos by status and committed transactions
        </caption>
        <thead>
          <tr>
            <th scope="col">Goal</th>
            <th scope="col">Title</th>
            <th scope="col">Lifecycle</th>
            <th scope="col">Todos</th>
            <th scope="col" className="num">
              Committed transactions
            </th>
            <th scope="col">
              <span className="visually-hidden">Details</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {ws.goals.map((g) => (
            <tr key={g.goal_id} data-testid="workspace-goal-row">
              <th scope="row">
                <code>{g.goal_id}</code>
              </th>
              <td>{g.title}</td>
              <td>{g.lifecycle}</td>
              <td data-testid="workspace-goal-todos">
                {g.work_readable ? countsText(g.todos_by_status, TODO_ORDER) : 'work store unreadable'}
              </td>
              <td className="num" data-testid="workspace-goal-transactions">
                {g.committed_transactions}
              </td>
              <td>
                <button
                  type="button"
                  data-goal-toggle={g.goal_id}
                  aria-expanded={open === g.goal_id}
                  aria-controls={open === g.goal_id ? GOAL_DETAIL_ID : undefined}
                  onClick={() => onToggle(g.goal_id)}
                >
                  {open === g.goal_id ? 'Close' : 'Open'}
                  <span className="visually-hidden"> Goal {g.goal_id}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

function WorkspaceGoal({ recoveryId, goalId, onClose }: { recoveryId: string; goalId: string; onClose: () => void }) {
  const { data: d, error } = useApiJson<WorkspaceGoalDetail>(
    `/api/audits/${enc(recoveryId)}/workspace/goals/${enc(goalId)}`,
  );
  const heading = useRef<HTMLHeadingElement>(null);
  // Opened by the operator: move focus to it, so the new content is announced.
  useEffect(() => {
    heading.current?.focus();
  }, []);

  return (
    <section id={GOAL_DETAIL_ID} aria-labelledby="workspace-goal-heading" className="card" data-testid="workspace-goal">
      <div className="section-head">
        <h2 id="workspace-goal-heading" ref={heading} tabIndex={-1}>
          Workspace Goal <code>{goalId}</code> (read only)
        </h2>
        <button type="button" onClick={onClose}>
          Close<span className="visually-hidden"> Goal {goalId}</span>
        </button>
      </div>
      <p className="muted">
        As the backup captured it: inert evidence, read without changing it. Nothing here runs, resumes or delivers
        again.
      </p>
      {error ? <ErrorBox error={error} title="Could not read the Goal" /> : null}
      {!d && !error ? <Loading what={`Goal ${goalId}`} /> : null}
      {d ? <GoalBody d={d} /> : null}
    </section>
  );
}

function GoalBody({ d }: { d: WorkspaceGoalDetail }) {
  return (
    <>
      <GoalFacts d={d} />

      <h3>Todos</h3>
      <TodosTable d={d} />

      <h3>Sessions</h3>
      <SessionsTable d={d} />

      <h3>Bound runs</h3>
      <RunsTable runs={d.runs} label="Runs bound to the Goal's sessions" testId="workspace-goal-run-row" />

      <h3>Effects</h3>
      <EffectsTable d={d} />

      {d.findings.length > 0 ? (
        <>
          <h3>Readback findings</h3>
          <FindingsTable findings={d.findings} label="Goal readback findings" />
        </>
      ) : null}
    </>
  );
}

/** The Goal's identity and lifecycle, its work store's facts, its documents, and that it grants no execution authority. */
function GoalFacts({ d }: { d: WorkspaceGoalDetail }) {
  const w = d.work;
  return (
    <dl className="facts">
      <div>
        <dt>Title</dt>
        <dd>{d.goal.title}</dd>
      </div>
      <div>
        <dt>Lifecycle</dt>
        <dd>{d.goal.lifecycle}</dd>
      </div>
      <div>
        <dt>Instance</dt>
        <dd>
          <code>{d.goal.goal_instance_id}</code>
        </dd>
      </div>
      <div>
        <dt>Work</dt>
        <dd>
          {w.readable ? (
            <>
              {w.committed_transactions} committed transactions, head cursor {w.head_cursor ?? '—'}
              {w.handoff_mode ? `, handoff ${w.handoff_mode}` : ''}; store <code>{w.store_identity ?? '—'}</code>
            </>
          ) : (
            'unreadable'
          )}
        </dd>
      </div>
      <div>
        <dt>Documents</dt>
        <dd>{d.goal.docs.length === 0 ? 'none' : d.goal.docs.map((x) => x.name).join(', ')}</dd>
      </div>
      <div>
        <dt>Execution authority</dt>
        <dd>{d.execution_authority_granted ? 'granted' : 'not granted'}</dd>
      </div>
    </dl>
  );
}

function TodosTable({ d }: { d: WorkspaceGoalDetail }) {
  if (d.todos.length === 0) return <p className="muted">No Todos.</p>;
  return (
    <TableRegion label="Workspace Todos">
      <table>
        <caption className="visually-hidden">Todos of Goal {d.goal.goal_id} in the workspace</caption>
        <thead>
          <tr>
            <th scope="col">Todo</th>
            <th scope="col">Title</th>
            <th scope="col">Status</th>
            <th scope="col" className="num">
              Priority
            </th>
            <th scope="col">Note</th>
            <th scope="col" className="num">
              Revision
            </th>
          </tr>
        </thead>
        <tbody>
          {d.todos.map((t) => (
            <tr key={t.todo_id} data-testid="workspace-todo-row">
              <th scope="row">
                <code>{t.todo_id}</code>
              </th>
              <td>{t.title}</td>
              <td>
                <span className={`badge todo-${t.status}`}>{t.status}</span>
              </td>
              <td className="num">{t.priority}</td>
              <td>{t.note ?? <span className="muted">—</span>}</td>
              <td className="num">{t.todo_revision}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

function SessionsTable({ d }: { d: WorkspaceGoalDetail }) {
  if (d.sessions.length === 0) return <p className="muted">No sessions.</p>;
  return (
    <TableRegion label="Workspace sessions">
      <table>
        <caption className="visually-hidden">
          Sessions bound to Goal {d.goal.goal_id}, with their run and generations
        </caption>
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col">Status</th>
            <th scope="col">Run</th>
            <th scope="col" className="num">
              Session generation
            </th>
            <th scope="col" className="num">
              Execution generation
            </th>
          </tr>
        </thead>
        <tbody>
          {d.sessions.map((s) => (
            <tr key={s.session_id} data-testid="workspace-session-row">
              <th scope="row">
                <code>{s.session_id}</code>
              </th>
              <td>{s.status}</td>
              <td>{s.run_id ? <code>{s.run_id}</code> : <span className="muted">none</span>}</td>
              <td className="num">{s.session_generation}</td>
              <td className="num">{s.execution_generation}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

/** Each effect with its recorded outcome and hold: evidence, never delivered again from here. */
function EffectsTable({ d }: { d: WorkspaceGoalDetail }) {
  if (d.effects.length === 0) return <p className="muted">No effects.</p>;
  return (
    <TableRegion label="Workspace effects">
      <table>
        <caption className="visually-hidden">Effects of Goal {d.goal.goal_id}, each with its recorded outcome</caption>
        <thead>
          <tr>
            <th scope="col">Operation</th>
            <th scope="col">Kind</th>
            <th scope="col">Target</th>
            <th scope="col">Outcome</th>
            <th scope="col">Hold</th>
            <th scope="col" className="num">
              Attempt
            </th>
          </tr>
        </thead>
        <tbody>
          {d.effects.map((e) => (
            <tr key={e.operation_id} data-testid="workspace-effect-row">
              <th scope="row">
                <code>{e.operation_id}</code>
              </th>
              <td>
                <code>{e.kind}</code>
              </td>
              <td>
                <code>{e.target}</code>
              </td>
              <td>
                <span className={`badge outcome-${e.outcome}`}>{e.outcome}</span>
              </td>
              <td>{e.hold ?? <span className="muted">none</span>}</td>
              <td className="num">{e.attempt}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

function RunsTable({ runs, label, testId }: { runs: readonly WorkspaceRun[]; label: string; testId: string }) {
  if (runs.length === 0) return <p className="muted">No runs.</p>;
  return (
    <TableRegion label={label}>
      <table>
        <caption className="visually-hidden">{label}: as recorded in the workspace, not runs of this root</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Lifecycle</th>
            <th scope="col" className="num">
              Turns
            </th>
            <th scope="col" className="num">
              Last sequence
            </th>
            <th scope="col">Definition</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.run_id} data-testid={testId}>
              <th scope="row">
                <code>{r.run_id}</code>
              </th>
              <td>
                <span className={`badge run-${r.lifecycle}`}>{r.lifecycle}</span>
              </td>
              <td className="num">{r.completed_turns}</td>
              <td className="num">{r.last_sequence}</td>
              <td>
                <code>{r.definition_id}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

function FindingsTable({ findings, label }: { findings: readonly WorkspaceFinding[]; label: string }) {
  return (
    <TableRegion label={label}>
      <table>
        <caption className="visually-hidden">{label}, each with its one next action</caption>
        <thead>
          <tr>
            <th scope="col">Code</th>
            <th scope="col">Severity</th>
            <th scope="col">Subject</th>
            <th scope="col">Next action</th>
          </tr>
        </thead>
        <tbody>
          {findings.map((f, i) => (
            <tr key={`${f.code}-${f.subject}-${i}`} data-testid="workspace-finding-row">
              <th scope="row">
                <code>{f.code}</code>
              </th>
              <td>
                <span className={`badge severity-${f.severity}`}>{f.severity}</span>
              </td>
              <td>
                <code>{f.subject}</code>
              </td>
              <td>{f.next_action}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}
