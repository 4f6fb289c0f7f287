/** A run's status badge, and what an active run waits for or was asked to do. */
import type { RunSummary } from './types';

export function RunStatus({ run }: { run: RunSummary }) {
  return (
    <>
      <span className={`badge run-${run.status}`}>{run.status}</span>
      {run.waiting_for ? (
        <span className="muted">
          {' '}
          waiting for {run.waiting_for.kind === 'interaction' ? 'an answer' : 'a resolution'}
        </span>
      ) : null}
      {run.suspend_requested ? <span className="muted"> suspend requested</span> : null}
    </>
  );
}
