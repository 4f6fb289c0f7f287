/**
 * Back up now: the daemon runs `loopx backup-state --execute` with the chosen capture profile into
 * the chosen folder — by default the user's backups folder, outside the root it protects — and says
 * plainly when the backup still shares the root's file system, and how to put it elsewhere.
 */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import './styles/notes.css';
import { ApiError, asApiError, enc, getJson, isAbort, postJson } from './api';
import { ErrorBox, formatBytes } from './components';
import type { DaemonBackupRun } from './generated/backup-run';

const PROFILES = [
  { value: 'online', label: 'Online: work keeps running' },
  { value: 'quiescent', label: 'Quiescent: one point in time' },
] as const;

const LOCATIONS = [
  { value: 'user', label: 'Your backups folder (outside this root)' },
  { value: 'root', label: 'This root’s backups/ (lost with it)' },
] as const;

type Phase =
  | { readonly kind: 'idle' }
  | { readonly kind: 'capturing'; readonly run: DaemonBackupRun }
  | { readonly kind: 'done'; readonly run: DaemonBackupRun }
  | { readonly kind: 'refused'; readonly error: ApiError };

const sleep = (ms: number) => new Promise<void>((r) => window.setTimeout(r, ms));

/** `onCreated` is called once a backup is published, so the pick list can offer it. */
export function BackupNow({ onCreated }: { onCreated: () => void }) {
  const profileId = useId();
  const locationId = useId();
  const [profile, setProfile] = useState<'online' | 'quiescent'>('quiescent');
  const [location, setLocation] = useState<'user' | 'root'>('user');
  const [phase, setPhase] = useState<Phase>({ kind: 'idle' });
  const abortRef = useRef<AbortController | null>(null);
  useEffect(() => () => abortRef.current?.abort(), []);

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (phase.kind === 'capturing') return;
    const ctrl = new AbortController();
    abortRef.current = ctrl;
    try {
      let run = await postJson<DaemonBackupRun>('/api/backups', { profile, location }, ctrl.signal);
      setPhase({ kind: 'capturing', run });
      while (run.state === 'capturing') {
        await sleep(400);
        run = await getJson<DaemonBackupRun>(`/api/backups/runs/${enc(run.job_id)}`, ctrl.signal);
      }
      setPhase({ kind: 'done', run });
      if (run.state === 'created') onCreated();
    } catch (e) {
      if (!isAbort(e)) setPhase({ kind: 'refused', error: asApiError(e) });
    }
  }

  const capturing = phase.kind === 'capturing';
  return (
    <section aria-labelledby="backup-now-heading" className="card" data-testid="backup-now">
      <h2 id="backup-now-heading">Back up now</h2>
      <BackupNowIntro />
      <form onSubmit={onSubmit}>
        <div className="field">
          <label htmlFor={profileId}>Capture profile</label>
          <select
            id={profileId}
            value={profile}
            disabled={capturing}
            onChange={(e) => setProfile(e.currentTarget.value as typeof profile)}
          >
            {PROFILES.map((p) => (
              <option key={p.value} value={p.value}>
                {p.label}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={locationId}>Destination</label>
          <select
            id={locationId}
            value={location}
            disabled={capturing}
            onChange={(e) => setLocation(e.currentTarget.value as typeof location)}
          >
            {LOCATIONS.map((l) => (
              <option key={l.value} value={l.value}>
                {l.label}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" className="primary" disabled={capturing}>
          {capturing ? 'Backing up…' : 'Back up now'}
        </button>
      </form>
      <Outcome phase={phase} />
    </section>
  );
}

/** What a backup is, and what the capture profiles and the backups folder mean. */
function BackupNowIntro() {
  return (
    <>
      <p className="muted">
        A private backup of this root, as <code>loopx backup-state --execute</code> makes it: an archive and its
        manifest. Keep one where losing this root cannot reach it.
      </p>
      <ul className="muted">
        <li>
          <strong>Quiescent</strong> holds new work while it captures: every Goal at one point in time.{' '}
          <strong>Online</strong> lets work run; a Goal that moved meanwhile cannot be recovered from it.
        </li>
        <li>
          <strong>Your backups folder</strong> is <code>$XDG_DATA_HOME/loopx/backups</code> (by default{' '}
          <code>~/.local/share/loopx/backups</code>), outside any root.
        </li>
      </ul>
    </>
  );
}

/** What a screen reader hears and the page shows: capturing, refused, or the backup and where it lies. */
function Outcome({ phase }: { phase: Phase }) {
  const capturing = phase.kind === 'capturing';
  return (
    <div aria-live="polite" data-testid="backup-now-result">
      {capturing ? (
        <p>
          <progress aria-label="Backing up" /> Capturing this root ({phase.run.requested_profile})…
        </p>
      ) : null}
      {phase.kind === 'refused' ? <ErrorBox error={phase.error} title="Not backed up" /> : null}
      {phase.kind === 'done' && phase.run.error ? (
        <ErrorBox
          error={
            new ApiError(409, {
              code: phase.run.error.code,
              message: phase.run.error.message,
              ...(phase.run.error.next_action ? { next_action: phase.run.error.next_action } : {}),
            })
          }
          title="Not backed up"
        />
      ) : null}
      {phase.kind === 'done' && phase.run.result ? <Created run={phase.run} result={phase.run.result} /> : null}
    </div>
  );
}

function Created({ run, result }: { run: DaemonBackupRun; result: NonNullable<DaemonBackupRun['result']> }) {
  return (
    <div>
      <p className="result-ok">
        Backed up: <strong>{result.backup_id}</strong> ({formatBytes(result.archive_bytes)}, {result.goals}{' '}
        {result.goals === 1 ? 'Goal' : 'Goals'}, capture profile {result.achieved_profile}) in{' '}
        {run.location === 'user' ? 'your backups folder' : 'this root’s backups/'}. Verify it below.
      </p>
      {result.warning ? (
        <div className="warning" role="note" data-testid="backup-now-warning">
          <p>
            <strong>{result.warning}</strong>
          </p>
          {result.elsewhere ? (
            <p>
              To keep one elsewhere, run <code>{result.elsewhere.replace(/^[^:]*: /, '')}</code> with a folder on
              another disk or host, or set <code>XDG_DATA_HOME</code> to one before starting the daemon.
            </p>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
