/**
 * What the Repositories page does to a repository: back this root up into it (sealed for the
 * recipients named, by public key or by reference), and verify one of its backups into an audit —
 * an encrypted one with its key by reference (`env:NAME` or a key file's path), which the daemon
 * reads; the key itself is never typed here. Each runs as a job of the daemon, read back until it
 * ends; a verified backup's audit is where a Goal is recovered from it.
 */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { asApiError, isAbort, type ApiError } from './api';
import { ErrorBox, formatBytes } from './components';
import {
  jobEnded,
  jobRefusal,
  startRepositoryBackup,
  startRepositoryVerify,
  type RepositoryJob,
  type RepositoryListing,
} from './repositoryApi';
import { ROUTES } from './router';

type Phase =
  | { readonly kind: 'idle' }
  | { readonly kind: 'running'; readonly job: RepositoryJob | null }
  | { readonly kind: 'done'; readonly job: RepositoryJob }
  | { readonly kind: 'refused'; readonly error: ApiError };

/** One job at a time per form: started, read back until it ends; leaving the page stops reading it. */
function useJob(onDone: () => void) {
  const [phase, setPhase] = useState<Phase>({ kind: 'idle' });
  const abortRef = useRef<AbortController | null>(null);
  useEffect(() => () => abortRef.current?.abort(), []);
  async function run(start: (signal: AbortSignal) => Promise<RepositoryJob>) {
    abortRef.current?.abort();
    const ctrl = new AbortController();
    abortRef.current = ctrl;
    setPhase({ kind: 'running', job: null });
    try {
      const job = await jobEnded(await start(ctrl.signal), ctrl.signal, (j) => setPhase({ kind: 'running', job: j }));
      setPhase(job.state === 'done' ? { kind: 'done', job } : { kind: 'refused', error: jobRefusal(job) });
      if (job.state === 'done') onDone();
    } catch (e) {
      if (!isAbort(e)) setPhase({ kind: 'refused', error: asApiError(e) });
    }
  }
  return { phase, run };
}

/** The recipients typed one per line (blank lines dropped). */
const recipientsOf = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

export function RepositoryBackupForm({
  url,
  listing,
  onCreated,
}: {
  url: string;
  listing: RepositoryListing;
  onCreated: () => void;
}) {
  const profileId = useId();
  const [profile, setProfile] = useState<'online' | 'quiescent'>('quiescent');
  const [recipients, setRecipients] = useState('');
  const [missing, setMissing] = useState<string | null>(null);
  const { phase, run } = useJob(onCreated);
  const required = listing.repository.encryption === 'required';

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (phase.kind === 'running') return;
    const list = recipientsOf(recipients);
    if (required && list.length === 0) {
      setMissing('This repository keeps only encrypted backups: name at least one recipient.');
      return;
    }
    setMissing(null);
    await run((signal) =>
      startRepositoryBackup({ repository: url, profile, ...(list.length > 0 ? { recipients: list } : {}) }, signal),
    );
  }

  const running = phase.kind === 'running';
  return (
    <section aria-labelledby="repository-backup-heading" className="card" data-testid="repository-backup">
      <h2 id="repository-backup-heading">Back this root up into the repository</h2>
      <form onSubmit={onSubmit} noValidate>
        <div className="field">
          <label htmlFor={profileId}>Capture profile</label>
          <select
            id={profileId}
            value={profile}
            disabled={running}
            onChange={(e) => setProfile(e.currentTarget.value as typeof profile)}
          >
            <option value="quiescent">Quiescent: one point in time</option>
            <option value="online">Online: work keeps running</option>
          </select>
        </div>
        <RecipientsField value={recipients} onChange={setRecipients} disabled={running} required={required} />
        {missing ? (
          <p className="field-error" role="alert">
            {missing}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={running}>
          {running ? 'Backing up…' : 'Back up to this repository'}
        </button>
      </form>
      <BackupOutcome phase={phase} profile={profile} />
    </section>
  );
}

/** Who the backup is sealed for, one per line: public keys, or passphrases by reference. */
function RecipientsField({
  value,
  onChange,
  disabled,
  required,
}: {
  value: string;
  onChange: (v: string) => void;
  disabled: boolean;
  required: boolean;
}) {
  const id = useId();
  const hintId = useId();
  return (
    <div className="field field-stacked">
      <label htmlFor={id}>Encrypt for (one recipient per line)</label>
      <textarea
        id={id}
        rows={3}
        value={value}
        disabled={disabled}
        spellCheck={false}
        aria-describedby={hintId}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
      <p id={hintId} className="muted">
        A public key (<code>loopx-x25519-pub:…</code>, from <code>loopx repo key new</code>) or a passphrase by
        reference (<code>env:NAME</code>).{' '}
        {required
          ? 'Required: this repository keeps only encrypted backups.'
          : 'Leave it empty for a backup that is not encrypted.'}
      </p>
    </div>
  );
}

/** What a screen reader hears and the page shows: capturing, refused, or the backup made. */
function BackupOutcome({ phase, profile }: { phase: Phase; profile: string }) {
  return (
    <div aria-live="polite" data-testid="repository-backup-result">
      {phase.kind === 'running' ? (
        <p>
          <progress aria-label="Backing up into the repository" /> Capturing this root ({profile})…
        </p>
      ) : null}
      {phase.kind === 'refused' ? <ErrorBox error={phase.error} title="Not backed up" /> : null}
      {phase.kind === 'done' ? <BackedUp job={phase.job} /> : null}
    </div>
  );
}

function BackedUp({ job }: { job: RepositoryJob }) {
  const b = job.backup;
  if (b === null) return null;
  return (
    <>
      <p className="result-ok">
        Backed up: <strong>{b.backup_id}</strong> ({formatBytes(b.archive_bytes)}, {b.goals}{' '}
        {b.goals === 1 ? 'Goal' : 'Goals'}, capture profile {b.achieved_profile},{' '}
        {b.encrypted ? 'encrypted' : 'not encrypted'}) into repository <code>{job.repository_id}</code>.
      </p>
      {b.warning ? (
        <div className="warning" role="note">
          <p>
            <strong>{b.warning}</strong>
          </p>
        </div>
      ) : null}
    </>
  );
}

export function RepositoryVerifyForm({
  url,
  listing,
  onVerified,
}: {
  url: string;
  listing: RepositoryListing;
  onVerified: () => void;
}) {
  const pickId = useId();
  // Unpicked: the newest, also after a new backup joins the listing.
  const [picked, setPicked] = useState<string | null>(null);
  const [key, setKey] = useState('');
  const [missing, setMissing] = useState<string | null>(null);
  const { phase, run } = useJob(onVerified);
  const backup = listing.backups.find((b) => b.backup_id === picked) ?? listing.backups[0];

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (phase.kind === 'running' || backup === undefined) return;
    if (backup.encrypted && key.trim() === '') {
      setMissing('This backup is encrypted: give its key by reference (env:NAME or a key file’s path).');
      return;
    }
    setMissing(null);
    const k = backup.encrypted ? key.trim() : undefined;
    await run((signal) =>
      startRepositoryVerify({ repository: url, backupId: backup.backup_id, ...(k ? { key: k } : {}) }, signal),
    );
  }

  if (backup === undefined) return null;
  const running = phase.kind === 'running';
  return (
    <section aria-labelledby="repository-verify-heading" className="card" data-testid="repository-verify">
      <h2 id="repository-verify-heading">Verify a backup from the repository</h2>
      <p className="muted">
        The daemon fetches it, checks every digest against the repository’s record and verifies it like any backup into
        a new, inert workspace with a recovery audit. A Goal is recovered from that audit.
      </p>
      <form onSubmit={onSubmit} noValidate>
        <div className="field">
          <label htmlFor={pickId}>Backup to verify</label>
          <select
            id={pickId}
            value={backup.backup_id}
            disabled={running}
            onChange={(e) => setPicked(e.currentTarget.value)}
          >
            {listing.backups.map((b) => (
              <option key={b.backup_id} value={b.backup_id}>
                {b.backup_id} ({b.encrypted ? 'encrypted' : 'not encrypted'})
              </option>
            ))}
          </select>
        </div>
        {backup.encrypted ? <KeyField value={key} onChange={setKey} disabled={running} /> : null}
        {missing ? (
          <p className="field-error" role="alert">
            {missing}
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={running}>
          {running ? 'Verifying…' : 'Verify'}
        </button>
      </form>
      <VerifyOutcome phase={phase} />
    </section>
  );
}

/** An encrypted backup's key, asked for by reference only. */
function KeyField({ value, onChange, disabled }: { value: string; onChange: (v: string) => void; disabled: boolean }) {
  const id = useId();
  const hintId = useId();
  return (
    <div className="field field-stacked">
      <label htmlFor={id}>Key (env:NAME or a file path)</label>
      <input
        id={id}
        type="text"
        value={value}
        disabled={disabled}
        spellCheck={false}
        autoComplete="off"
        aria-describedby={hintId}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
      <p id={hintId} className="muted">
        A reference the daemon reads: a variable of its environment (<code>env:NAME</code>) or the absolute path of a
        key file of mode 0600. Never the key itself.
      </p>
    </div>
  );
}

function VerifyOutcome({ phase }: { phase: Phase }) {
  const step = phase.kind === 'running' ? phase.job?.progress?.step : undefined;
  return (
    <div aria-live="polite" data-testid="repository-verify-result">
      {phase.kind === 'running' ? (
        <p>
          <progress aria-label="Verifying the backup" /> Fetching and verifying{step ? ` (${step})` : ''}…
        </p>
      ) : null}
      {phase.kind === 'refused' ? <ErrorBox error={phase.error} title="Verification refused" /> : null}
      {phase.kind === 'done' && phase.job.audit ? (
        <p className="result-ok">
          Verified: <strong>{phase.job.audit.phase}</strong>.{' '}
          <a href={ROUTES.audit(phase.job.audit.recovery_id)}>
            Recover a Goal from {phase.job.backup_id ?? 'this backup'}
          </a>{' '}
          (its audit: what it holds, and the Goals a recovery can take from it).
        </p>
      ) : null}
    </div>
  );
}
