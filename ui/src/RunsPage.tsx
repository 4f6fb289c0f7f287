/** Settings ▸ Capability Center ▸ Runs: the runs of the root, importing a snapshot, and one run's detail. */
import { useCallback, useEffect, useId, useRef, useState, type Dispatch, type FormEvent, type SetStateAction } from 'react';
import { ApiError, apiFetch, asApiError, enc, getJson, isAbort, postJson, saveBlob } from './api';
import { useApiJson } from './hooks';
import { ErrorBox, Loading, PageHeading, TableRegion, abbreviate, formatBytes } from './components';
import { ROUTES } from './router';
import { readSse } from './sse';
import type { ImportReceipt, RunEvent, RunSummary, RunView } from './types';

export function RunsPage() {
  const { data, error, reload: refresh } = useApiJson<{ runs: RunView[] }>('/api/runs');
  const runs = data?.runs ?? null;

  return (
    <>
      <PageHeading>Runs</PageHeading>
      <section aria-labelledby="runs-heading" className="card">
        <div className="section-head">
          <h2 id="runs-heading">Runs of this root</h2>
          <button type="button" onClick={refresh}>
            Refresh runs
          </button>
        </div>
        {error ? <ErrorBox error={error} title="Could not list the runs" /> : null}
        {runs === null && !error ? <Loading what="runs" /> : null}
        {runs !== null && runs.length === 0 ? (
          <p className="muted">
            No runs in this root yet. Start one with <code>loopx run start</code>, or import a snapshot below.
          </p>
        ) : null}
        {runs !== null && runs.length > 0 ? (
          <TableRegion label="Runs">
            <table>
              <caption className="visually-hidden">Runs, oldest first</caption>
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Status</th>
                  <th scope="col">Turns</th>
                  <th scope="col">Last sequence</th>
                  <th scope="col">Definition</th>
                </tr>
              </thead>
              <tbody>
                {runs.map((r) => (
                  <tr key={r.run_id} data-testid="run-row">
                    <th scope="row">
                      <a href={ROUTES.run(r.run_id)}>
                        <code>{r.run_id}</code>
                      </a>
                    </th>
                    <td>
                      <RunStatus run={r} />
                    </td>
                    <td className="num">
                      {r.completed_turns} / {r.turn_limit}
                    </td>
                    <td className="num">{r.last_sequence}</td>
                    <td>
                      <code>
                        {r.definition.id}@{r.definition.version}
                      </code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        ) : null}
      </section>
      <ImportSnapshot onImported={refresh} />
    </>
  );
}

function RunStatus({ run }: { run: RunSummary }) {
  return (
    <>
      <span className={`badge run-${run.status}`}>{run.status}</span>
      {run.waiting_for ? <span className="muted"> waiting for {run.waiting_for.kind === 'interaction' ? 'an answer' : 'a resolution'}</span> : null}
      {run.suspend_requested ? <span className="muted"> suspend requested</span> : null}
    </>
  );
}

function ImportSnapshot({ onImported }: { onImported: () => void }) {
  const inputId = useId();
  const [file, setFile] = useState<File | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [result, setResult] = useState<ImportReceipt | null>(null);
  const [missing, setMissing] = useState(false);

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (busy) return;
    if (!file) {
      setMissing(true);
      return;
    }
    setMissing(false);
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      const res = await apiFetch('/api/runs/import', {
        method: 'POST',
        headers: { Accept: 'application/json', 'Content-Type': 'application/octet-stream' },
        body: file,
      });
      setResult((await res.json()) as ImportReceipt);
      onImported();
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="import-heading" className="card">
      <h2 id="import-heading">Import a run</h2>
      <p className="muted">
        Take a suspended run’s signed snapshot (made by <code>loopx run export</code> or Export below) into this root, once. Both roots must share your run authority.
      </p>
      <form onSubmit={onSubmit} noValidate>
        <div className="field">
          <label htmlFor={inputId}>Snapshot file (.snapshot)</label>
          <input id={inputId} type="file" accept=".snapshot,application/octet-stream" disabled={busy} onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </div>
        {missing ? (
          <p className="field-error" role="alert">
            Choose a snapshot file.
          </p>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? 'Importing…' : 'Import'}
        </button>
      </form>
      <div aria-live="polite">
        {result ? (
          <p className="result-ok">
            Imported run <a href={ROUTES.run(result.run_id)}>{result.run_id}</a>: {result.status}, last sequence {result.last_sequence}.
          </p>
        ) : null}
      </div>
      {error ? <ErrorBox error={error} title="Import refused" /> : null}
    </section>
  );
}

// ---- one run ----

function parseStreamError(data: string): ApiError {
  let body: { code?: unknown; message?: unknown; next_action?: unknown; details?: unknown } = {};
  try {
    const parsed = JSON.parse(data) as typeof body & { error?: typeof body };
    body = parsed.error ?? parsed;
  } catch {
    // not JSON
  }
  return new ApiError(0, {
    code: typeof body.code === 'string' ? body.code : 'ui_stream_interrupted',
    message: typeof body.message === 'string' ? body.message : 'The daemon stopped the event stream.',
    ...(typeof body.next_action === 'string' ? { next_action: body.next_action } : {}),
    details: body.details,
  });
}

const SUMMARY_EVENTS = new Set(['Suspended', 'Resumed', 'Completed', 'Cancelled', 'Failed', 'TurnCompleted', 'InteractionRequested', 'InteractionAnswered', 'ToolResulted']);

type Follow = 'connecting' | 'following' | 'ended' | 'error';

/** The run, loaded when the view opens and again through loadRun. */
function useRun(runId: string) {
  const [run, setRun] = useState<RunView | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);

  const loadRun = useCallback(
    async (signal?: AbortSignal) => {
      const r = await getJson<RunView>(`/api/runs/${enc(runId)}`, signal);
      setRun(r);
      setLoadError(null);
      return r;
    },
    [runId],
  );

  // App.tsx keys RunDetail by its run id: another run is a new component with fresh state, so
  // nothing here resets it (a setState in the effect body would render twice). The first load
  // sets state in its promise's callbacks: react-hooks/set-state-in-effect takes a setState after
  // an await inside loadRun for a synchronous one (react/react#34905).
  useEffect(() => {
    const ctrl = new AbortController();
    getJson<RunView>(`/api/runs/${enc(runId)}`, ctrl.signal).then(
      (r) => {
        setRun(r);
        setLoadError(null);
      },
      (e: unknown) => {
        if (!isAbort(e)) setLoadError(asApiError(e));
      },
    );
    return () => ctrl.abort();
  }, [runId]);

  return { run, setRun, loadError, loadRun };
}

/** What following a run's events changes in the view. */
interface FollowHandlers {
  readonly setFollow: (f: Follow) => void;
  readonly setEvents: Dispatch<SetStateAction<readonly RunEvent[]>>;
  readonly setStreamError: (e: ApiError | null) => void;
  readonly setImportedAt: (n: number) => void;
  readonly loadRun: (signal?: AbortSignal) => Promise<RunView>;
}

/**
 * The cursor an imported run's refusal names: details.recovery_cursor, else the `--after N` of its
 * next action (an imported run has no events before its snapshot).
 */
function namedCursor(err: ApiError): number | undefined {
  const detail = (err.details as { recovery_cursor?: unknown } | undefined)?.recovery_cursor;
  const fromNext = /--after (\d+)/.exec(err.nextAction ?? '')?.[1];
  return typeof detail === 'number' ? detail : fromNext !== undefined ? Number(fromNext) : undefined;
}

/** Follow the run's events from the last one seen; refresh the run when the stream ends, and follow again while it is driven. */
async function followRun(runId: string, signal: AbortSignal, lastSeen: { current: number }, h: FollowHandlers): Promise<void> {
  const { setFollow, setEvents, setStreamError, setImportedAt, loadRun } = h;
  for (let pass = 0; !signal.aborted; pass++) {
    setFollow(pass === 0 ? 'connecting' : 'following');
    let received = 0;
    let streamFailure: ApiError | null = null;
    try {
      await readSse(`/api/runs/${enc(runId)}/events?after=${lastSeen.current}`, {
        signal,
        lastEventId: lastSeen.current > 0 ? String(lastSeen.current) : null,
        onMessage: (m) => {
          if (m.event === 'error') {
            // The daemon ends the stream with `event: error` when the engine refuses mid-stream.
            streamFailure = parseStreamError(m.data);
            return;
          }
          let ev: RunEvent;
          try {
            ev = JSON.parse(m.data) as RunEvent;
          } catch {
            return;
          }
          if (typeof ev.sequence !== 'number' || ev.sequence <= lastSeen.current) return;
          lastSeen.current = ev.sequence;
          received++;
          setFollow('following');
          setEvents((prev) => [...prev, ev]);
          if (SUMMARY_EVENTS.has(ev.type)) void loadRun(signal).catch(() => undefined);
        },
      });
      if (streamFailure) throw streamFailure;
    } catch (e) {
      if (isAbort(e) || signal.aborted) return;
      const err = asApiError(e);
      // An imported run: start at the cursor the daemon names, else at the run's last sequence.
      if (err.code === 'cursor_before_snapshot') {
        let cursor = namedCursor(err);
        if (cursor === undefined) cursor = (await loadRun(signal).catch(() => null))?.last_sequence;
        if (cursor !== undefined && cursor > lastSeen.current) {
          lastSeen.current = cursor;
          setImportedAt(cursor);
          continue;
        }
      }
      setStreamError(err);
      setFollow('error');
      return;
    }
    if (signal.aborted) return;
    setStreamError(null);
    let r: RunView;
    try {
      r = await loadRun(signal);
    } catch {
      setFollow('ended');
      return;
    }
    // The daemon follows while the run is active and driven; when it ended the stream, stop unless events are still coming.
    if (r.status !== 'active' || r.waiting_for || received === 0) {
      setFollow('ended');
      return;
    }
    await new Promise((res) => window.setTimeout(res, 500));
  }
}

/** The run's events as they arrive; `refollow` opens the stream again. */
function useRunEvents(runId: string, loadRun: (signal?: AbortSignal) => Promise<RunView>) {
  const [events, setEvents] = useState<readonly RunEvent[]>([]);
  const [follow, setFollow] = useState<Follow>('connecting');
  const [streamError, setStreamError] = useState<ApiError | null>(null);
  const [streamGeneration, setStreamGeneration] = useState(0);
  const lastSeen = useRef(0);
  const [importedAt, setImportedAt] = useState<number | null>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    void followRun(runId, ctrl.signal, lastSeen, { setFollow, setEvents, setStreamError, setImportedAt, loadRun });
    return () => ctrl.abort();
  }, [runId, streamGeneration, loadRun]);

  const refollow = useCallback(() => setStreamGeneration((g) => g + 1), []);
  return { events, follow, streamError, importedAt, refollow };
}

/** Suspend, resume (optionally for some turns) and export, one at a time; a suspend or resume follows the events again. */
function useRunActions(runId: string, setRun: Dispatch<SetStateAction<RunView | null>>, refollow: () => void) {
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const [actionNote, setActionNote] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [turns, setTurns] = useState('');

  async function act(name: 'suspend' | 'resume' | 'export') {
    setBusy(name);
    setActionError(null);
    setActionNote('');
    try {
      if (name === 'export') {
        const res = await apiFetch(`/api/runs/${enc(runId)}/export`, { method: 'POST', headers: { Accept: 'application/octet-stream' } });
        const blob = await res.blob();
        saveBlob(new Blob([blob], { type: 'application/octet-stream' }), `${runId}.snapshot`);
        const sha = res.headers.get('x-loopx-sha256');
        setActionNote(`Exported ${runId}.snapshot (${formatBytes(blob.size)}${sha ? `, SHA-256 ${abbreviate(sha, 16)}` : ''}).`);
        return;
      }
      let body: unknown;
      if (name === 'resume') {
        const n = Number.parseInt(turns, 10);
        body = turns.trim() !== '' && Number.isFinite(n) ? { turns: n } : {};
      }
      const summary = await postJson<RunSummary>(`/api/runs/${enc(runId)}/${name}`, body);
      setRun((prev) => (prev ? { ...prev, ...summary } : prev));
      setActionNote(
        name === 'suspend'
          ? summary.status === 'suspended'
            ? 'Suspended.'
            : `Suspend requested: the run suspends at its next completed turn boundary (status ${summary.status}).`
          : `Resumed: status ${summary.status}, ${summary.completed_turns} turns, last sequence ${summary.last_sequence}.`,
      );
      refollow();
    } catch (e) {
      setActionError(asApiError(e));
    } finally {
      setBusy(null);
    }
  }

  return { act, busy, actionError, actionNote, turns, setTurns };
}

type RunActions = ReturnType<typeof useRunActions>;

export function RunDetail({ runId }: { runId: string }) {
  const { run, setRun, loadError, loadRun } = useRun(runId);
  const { events, follow, streamError, importedAt, refollow } = useRunEvents(runId, loadRun);
  const actions = useRunActions(runId, setRun, refollow);

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
      <RunEvents events={events} follow={follow} streamError={streamError} importedAt={importedAt} refollow={refollow} />
    </>
  );
}

/** The run's status, what it waits for, and the actions it allows now. */
function RunStatusCard({ run, actions }: { run: RunView; actions: RunActions }) {
  const { act, busy, actionError, actionNote, turns, setTurns } = actions;
  const turnsId = useId();
  const canSuspend = run.status === 'active';
  const canResume = run.status === 'suspended' || run.status === 'active';
  const canExport = run.status !== 'active';
  return (
    <section aria-labelledby="run-status-heading" className="card">
      <h2 id="run-status-heading">Status</h2>
      <RunFacts run={run} />

      <div className="actions">
        <button type="button" onClick={() => void act('suspend')} disabled={!canSuspend || busy !== null}>
          {busy === 'suspend' ? 'Suspending…' : 'Suspend'}
        </button>
        <span className="inline-field">
          <label htmlFor={turnsId}>Turns to resume (optional)</label>
          <input id={turnsId} type="number" min={1} step={1} inputMode="numeric" value={turns} onChange={(e) => setTurns(e.currentTarget.value)} />
        </span>
        <button type="button" onClick={() => void act('resume')} disabled={!canResume || busy !== null}>
          {busy === 'resume' ? 'Resuming…' : 'Resume'}
        </button>
        <button type="button" onClick={() => void act('export')} disabled={!canExport || busy !== null}>
          {busy === 'export' ? 'Exporting…' : 'Export'}
        </button>
      </div>
      <p className="muted">Suspend takes effect at the next completed turn boundary. Export saves the signed snapshot of a suspended or finished run.</p>
      <p aria-live="polite" className="result-ok">
        {actionNote}
      </p>
      {actionError ? <ErrorBox error={actionError} title="Refused" /> : null}
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
      {run.waiting_for?.kind === 'interaction' ? (
        <div>
          <dt>Waiting for an answer</dt>
          <dd>
            “{run.waiting_for.prompt}” (interaction <code>{run.waiting_for.interaction_id}</code>; answer with{' '}
            <code>
              loopx run answer {run.run_id} {run.waiting_for.interaction_id} …
            </code>
            )
          </dd>
        </div>
      ) : null}
      {run.waiting_for?.kind === 'resolution' ? (
        <div>
          <dt>Waiting for a resolution</dt>
          <dd>
            mutating calls with an unknown outcome:{' '}
            {run.waiting_for.call_ids.map((c) => (
              <code key={c}>{c} </code>
            ))}{' '}
            (settle each with <code>loopx run resolve</code>)
          </dd>
        </div>
      ) : null}
      {run.failure ? (
        <div>
          <dt>Failure</dt>
          <dd>
            <code>{run.failure.code}</code> {run.failure.message}
          </dd>
        </div>
      ) : null}
    </dl>
  );
}

/** The events shown, whether they are followed live, and why not. */
function RunEvents({
  events,
  follow,
  streamError,
  importedAt,
  refollow,
}: {
  events: readonly RunEvent[];
  follow: Follow;
  streamError: ApiError | null;
  importedAt: number | null;
  refollow: () => void;
}) {
  return (
    <section aria-labelledby="run-events-heading" className="card">
      <div className="section-head">
        <h2 id="run-events-heading">Events</h2>
        {follow === 'ended' || follow === 'error' ? (
          <button type="button" onClick={refollow}>
            Follow again
          </button>
        ) : null}
      </div>
      <p className="muted">
        <span role="status" data-testid="run-follow-state">
          {follow === 'connecting' ? 'Connecting to the event stream…' : null}
          {follow === 'following' ? 'Following new events live.' : null}
          {follow === 'ended' ? 'Not following: the run is not being driven right now.' : null}
          {follow === 'error' ? 'The event stream stopped.' : null}
        </span>{' '}
        <span>{events.length === 1 ? '1 event' : `${events.length} events`} shown.</span>
      </p>
      {importedAt !== null ? (
        <p className="muted" data-testid="run-imported-note">
          This run came into this root by import: events up to sequence {importedAt} are not here; the list starts after it.
        </p>
      ) : null}
      {streamError ? <ErrorBox error={streamError} title="Could not follow the events" /> : null}
      <div role="log" aria-label="Run events" className="event-log" tabIndex={0}>
        <ol className="events">
          {events.map((e) => (
            <li key={e.sequence} data-testid="run-event">
              <span className="ev-seq">{e.sequence}</span> <span className="ev-type">{e.type}</span>{' '}
              <time className="ev-at muted" dateTime={e.at}>
                {e.at}
              </time>{' '}
              <code className="ev-data">{JSON.stringify(e.data)}</code>
            </li>
          ))}
        </ol>
      </div>
    </section>
  );
}
