/** Settings ▸ Capability Center ▸ Backup & recovery: verify a backup, and the list of audits. */
import {
  useCallback,
  useEffect,
  useId,
  useRef,
  useState,
  type Dispatch,
  type FormEvent,
  type SetStateAction,
} from 'react';
import { ApiError, asApiError, enc, getJson, isAbort, postJson, putBytes } from './api';
import { useApiJson } from './hooks';
import { ErrorBox, ExecutionStatement, Loading, PageHeading, TableRegion, abbreviate, formatBytes } from './components';
import { ROUTES, navigate } from './router';
import { sourceText } from './AuditContents';
import { readSse } from './sse';
import type { AuditListItem, Job, JobProgress, VerifyStep } from './types';
import { BackupNow } from './BackupNow';

export function BackupPage() {
  return (
    <>
      <PageHeading>Backup &amp; recovery</PageHeading>
      <ExecutionStatement />
      <BackupAndVerify />
      <AuditList />
    </>
  );
}

// ---- Verify a backup ----

type StepKey = 'upload-archive' | 'upload-manifest' | VerifyStep;

const STEPS: readonly { readonly key: StepKey; readonly label: string; readonly hint: string }[] = [
  {
    key: 'upload-archive',
    label: 'Upload archive',
    hint: 'the archive’s bytes, to a private staging directory of the daemon',
  },
  { key: 'upload-manifest', label: 'Upload manifest', hint: 'the external manifest’s bytes' },
  {
    key: 'inputs',
    label: 'Inputs',
    hint: 'the manifest is read and the archive’s digest and size are checked before anything is decompressed',
  },
  { key: 'destination', label: 'Destination', hint: 'a new, private directory and the declared limits' },
  { key: 'members', label: 'Members', hint: 'every planned member is checked before anything is written' },
  { key: 'extract', label: 'Extract', hint: 'streamed, witnessed extraction into the inert workspace' },
  { key: 'owners', label: 'Owners', hint: 'each owner reads its state back in a disposable worker' },
  { key: 'audit', label: 'Audit', hint: 'the content-addressed recovery audit is written' },
];

type StepState =
  | { readonly state: 'waiting' }
  | { readonly state: 'running'; readonly done: number; readonly total: number }
  | { readonly state: 'done' }
  | { readonly state: 'failed' };

type Steps = Readonly<Record<StepKey, StepState>>;

const initialSteps = (): Steps =>
  Object.fromEntries(STEPS.map((s) => [s.key, { state: 'waiting' }])) as unknown as Steps;

/** `key` is running at done/total: every earlier step is done. */
function advance(steps: Steps, key: StepKey, done: number, total: number): Steps {
  const index = STEPS.findIndex((s) => s.key === key);
  const next: Record<string, StepState> = { ...steps };
  STEPS.forEach((s, i) => {
    if (i < index) next[s.key] = { state: 'done' };
  });
  next[key] = { state: 'running', done, total };
  return next as Steps;
}

function finishAll(): Steps {
  return Object.fromEntries(STEPS.map((s) => [s.key, { state: 'done' }])) as unknown as Steps;
}

function failRunning(steps: Steps): Steps {
  const next: Record<string, StepState> = { ...steps };
  for (const s of STEPS) if (steps[s.key].state === 'running') next[s.key] = { state: 'failed' };
  return next as Steps;
}

type Phase =
  | { readonly kind: 'idle' }
  | { readonly kind: 'running' }
  | { readonly kind: 'refused'; readonly error: ApiError }
  | { readonly kind: 'finished'; readonly job: Job };

const sleep = (ms: number) => new Promise<void>((r) => window.setTimeout(r, ms));

interface ListedBackup {
  readonly backup_id: string;
  readonly archive_bytes: number;
  /** `user`: the user's backups folder; `root`: this root's backups/. */
  readonly location: 'user' | 'root';
}

/** The backups the daemon can verify in place, read again whenever `generation` changes (an empty list when it cannot say). */
function useListedBackups(generation: number): readonly ListedBackup[] {
  const [listed, setListed] = useState<readonly ListedBackup[]>([]);
  useEffect(() => {
    const ctrl = new AbortController();
    getJson<{ backups: ListedBackup[] }>('/api/backups', ctrl.signal).then(
      (r) => setListed(r.backups),
      () => setListed([]),
    );
    return () => ctrl.abort();
  }, [generation]);
  return listed;
}

/** Back up now, then the verification that reads the new backup back. */
function BackupAndVerify() {
  const [generation, setGeneration] = useState(0);
  return (
    <>
      <BackupNow onCreated={() => setGeneration((g) => g + 1)} />
      <VerifyBackup listed={useListedBackups(generation)} />
    </>
  );
}

/** How a verification run reports its steps and what a screen reader hears. */
interface Reporter {
  readonly setSteps: Dispatch<SetStateAction<Steps>>;
  readonly setAnnounce: (text: string) => void;
}

/** Upload the pair, then start verifying the upload; returns the job id. */
async function startUpload(r: Reporter, archiveFile: File, manifestFile: File, signal: AbortSignal): Promise<string> {
  const { setSteps, setAnnounce } = r;
  const { upload_id } = await postJson<{ upload_id: string }>('/api/backups/uploads', undefined, signal);
  setAnnounce('Uploading the archive');
  setSteps((s) => advance(s, 'upload-archive', 0, archiveFile.size));
  await putBytes(
    `/api/backups/uploads/${enc(upload_id)}/archive`,
    archiveFile,
    (done, total) => setSteps((s) => advance(s, 'upload-archive', done, total)),
    signal,
  );
  setAnnounce('Uploading the manifest');
  setSteps((s) => advance(s, 'upload-manifest', 0, manifestFile.size));
  await putBytes(
    `/api/backups/uploads/${enc(upload_id)}/manifest`,
    manifestFile,
    (done, total) => setSteps((s) => advance(s, 'upload-manifest', done, total)),
    signal,
  );
  setSteps((s) => advance(s, 'inputs', 0, 1));
  setAnnounce('Verifying');
  const { job_id } = await postJson<{ job_id: string }>(
    `/api/backups/uploads/${enc(upload_id)}/verify`,
    undefined,
    signal,
  );
  return job_id;
}

/** Start verifying a listed backup (`<location>/<backup id>`) in place; returns the job id. */
async function startPicked(r: Reporter, picked: string, signal: AbortSignal): Promise<string> {
  const [location, backupId] = picked.split('/', 2) as [string, string];
  r.setSteps((s) => advance(s, 'inputs', 0, 1));
  r.setAnnounce('Verifying');
  const { job_id } = await postJson<{ job_id: string }>(`/api/backups/${enc(backupId)}/verify`, { location }, signal);
  return job_id;
}

/** Follow the job's events; if the stream ends without a result, ask for the job and follow again. */
async function follow(job_id: string, signal: AbortSignal, onProgress: (p: JobProgress) => void): Promise<Job> {
  for (let attempt = 0; ; attempt++) {
    let result: Job | null = null;
    await readSse(`/api/backups/jobs/${enc(job_id)}/events`, {
      signal,
      onMessage: (m) => {
        if (m.event === 'progress') onProgress(JSON.parse(m.data) as JobProgress);
        else if (m.event === 'result') result = JSON.parse(m.data) as Job;
      },
    });
    if (signal.aborted) throw new DOMException('aborted', 'AbortError');
    if (result) return result;
    const job = await getJson<Job>(`/api/backups/jobs/${enc(job_id)}`, signal);
    if (job.state !== 'verifying') return job;
    if (job.progress) onProgress(job.progress);
    await sleep(Math.min(250 * 2 ** attempt, 2000));
  }
}

/** The refusal a job that ended without an audit carries (or says it did not). */
function jobRefusal(job: Job): ApiError {
  return new ApiError(
    422,
    job.error
      ? {
          code: job.error.code,
          message: job.error.message,
          ...(job.error.next_action ? { next_action: job.error.next_action } : {}),
        }
      : { code: 'ui_unexpected_response', message: 'The verification ended without an audit or a typed reason.' },
  );
}

/** One verification at a time: its phase, its steps and its announcements; a new one (or leaving the page) aborts the last. */
function useVerification() {
  const [phase, setPhase] = useState<Phase>({ kind: 'idle' });
  const [steps, setSteps] = useState<Steps>(initialSteps);
  const [announce, setAnnounce] = useState('');
  const abortRef = useRef<AbortController | null>(null);

  useEffect(() => () => abortRef.current?.abort(), []);

  const lastStep = useRef<string | null>(null);

  const onProgress = useCallback((p: JobProgress) => {
    if (!STEPS.some((x) => x.key === p.step)) return;
    if (lastStep.current !== p.step) {
      lastStep.current = p.step;
      setAnnounce(`Verifying: ${STEPS.find((x) => x.key === p.step)?.label ?? p.step}`);
    }
    setSteps((s) => advance(s, p.step, p.done, p.total));
  }, []);

  /** Verify the picked backup of this root, or else the uploaded pair. */
  async function verify(picked: string, archive: File | null, manifest: File | null) {
    abortRef.current?.abort();
    const ctrl = new AbortController();
    abortRef.current = ctrl;
    lastStep.current = null;
    setSteps(initialSteps());
    setPhase({ kind: 'running' });
    const reporter: Reporter = { setSteps, setAnnounce };
    try {
      const jobId =
        picked !== ''
          ? await startPicked(reporter, picked, ctrl.signal)
          : await startUpload(reporter, archive!, manifest!, ctrl.signal);
      const job = await follow(jobId, ctrl.signal, onProgress);
      if (job.state === 'refused' || !job.recovery_id) {
        const error = jobRefusal(job);
        setSteps(failRunning);
        setPhase({ kind: 'refused', error });
        setAnnounce('Verification refused');
        return;
      }
      setSteps(finishAll());
      setPhase({ kind: 'finished', job });
      setAnnounce(`Verification finished: ${job.state}`);
      navigate(ROUTES.audit(job.recovery_id));
    } catch (e) {
      if (isAbort(e)) return;
      setSteps(failRunning);
      setPhase({ kind: 'refused', error: asApiError(e) });
      setAnnounce('Verification refused');
    }
  }

  return { phase, steps, announce, verify };
}

function FileField({
  id,
  label,
  accept,
  file,
  disabled,
  onFile,
}: {
  id: string;
  label: string;
  accept: string;
  file: File | null;
  disabled: boolean;
  onFile: (f: File | null) => void;
}) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="file"
        accept={accept}
        disabled={disabled}
        onChange={(e) => onFile(e.currentTarget.files?.[0] ?? null)}
      />
      {file ? <span className="muted file-note">{formatBytes(file.size)}</span> : null}
    </div>
  );
}

function VerifyBackup({ listed }: { listed: readonly ListedBackup[] }) {
  const archiveId = useId();
  const manifestId = useId();
  const [archive, setArchive] = useState<File | null>(null);
  const [manifest, setManifest] = useState<File | null>(null);
  const [missing, setMissing] = useState<string | null>(null);
  const [picked, setPicked] = useState('');
  const pickId = useId();
  const { phase, steps, announce, verify } = useVerification();

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (phase.kind === 'running') return;
    if (picked === '' && (!archive || !manifest)) {
      setMissing(
        !archive && !manifest
          ? 'Choose the archive and its manifest, or pick a backup made on this machine.'
          : !archive
            ? 'Choose the archive (.tar.gz).'
            : 'Choose the manifest (.json).',
      );
      return;
    }
    setMissing(null);
    await verify(picked, archive, manifest);
  }

  const running = phase.kind === 'running';
  return (
    <section aria-labelledby="verify-heading" className="card">
      <h2 id="verify-heading">Verify a backup</h2>
      <p className="muted">
        Choose a backup pair made by <strong>Back up now</strong> or <code>loopx backup-state --execute</code>: the
        archive and its external manifest. The daemon checks them and extracts them into a new, inert directory with a
        recovery audit.
      </p>
      <form onSubmit={onSubmit} noValidate>
        <FileField
          id={archiveId}
          label="Backup archive (.tar.gz)"
          accept=".gz,.tgz,application/gzip"
          file={archive}
          disabled={running}
          onFile={setArchive}
        />
        <FileField
          id={manifestId}
          label="Backup manifest (.json)"
          accept=".json,application/json"
          file={manifest}
          disabled={running}
          onFile={setManifest}
        />
        <div className="field">
          <label htmlFor={pickId}>Or pick a backup made on this machine</label>
          <select id={pickId} value={picked} disabled={running} onChange={(e) => setPicked(e.currentTarget.value)}>
            <option value="">— upload the files above —</option>
            {listed.map((b) => (
              <option key={`${b.location}/${b.backup_id}`} value={`${b.location}/${b.backup_id}`}>
                {b.backup_id} ({formatBytes(b.archive_bytes)}) —{' '}
                {b.location === 'user' ? 'in your backups folder' : 'in this root’s backups/'}
              </option>
            ))}
          </select>
        </div>
        {missing ? (
          <p className="field-error" role="alert">
            {missing}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={running}>
          {running ? 'Verifying…' : 'Verify'}
        </button>
      </form>
      <VerifyStatus phase={phase} steps={steps} announce={announce} />
    </section>
  );
}

/** What a screen reader hears, the outcome, and each step's progress once a verification started. */
function VerifyStatus({ phase, steps, announce }: { phase: Phase; steps: Steps; announce: string }) {
  const showSteps = phase.kind !== 'idle';
  return (
    <>
      <p className="visually-hidden" aria-live="polite" aria-atomic="true">
        {announce}
      </p>

      <div aria-live="polite">
        {phase.kind === 'refused' ? (
          <ErrorBox error={phase.error} title="Verification refused" testId="job-error-code" />
        ) : null}
        {phase.kind === 'finished' ? (
          <p className="result-ok">
            Verification finished: <strong>{phase.job.state}</strong>.{' '}
            {phase.job.recovery_id ? <a href={ROUTES.audit(phase.job.recovery_id)}>Open the audit</a> : null}
          </p>
        ) : null}
      </div>

      {showSteps ? (
        <ol className="steps" aria-label="Verification progress">
          {STEPS.map((s) => (
            <StepRow
              key={s.key}
              label={s.label}
              hint={s.hint}
              state={steps[s.key]}
              bytes={s.key === 'upload-archive' || s.key === 'upload-manifest' || s.key === 'extract'}
            />
          ))}
        </ol>
      ) : null}
    </>
  );
}

function StepRow({ label, hint, state, bytes }: { label: string; hint: string; state: StepState; bytes: boolean }) {
  const id = useId();
  let status: string;
  let progress;
  switch (state.state) {
    case 'waiting':
      status = 'waiting';
      progress = <progress id={id} max={1} value={0} />;
      break;
    case 'done':
      status = 'done';
      progress = <progress id={id} max={1} value={1} />;
      break;
    case 'failed':
      status = 'stopped here';
      progress = <progress id={id} max={1} value={0} />;
      break;
    case 'running': {
      const determinate = state.total > 0 && state.done > 0;
      const pct = state.total > 0 ? Math.floor((100 * state.done) / state.total) : 0;
      status = determinate
        ? bytes
          ? `${pct}% (${formatBytes(state.done)} of ${formatBytes(state.total)})`
          : `${state.done} of ${state.total}`
        : 'running';
      progress = determinate ? (
        <progress id={id} max={state.total} value={Math.min(state.done, state.total)} />
      ) : (
        <progress id={id} />
      );
      break;
    }
  }
  return (
    <li className={`step step-${state.state}`} data-testid="verify-step">
      <label htmlFor={id} className="step-label">
        <span className="step-name">{label}</span> <span className="step-status">— {status}</span>
      </label>
      {progress}
      <span className="step-hint muted">{hint}</span>
    </li>
  );
}

// ---- Audits ----

function AuditList() {
  const { data, error, reload } = useApiJson<{ audits: AuditListItem[] }>('/api/audits');
  const audits = data?.audits ?? null;

  return (
    <section aria-labelledby="audits-heading" className="card">
      <div className="section-head">
        <h2 id="audits-heading">Audits</h2>
        <button type="button" onClick={reload}>
          Refresh audits
        </button>
      </div>
      {error ? <ErrorBox error={error} title="Could not list the audits" /> : null}
      {audits === null && !error ? <Loading what="audits" /> : null}
      {audits !== null && audits.length === 0 ? (
        <p className="muted">No audits yet. Verify a backup above; each verification writes one.</p>
      ) : null}
      {audits !== null && audits.length > 0 ? (
        <TableRegion label="Audits">
          <table className="reflow">
            <caption className="visually-hidden">
              Recovery audits, newest first: when each was made, from which backup, its Goals and its state
            </caption>
            <thead>
              <tr>
                <th scope="col">Made</th>
                <th scope="col">Source</th>
                <th scope="col" className="num">
                  Goals
                </th>
                <th scope="col">State</th>
                <th scope="col">Audit</th>
              </tr>
            </thead>
            <tbody>
              {audits.map((a) => (
                <tr key={a.recovery_id} data-testid="audit-list-row">
                  <th scope="row">
                    <time dateTime={a.verified_at}>{a.verified_at}</time>
                  </th>
                  <td data-label="Source" data-testid="audit-list-source">
                    {sourceText(a.source)}
                    <span className="muted scope">
                      backup made <time dateTime={a.source.backup_created_at}>{a.source.backup_created_at}</time>
                    </span>
                  </td>
                  <td data-label="Goals" className="num" data-testid="audit-list-goals">
                    {a.goals}
                  </td>
                  <td data-label="State">
                    <span className={`badge phase-${a.phase}`}>{a.phase}</span>{' '}
                    <span className="muted">{a.operator_state}</span>
                  </td>
                  <td data-label="Audit">
                    <a
                      href={ROUTES.audit(a.recovery_id)}
                      aria-label={`Open audit ${abbreviate(a.recovery_id)} of backup ${a.backup_id}`}
                      title={a.recovery_id}
                    >
                      <code>{abbreviate(a.recovery_id)}</code>
                    </a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      ) : null}
    </section>
  );
}
