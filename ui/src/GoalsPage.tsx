/**
 * The Goals list: the daemon's root's Goals, then the Goals of each root one of its recoveries
 * made (GET /api/roots, GET /api/goals?root=<name>) — each with its lifecycle (`superseded` for a
 * lifetime a recovery replaced), lifetime, Todo counts, lease mode and last activity, linking to
 * its page (GoalDetail.tsx).
 */
import { ErrorBox, Loading, PageHeading, TableRegion, abbreviate } from './components';
import { countsText, when, type GoalItem } from './goalTypes';
import { useApiJson } from './hooks';
import { ROUTES, rootQuery } from './router';

interface RecoveredRoot {
  readonly name: string;
  readonly recovery_id: string;
  readonly goal_id: string;
  readonly state: string;
}

function GoalsTable({ goals, root, label }: { goals: readonly GoalItem[]; root: string | null; label: string }) {
  return (
    <TableRegion label={label}>
      <table className="reflow" data-testid={root ? `goals-table-${root}` : 'goals-table'}>
        <thead>
          <tr>
            <th scope="col">Goal</th>
            <th scope="col">Title</th>
            <th scope="col">Lifecycle</th>
            <th scope="col">Todos</th>
            <th scope="col">Lease mode</th>
            <th scope="col">Last activity</th>
            <th scope="col">Lifetime</th>
          </tr>
        </thead>
        <tbody>
          {goals.map((g) => (
            <tr key={g.goal_id}>
              <td data-label="Goal">
                <a href={ROUTES.goal(g.goal_id, root)}>{g.goal_id}</a>
              </td>
              <td data-label="Title">{g.title}</td>
              <td data-label="Lifecycle" data-testid={`goal-lifecycle-${g.goal_id}`}>
                {g.superseded_by ? (
                  <span
                    title={`Superseded by the recovery into ${g.superseded_by.root ?? `root id ${g.superseded_by.root_id}`}; it was ${g.lifecycle}`}
                  >
                    superseded
                  </span>
                ) : (
                  g.lifecycle
                )}
              </td>
              <td data-label="Todos">{countsText(g.counts)}</td>
              <td data-label="Lease mode">{g.handoff_mode}</td>
              <td data-label="Last activity">{when(g.last_activity)}</td>
              <td data-label="Lifetime">
                <code title={g.goal_instance_id}>{abbreviate(g.goal_instance_id, 14)}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

function RecoveredRootGoals({ root }: { root: RecoveredRoot }) {
  const { data, error } = useApiJson<{ goals: GoalItem[] }>(`/api/goals${rootQuery(root.name)}`);
  return (
    <section aria-labelledby={`root-${root.name}`} className="card">
      <h2 id={`root-${root.name}`}>
        Recovered into <code>{root.name}</code>
      </h2>
      <p className="muted">
        A new root beside this one, made by a recovery of Goal {root.goal_id} ({root.state.replace(/_/g, ' ')}). Its
        Goals continue there.
      </p>
      {error ? <ErrorBox error={error} title="Could not list its Goals" /> : null}
      {data ? <GoalsTable goals={data.goals} root={root.name} label={`Goals in ${root.name}`} /> : null}
    </section>
  );
}

export function GoalsPage() {
  const { data, error } = useApiJson<{ goals: GoalItem[] }>('/api/goals');
  const roots = useApiJson<{ roots: RecoveredRoot[] }>('/api/roots');
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
      {data && data.goals.length > 0 ? <GoalsTable goals={data.goals} root={null} label="Goals" /> : null}
      {roots.data?.roots.map((r) => (
        <RecoveredRootGoals key={r.name} root={r} />
      ))}
    </>
  );
}
