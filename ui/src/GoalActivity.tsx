/**
 * The Goal page's record of what happened: its holds (each with the owner that holds it and its
 * one next action, and a link to the run whose page settles it), its runs and sessions, the
 * effects it made with their outcomes, and its committed history one page at a time.
 */
import { useEffect, useRef, useState } from 'react';
import { ErrorBox, TableRegion, abbreviate } from './components';
import { deliveryWords } from './deliveries';
import { when, type GoalActivityDoc, type HistoryPageDoc } from './goalTypes';
import { useApiJson } from './hooks';
import { ROUTES, rootQuery } from './router';

export function GoalHolds({ activity, root }: { activity: GoalActivityDoc; root: string | null }) {
  return (
    <section aria-labelledby="holds-heading" className="card">
      <h2 id="holds-heading">Holds</h2>
      {activity.holds.length === 0 ? (
        <p data-testid="goal-no-holds">Nothing is held: no call with an unknown outcome, no run waiting for you.</p>
      ) : (
        <TableRegion label="Holds">
          <table className="reflow" data-testid="goal-holds">
            <thead>
              <tr>
                <th scope="col">What</th>
                <th scope="col">Owner</th>
                <th scope="col">Why</th>
                <th scope="col">Next action</th>
              </tr>
            </thead>
            <tbody>
              {activity.holds.map((h) => (
                <tr key={h.subject}>
                  <td data-label="What">
                    <code>{h.subject}</code>
                  </td>
                  <td data-label="Owner">{h.owner}</td>
                  <td data-label="Why">{h.reason.replace(/_/g, ' ')}</td>
                  <td data-label="Next action">
                    {h.run_id ? (
                      <>
                        <a href={ROUTES.run(h.run_id, root)}>Settle it on the run’s page</a>, or:{' '}
                        <code>{h.next_action.split(': ').slice(1).join(': ')}</code>
                      </>
                    ) : (
                      h.next_action
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      )}
    </section>
  );
}

export function GoalRuns({ activity, root }: { activity: GoalActivityDoc; root: string | null }) {
  return (
    <section aria-labelledby="runs-heading" className="card">
      <h2 id="runs-heading">Runs and sessions</h2>
      {activity.runs.length === 0 ? (
        <p>No run has worked on this Goal yet.</p>
      ) : (
        <TableRegion label="Runs of this Goal">
          <table className="reflow" data-testid="goal-runs">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Turns</th>
                <th scope="col">Session</th>
                <th scope="col">Session opened</th>
              </tr>
            </thead>
            <tbody>
              {activity.runs.map((r) => {
                const s = activity.sessions.find((x) => x.session_id === r.session_id);
                const status =
                  r.status === null
                    ? 'not started'
                    : r.waiting_for
                      ? `${r.status}, waiting for ${r.waiting_for === 'interaction' ? 'an answer' : 'a resolution'}`
                      : r.status;
                return (
                  <tr key={r.run_id}>
                    <td data-label="Run">
                      <a href={ROUTES.run(r.run_id, root)}>
                        <code>{r.run_id}</code>
                      </a>
                    </td>
                    <td data-label="Status">
                      {status}
                      {r.failure ? ` (${r.failure})` : ''}
                    </td>
                    <td data-label="Turns">{r.completed_turns ?? '—'}</td>
                    <td data-label="Session">
                      <code title={r.session_id}>{abbreviate(r.session_id, 14)}</code> {s ? `(${s.status})` : ''}
                    </td>
                    <td data-label="Session opened">{when(s?.created_at)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableRegion>
      )}
    </section>
  );
}

/** An effect as the table reads it, with what its receiver did with a delivery (deliveries.ts). */
type EffectRow = GoalActivityDoc['effects'][number];

/** An effect's outcome in words: a committed delivery the receiver already held says so, never passing for a fresh one. */
function effectOutcome(e: EffectRow): string {
  const delivery = e.outcome === 'committed' ? deliveryWords(e.delivery_result, e.duplicate_of) : null;
  return `${e.outcome}${delivery ? ` — ${delivery.text}` : ''}${e.hold ? ` (held: ${e.hold.replace(/_/g, ' ')})` : ''}`;
}

export function GoalEffects({ activity, root }: { activity: GoalActivityDoc; root: string | null }) {
  return (
    <section aria-labelledby="effects-heading" className="card">
      <h2 id="effects-heading">Effects</h2>
      {activity.effects.length === 0 ? (
        <p>This Goal has made no effect yet.</p>
      ) : (
        <TableRegion label="Effects of this Goal">
          <table className="reflow" data-testid="goal-effects">
            <thead>
              <tr>
                <th scope="col">Effect</th>
                <th scope="col">System</th>
                <th scope="col">Outcome</th>
                <th scope="col">Attempts</th>
                <th scope="col">Made by</th>
                <th scope="col">Settled</th>
              </tr>
            </thead>
            <tbody>
              {(activity.effects as readonly EffectRow[]).map((e) => {
                const deduplicated =
                  e.outcome === 'committed' && deliveryWords(e.delivery_result, e.duplicate_of)?.deduplicated === true;
                return (
                  <tr
                    key={e.operation_id}
                    data-outcome={e.outcome}
                    data-deduplicated={deduplicated || undefined}
                    className={deduplicated ? 'effect-deduplicated' : undefined}
                  >
                    <td data-label="Effect">{e.kind}</td>
                    <td data-label="System">{e.target}</td>
                    <td data-label="Outcome" data-testid="effect-outcome">
                      {effectOutcome(e)}
                    </td>
                    <td data-label="Attempts">{e.attempt}</td>
                    <td data-label="Made by">
                      {e.run_id ? <a href={ROUTES.run(e.run_id, root)}>{e.call_id}</a> : 'a recovery'}
                    </td>
                    <td data-label="Settled">{when(e.settled_at)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableRegion>
      )}
    </section>
  );
}

const PAGE = 25;

/** The committed history, newest page first; Older and Newer walk it a page at a time. */
type HistoryRow = HistoryPageDoc['transactions'][number];

/** The Todo a transaction changed (its id, title and status after it), each of a batch's, or a dash. */
function historyTodos(t: HistoryRow): string {
  const one = (id: string, title: string | null, status: string | null) =>
    `${id} ${title ?? ''}${status ? ` → ${status}` : ''}`;
  if (t.todos) return t.todos.map((x) => one(x.todo_id, x.todo_title, x.todo_status)).join('; ');
  return t.todo_id ? one(t.todo_id, t.todo_title, t.todo_status) : '—';
}

export function GoalHistory({ goalId, root, head }: { goalId: string; root: string | null; head: number }) {
  const [after, setAfter] = useState<number | null>(null);
  const { data, error, reload } = useApiJson<HistoryPageDoc>(
    `/api/goals/${encodeURIComponent(goalId)}/history?limit=${PAGE}${after !== null ? `&after=${after}` : ''}${rootQuery(root, '&')}`,
  );
  // On the newest page, new commits show as they land (the Goal page reads its head again).
  const seenHead = useRef(head);
  useEffect(() => {
    if (seenHead.current !== head && after === null) reload();
    seenHead.current = head;
  }, [head, after, reload]);
  return (
    <section aria-labelledby="history-heading" className="card">
      <h2 id="history-heading">Committed history</h2>
      {error ? <ErrorBox error={error} title="Could not read the history" /> : null}
      {data ? (
        <>
          <p data-testid="history-range">
            {data.transactions.length === 0
              ? 'Nothing committed yet.'
              : `Transactions ${data.transactions[0]!.cursor}–${data.transactions[data.transactions.length - 1]!.cursor} of ${data.head}, newest last.`}
          </p>
          <TableRegion label="Committed history">
            <table className="reflow" data-testid="goal-history">
              <thead>
                <tr>
                  <th scope="col" className="num">
                    #
                  </th>
                  <th scope="col">Committed</th>
                  <th scope="col">Change</th>
                  <th scope="col">Todo</th>
                </tr>
              </thead>
              <tbody>
                {data.transactions.map((t) => (
                  <tr key={t.cursor}>
                    <td data-label="#" className="num">
                      {t.cursor}
                    </td>
                    <td data-label="Committed">{when(t.committed_at)}</td>
                    <td data-label="Change">{t.operation.replace(/_/g, ' ')}</td>
                    <td data-label="Todo">{historyTodos(t)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
          <div className="actions">
            <button
              type="button"
              className="secondary"
              disabled={data.older === null}
              onClick={() => setAfter(data.older)}
            >
              Older
            </button>
            <button
              type="button"
              className="secondary"
              disabled={data.newer === null}
              onClick={() => setAfter(data.newer)}
            >
              Newer
            </button>
          </div>
        </>
      ) : null}
    </section>
  );
}
