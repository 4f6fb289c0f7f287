/**
 * Settings ▸ Capability Center ▸ Recovery drill (#/settings/capability-center/drills[/<drill_id>]):
 * run the short recovery drill from the daemon (POST /api/drills) and follow its stages as they
 * start (the job's event stream), then read its receipt as pictures — each phase of the recovery
 * on one time axis with the frozen recovery-time target marked, and the recovery point as the
 * captured checkpoint beside the work after it (lost, known to the receiver, unknown) — and as a
 * table of every figure beside its target, MISSED said in words. Past drills are listed. The
 * drill runs on disposable synthetic state of its own, never this daemon's root; the page holds
 * nothing of its own: a reload finds a running drill and the kept receipts again.
 */
import { useEffect, useState } from 'react';
import { ApiError, asApiError, enc, getJson, isAbort, postJson } from './api';
import { ErrorBox, ExecutionStatement, Loading, PageHeading, TableRegion } from './components';
import type { DaemonRecoveryDrillJob } from './generated/drill-job';
import type { DaemonRecoveryDrillList } from './generated/drill-list';
import type { LoopxRecoverDrill } from './generated/drill-receipt';
import { useApiJson } from './hooks';
import { ROUTES } from './router';
import { readSse } from './sse';
import { RpoPicture, TimeBars, type Span } from './Timeline';

type DrillJob = DaemonRecoveryDrillJob;
type DrillList = DaemonRecoveryDrillList;
type DrillSummary = DrillList['drills'][number];
type Receipt = LoopxRecoverDrill;

const DRILL_STATEMENT =
  'A drill rehearses the recovery of one Goal end to end on disposable synthetic state — its own temporary roots, users and receiver, never this daemon’s root — and measures each figure against targets frozen before it runs. It grants no execution authority and changes nothing here but the list of drills.';

const PHASE_WORDS: Record<string, string> = {
  verify: 'Verify the backup',
  plan: 'Plan (preview)',
  apply: 'Confirm and apply',
  resolve: 'Resolve the holds',
  first_turn: 'Continue in the new root',
};

const MISSED_WORDS: Record<string, string> = {
  rto: 'recovery time',
  rpo: 'recovery point',
  human_actions: 'human actions',
  protected_duplicates: 'protected duplicates',
  old_writers: 'old writers rejected',
  fault_injection: 'crash points',
  cases: 'cases',
  continuation: 'continuation',
};

const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const utc = (iso: string) => `${iso.replace('T', ' ').slice(0, 19)} UTC`;

/** A figure's verdict, in words (never colour alone). */
function Verdict({ met }: { met: boolean }) {
  return <span className={met ? 'figure-met' : 'figure-missed'}>{met ? 'met' : 'MISSED'}</span>;
}

export function DrillPage({ drillId }: { drillId: string | null }) {
  const { data: list, error, reload } = useApiJson<DrillList>('/api/drills');
  const shown = drillId ?? list?.drills[0]?.drill_id ?? null;
  return (
    <>
      {drillId !== null ? (
        <nav aria-label="Breadcrumb" className="breadcrumb">
          <a href={ROUTES.drills}>Recovery drill</a> <span aria-hidden="true">▸</span>{' '}
          <span aria-current="page">{drillId}</span>
        </nav>
      ) : null}
      <PageHeading>Recovery drill</PageHeading>
      <ExecutionStatement text={DRILL_STATEMENT} label="What a drill does" />
      <RunCard running={list?.running ?? null} onEnd={reload} />
      {error ? <ErrorBox error={error} title="Could not read the drills" /> : null}
      {!list && !error ? <Loading what="the drills" /> : null}
      {shown !== null ? <ReceiptCard key={shown} drillId={shown} latest={drillId === null} /> : null}
      {list && list.drills.length === 0 && list.running === null ? (
        <p data-testid="no-drills">No drill has run from this daemon yet.</p>
      ) : null}
      {list && list.drills.length > 0 ? <PastDrills drills={list.drills} shown={shown} /> : null}
    </>
  );
}

// ---- Run a drill ----

interface Followed {
  readonly jobId: string | null;
  readonly stages: readonly string[];
  readonly result: DrillJob | null;
  readonly error: ApiError | null;
}
const NOT_FOLLOWED: Followed = { jobId: null, stages: [], result: null, error: null };

/** Follow job `jobId`'s stages until its result (the stream sends every stage so far first, then each as it starts). */
function useDrillJob(jobId: string | null, onEnd: () => void): Followed {
  const [state, setState] = useState<Followed>(NOT_FOLLOWED);
  useEffect(() => {
    if (jobId === null) return;
    const ctrl = new AbortController();
    const update = (change: Partial<Followed>) =>
      setState((s) => ({ ...(s.jobId === jobId ? s : { ...NOT_FOLLOWED, jobId }), ...change }));
    let ended: DrillJob | null = null;
    readSse(`/api/drills/jobs/${enc(jobId)}/events`, {
      signal: ctrl.signal,
      onMessage: (m) => {
        if (m.event === 'progress') {
          const stage = (JSON.parse(m.data) as { stage: string }).stage;
          setState((s) =>
            s.jobId === jobId ? { ...s, stages: [...s.stages, stage] } : { ...NOT_FOLLOWED, jobId, stages: [stage] },
          );
        } else if (m.event === 'result') ended = JSON.parse(m.data) as DrillJob;
      },
    })
      .then(async () => ended ?? (await getJson<DrillJob>(`/api/drills/jobs/${enc(jobId)}`, ctrl.signal)))
      .then(
        (job) => {
          if (ctrl.signal.aborted) return;
          update({ result: job });
          onEnd();
        },
        (e: unknown) => {
          if (!isAbort(e)) update({ error: asApiError(e) });
        },
      );
    return () => ctrl.abort();
  }, [jobId, onEnd]);
  return state.jobId === jobId ? state : { ...NOT_FOLLOWED, jobId };
}

function RunCard({ running, onEnd }: { running: DrillJob | null; onEnd: () => void }) {
  const [started, setStarted] = useState<DrillJob | null>(null);
  const [refusal, setRefusal] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  // A drill found running (started before this page, or in another tab) is followed to its end.
  const [found, setFound] = useState<string | null>(null);
  if (running !== null && started === null && found !== running.job_id) setFound(running.job_id);
  const jobId = started?.job_id ?? found;
  const { stages, result, error } = useDrillJob(jobId, onEnd);
  const runningNow = jobId !== null && result === null && error === null;

  async function start() {
    setBusy(true);
    setRefusal(null);
    try {
      setStarted(await postJson<DrillJob>('/api/drills'));
    } catch (e) {
      setRefusal(asApiError(e));
      onEnd(); // a drill that runs already is found, and followed
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="run-drill-heading" className="card" data-testid="drill-run">
      <h2 id="run-drill-heading">Run a drill</h2>
      <p>
        The short drill (<code>loopx recover drill --short</code>) loses a synthetic source, recovers its Goal from a
        verified backup into a new root, continues its work, and crashes the apply at two owner commit points. It takes
        about a minute.
      </p>
      <button type="button" disabled={busy || runningNow} onClick={() => void start()}>
        {runningNow ? 'A drill is running…' : 'Run a short drill'}
      </button>
      {refusal ? <ErrorBox error={refusal} title="The drill did not start" testId="drill-refusal" /> : null}
      {jobId !== null ? <Stages stages={stages} running={runningNow} /> : null}
      {error ? <ErrorBox error={error} title="Lost the drill’s progress" /> : null}
      {result ? <JobOutcome job={result} /> : null}
    </section>
  );
}

function Stages({ stages, running }: { stages: readonly string[]; running: boolean }) {
  const current = running ? stages.length - 1 : -1;
  return (
    <>
      <p role="status" data-testid="drill-progress">
        {running
          ? stages.length === 0
            ? 'The drill is starting…'
            : `Stage ${stages.length}: ${stages[stages.length - 1]}`
          : `The drill ran ${stages.length} stages.`}
      </p>
      {running ? <progress aria-label="The drill is running" /> : null}
      <ol className="drill-stages" data-testid="drill-stages">
        {stages.map((s, i) => (
          <li key={`${i}-${s}`} className={i === current ? 'drill-stage-current' : undefined}>
            {s} — {i === current ? 'running' : 'done'}
          </li>
        ))}
      </ol>
    </>
  );
}

function JobOutcome({ job }: { job: DrillJob }) {
  if (job.state === 'failed' || job.drill_id === null) {
    const e = job.error ?? {
      code: 'ui_unexpected_response',
      message: 'The drill ended without a receipt or a typed reason.',
      next_action: null,
    };
    return (
      <ErrorBox
        error={
          new ApiError(0, {
            code: e.code,
            message: e.message,
            ...(e.next_action ? { next_action: e.next_action } : {}),
          })
        }
        title="The drill kept no receipt"
      />
    );
  }
  return (
    <p data-testid="drill-outcome">
      The drill ended:{' '}
      {job.result === 'targets_met' ? (
        'every target met'
      ) : (
        <strong className="figure-missed">MISSED: {job.missed.map((m) => MISSED_WORDS[m] ?? m).join(', ')}</strong>
      )}
      . Its receipt: <a href={ROUTES.drill(job.drill_id)}>{job.drill_id}</a>.
    </p>
  );
}

// ---- A receipt ----

function ReceiptCard({ drillId, latest }: { drillId: string; latest: boolean }) {
  const { data: r, error } = useApiJson<Receipt>(`/api/drills/${enc(drillId)}`);
  return (
    <section aria-labelledby="receipt-heading" className="card" data-testid="drill-receipt">
      <h2 id="receipt-heading">
        {latest ? 'The latest drill' : 'Drill'} <code>{drillId}</code>
      </h2>
      {error ? <ErrorBox error={error} title="Could not read the receipt" /> : null}
      {!r && !error ? <Loading what="the receipt" /> : null}
      {r ? (
        <>
          <p
            className={`status-badge ${r.result === 'targets_met' ? 'drill-result-met' : 'drill-result-missed'}`}
            data-testid="drill-result"
          >
            {r.result === 'targets_met'
              ? 'Every target met'
              : `MISSED: ${r.missed.map((m) => MISSED_WORDS[m] ?? m).join(', ')}`}
          </p>
          <p className="muted">
            The {r.mode} drill, started {utc(r.started_at)}, ended {utc(r.finished_at)}.
          </p>
          <RtoFigure r={r} />
          <RpoFigure r={r} />
          <FiguresTable r={r} />
          <CasesTable r={r} />
        </>
      ) : null}
    </section>
  );
}

function RtoFigure({ r }: { r: Receipt }) {
  const target = r.rto.target_seconds;
  // The phases follow each other: each starts where the ones before it ended.
  const spans: Span[] = r.phases.map((p, i) => ({
    key: p.phase,
    label: `${PHASE_WORDS[p.phase] ?? p.phase}: ${sec(p.elapsed_ms)}`,
    startMs: r.phases.slice(0, i).reduce((t, q) => t + q.elapsed_ms, 0),
    ms: p.elapsed_ms,
  }));
  spans.push({
    key: 'rto',
    label: (
      <strong>
        Recovery time, to the first admitted turn: {r.rto.seconds.toFixed(1)} s — target ≤ {target} s —{' '}
        <Verdict met={r.rto.met} />
      </strong>
    ),
    startMs: 0,
    ms: r.rto.seconds * 1000,
    missed: !r.rto.met,
  });
  return (
    <>
      <h3>Recovery time (RTO)</h3>
      <figure className="rto" data-testid="drill-rto">
        <TimeBars spans={spans} targetMs={target * 1000} testId="drill-timeline" />
        <figcaption>
          Each phase of the recovery as a bar on one time axis, from the moment the backup and its manifest were
          supplied; the red line marks the {target} s target frozen in the drill’s definition. The recovery reached its
          first admitted turn in the new root after {r.rto.seconds.toFixed(1)} s (the continuation’s run goes on after
          it): {r.rto.met ? 'within the target' : `the target was MISSED by ${(r.rto.seconds - target).toFixed(1)} s`}.
        </figcaption>
      </figure>
    </>
  );
}

function RpoFigure({ r }: { r: Receipt }) {
  const claimed = r.rpo.claimed_beyond_checkpoint;
  return (
    <>
      <h3>Recovery point (RPO)</h3>
      <RpoPicture
        testId="drill-rpo"
        point={{
          captured: {
            transactions: r.rpo.checkpoint.work_cursor,
            endedAt: r.rpo.checkpoint.captured_at_end,
            profile: r.rpo.checkpoint.profile,
          },
          lostLocally: r.rpo.work_items_lost_locally,
          committedAfter: r.rpo.committed_after_capture,
          unknown: r.lost_or_unknown.unknown,
          claimedBeyond: claimed,
        }}
        caption={
          <>
            The target is the last captured checkpoint: nothing after it may be claimed as recovered. Claimed beyond it:{' '}
            {claimed} work transactions — <Verdict met={r.rpo.met} />. The source worked on for{' '}
            {r.rpo.capture_to_loss_seconds.toFixed(1)} s after the capture before it was lost; the oldest write the new
            root lacks was {r.rpo.seconds.toFixed(1)} s old then (at most {r.rpo.capture_to_loss_seconds.toFixed(1)} s),
            and it lacks {r.rpo.work_items_lost_locally} work transactions (at most {r.rpo.work_items_lost_at_most}).
          </>
        }
      />
    </>
  );
}

/** Every figure of the receipt beside its target. */
function figureRows(r: Receipt): [string, string, string, boolean][] {
  const casesMet = r.cases.filter((c) => c.met).length;
  return [
    ['Recovery time (RTO)', `${r.rto.seconds.toFixed(1)} s`, `≤ ${r.rto.target_seconds} s`, r.rto.met],
    [
      'Recovery point (RPO)',
      `${r.rpo.seconds.toFixed(1)} s, ${r.rpo.work_items_lost_locally} work transactions lost, ${r.rpo.claimed_beyond_checkpoint} claimed beyond the checkpoint`,
      `the last captured checkpoint: ≤ ${r.rpo.capture_to_loss_seconds.toFixed(1)} s (capture to loss), ≤ ${r.rpo.work_items_lost_at_most} lost`,
      r.rpo.met,
    ],
    [
      'Human actions',
      `${r.human_actions.count}`,
      `≤ ${r.human_actions.limit} (with ${r.human_actions.visible_holds} visible holds)`,
      r.human_actions.met,
    ],
    [
      'Protected duplicate operations',
      `${r.protected_duplicates.count}`,
      `${r.protected_duplicates.target}`,
      r.protected_duplicates.met,
    ],
    [
      'Old writers rejected',
      `${r.old_writers.rejected} of ${r.old_writers.attempted} (${r.old_writers.percent} %)`,
      `${r.old_writers.target_percent} %`,
      r.old_writers.met,
    ],
    [
      'Crashes at owner commit points',
      `${r.fault_injection.converged} of ${r.fault_injection.points} converged, ${r.fault_injection.deliveries_sent} deliveries sent`,
      'all converge, none sent',
      r.fault_injection.met,
    ],
    ['Refusals and variants', `${casesMet} of ${r.cases.length} as expected`, 'all', r.cases.every((c) => c.met)],
    [
      'Continuation',
      `run ${r.continued.run_status}; Todo done in the new lifetime: ${r.continued.todo_done_in_new_lifetime ? 'yes' : 'no'}`,
      'completed, Todo done',
      r.continued.met,
    ],
  ];
}

function FiguresTable({ r }: { r: Receipt }) {
  return (
    <>
      <h3>Every figure beside its target</h3>
      <TableRegion label="Figures and targets">
        <table data-testid="drill-figures">
          <thead>
            <tr>
              <th scope="col">Figure</th>
              <th scope="col">Measured</th>
              <th scope="col">Target</th>
              <th scope="col">Verdict</th>
            </tr>
          </thead>
          <tbody>
            {figureRows(r).map(([name, measured, target, met]) => (
              <tr key={name}>
                <th scope="row">{name}</th>
                <td>{measured}</td>
                <td>{target}</td>
                <td>
                  <Verdict met={met} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </>
  );
}

function CasesTable({ r }: { r: Receipt }) {
  return (
    <details>
      <summary>
        Refusals and variants ({r.cases.filter((c) => c.met).length} of {r.cases.length} as expected)
      </summary>
      <TableRegion label="Refusals and variants">
        <table>
          <thead>
            <tr>
              <th scope="col">Case</th>
              <th scope="col">Expected</th>
              <th scope="col">Observed</th>
              <th scope="col">Verdict</th>
            </tr>
          </thead>
          <tbody>
            {r.cases.map((c) => (
              <tr key={c.case}>
                <th scope="row">{c.case}</th>
                <td>{c.expected}</td>
                <td>{c.observed}</td>
                <td>
                  <Verdict met={c.met} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </details>
  );
}

// ---- Past drills ----

function PastDrills({ drills, shown }: { drills: readonly DrillSummary[]; shown: string | null }) {
  return (
    <section aria-labelledby="past-drills-heading" className="card">
      <h2 id="past-drills-heading">Past drills</h2>
      <TableRegion label="Past drills">
        <table data-testid="drill-list">
          <thead>
            <tr>
              <th scope="col">Drill</th>
              <th scope="col">Started</th>
              <th scope="col">Result</th>
              <th scope="col" className="num">
                RTO
              </th>
            </tr>
          </thead>
          <tbody>
            {drills.map((d) => (
              <tr key={d.drill_id}>
                <th scope="row">
                  <a href={ROUTES.drill(d.drill_id)} aria-current={d.drill_id === shown ? 'true' : undefined}>
                    <code>{d.drill_id}</code>
                  </a>
                </th>
                <td>{utc(d.started_at)}</td>
                <td>
                  {d.result === 'targets_met' ? (
                    'every target met'
                  ) : (
                    <span className="figure-missed">
                      MISSED: {d.missed.map((m) => MISSED_WORDS[m] ?? m).join(', ')}
                    </span>
                  )}
                </td>
                <td className="num">
                  {d.rto.seconds.toFixed(1)} s <Verdict met={d.rto.met} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </section>
  );
}
