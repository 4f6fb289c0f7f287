/**
 * Settings ▸ Capability Center ▸ Runs ▸ one run: its status and the actions it allows now, the
 * question it asks or the uncertain calls it waits on, and its events — kept live (RunFollow.ts)
 * while the run is driven here, in another tab or by the command line, until it ends.
 */
import { ErrorBox, Loading, PageHeading } from './components';
import { RunAnswer } from './RunAnswer';
import { RunControls, useRunActions, type RunActions } from './RunActions';
import { RunEvents } from './RunEvents';
import { useRun, useRunEvents } from './RunFollow';
import { RunResolve } from './RunResolve';
import { RunStatus } from './RunStatus';
import { RunStreaming } from './RunStreaming';
import { ROUTES } from './router';
import type { RunView } from './types';

export function RunDetail({ runId, root = null }: { runId: string; root?: string | null }) {
  const { run, setRun, loadError, loadRun } = useRun(runId, root);
  const { events, follow, streamError, importedAt, refollow } = useRunEvents(runId, root, setRun, loadRun);
  const actions = useRunActions(runId, root, setRun, loadRun);
  const waiting = run?.waiting_for ?? null;

  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <a href={ROUTES.runs}>Runs</a> <span aria-hidden="true">▸</span> <span aria-current="page">{runId}</span>
      </nav>
      <PageHeading>
        Run <code>{runId}</code>
      </PageHeading>
      {loadError ? <ErrorBox error={loadError} title="Could not load the run" /> : null}
      {!run && !loadError ? <Loading what="the run" /> : null}
      {run ? <RunStatusCard run={run} actions={actions} /> : null}
      {run && waiting?.kind === 'interaction' ? <RunAnswer run={run} question={waiting} actions={actions} /> : null}
      {run && waiting?.kind === 'resolution' ? (
        <RunResolve
          run={run}
          calls={waiting.effects ?? waiting.call_ids.map((c) => ({ call_id: c, operation_id: c, outcome: null }))}
          actions={actions}
        />
      ) : null}
      <RunStreaming events={events} />
      <RunEvents
        events={events}
        follow={follow}
        status={run?.status ?? null}
        streamError={streamError}
        importedAt={importedAt}
        refollow={refollow}
      />
    </>
  );
}

/** The run's status, what it waits for, and the actions it allows now. */
function RunStatusCard({ run, actions }: { run: RunView; actions: RunActions }) {
  return (
    <section aria-labelledby="run-status-heading" className="card">
      <h2 id="run-status-heading">Status</h2>
      <RunFacts run={run} />
      <RunControls run={run} actions={actions} />
    </section>
  );
}

function RunFacts({ run }: { run: RunView }) {
  return (
    <dl className="facts">
      <div>
        <dt>Status</dt>
        <dd data-testid="run-status">
          <RunStatus run={run} />
        </dd>
      </div>
      <div>
        <dt>Turns</dt>
        <dd>
          {run.completed_turns} of at most {run.turn_limit}
        </dd>
      </div>
      {run.usage ? (
        <div>
          <dt>Model tokens</dt>
          <dd data-testid="run-usage">
            {run.usage.input_tokens + run.usage.output_tokens} ({run.usage.input_tokens} in, {run.usage.output_tokens}{' '}
            out{run.usage.estimated ? ', partly estimated' : ''})
          </dd>
        </div>
      ) : null}
      <div>
        <dt>Last sequence</dt>
        <dd>{run.last_sequence}</dd>
      </div>
      <div>
        <dt>Definition</dt>
        <dd>
          <code>
            {run.definition.id}@{run.definition.version}
          </code>
        </dd>
      </div>
      {run.failure ? (
        <div>
          <dt>Failure</dt>
          <dd>
            <code>{run.failure.code}</code> {run.failure.message}
          </dd>
        </div>
      ) : null}
      {run.failure?.next_action ? (
        <div>
          <dt>What to do</dt>
          <dd data-testid="run-failure-next">{run.failure.next_action}</dd>
        </div>
      ) : null}
    </dl>
  );
}
