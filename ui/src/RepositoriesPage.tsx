/**
 * Settings ▸ Capability Center ▸ Backup repositories: the operator names a repository by its URL
 * (a directory or an S3 bucket) and sees its backups — id, root, age, size, encrypted or not,
 * verified or not — backs this root up into it, verifies one (asking for the key by reference
 * when it is encrypted) and recovers a Goal from a verified one, on the audit page where every
 * recovery starts. Credentials and keys are references the daemon resolves: never typed here.
 */
import { useEffect, useId, useState, type FormEvent } from 'react';
import './styles/repositories.css';
import { asApiError, isAbort, type ApiError } from './api';
import { ErrorBox, ExecutionStatement, Loading, PageHeading, TableRegion, abbreviate, formatBytes } from './components';
import { RepositoryBackupForm, RepositoryVerifyForm } from './RepositoryActions';
import {
  ageText,
  lastRepositoryUrl,
  listRepository,
  rememberRepositoryUrl,
  type RepositoryBackup,
  type RepositoryListing,
} from './repositoryApi';
import { ROUTES } from './router';

export function RepositoriesPage() {
  const [url, setUrl] = useState(lastRepositoryUrl);
  const [named, setNamed] = useState<string | null>(() => (lastRepositoryUrl() === '' ? null : lastRepositoryUrl()));
  return (
    <>
      <PageHeading>Backup repositories</PageHeading>
      <ExecutionStatement />
      <RepositoryChooser
        url={url}
        onUrl={setUrl}
        onOpen={() => {
          rememberRepositoryUrl(url);
          setNamed(url);
        }}
      />
      {named !== null ? <RepositoryView key={named} url={named} /> : null}
    </>
  );
}

function RepositoryChooser({ url, onUrl, onOpen }: { url: string; onUrl: (u: string) => void; onOpen: () => void }) {
  const inputId = useId();
  const hintId = useId();
  function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (url.trim() !== '') onOpen();
  }
  return (
    <section aria-labelledby="repository-heading" className="card repository-chooser">
      <h2 id="repository-heading">Repository</h2>
      <form onSubmit={onSubmit}>
        <div className="field field-stacked">
          <label htmlFor={inputId}>Repository URL</label>
          <input
            id={inputId}
            type="text"
            value={url}
            required
            spellCheck={false}
            autoComplete="off"
            aria-describedby={hintId}
            onChange={(e) => onUrl(e.currentTarget.value.trim())}
          />
          <p id={hintId} className="muted">
            A directory’s absolute path (<code>/mnt/backups/loopx</code> or <code>file:///…</code>) or{' '}
            <code>s3://BUCKET/PREFIX?endpoint=…&amp;region=…&amp;path_style=true&amp;credentials=env:NAME</code>, as{' '}
            <code>loopx repo init</code> made it. Credentials are named by reference (<code>env:NAME</code>): the daemon
            reads them from its own environment, never from this page.
          </p>
        </div>
        <button type="submit" className="primary" disabled={url === ''}>
          List backups
        </button>
      </form>
    </section>
  );
}

/** The listing of `url`, read again on `reload`; aborted when the page leaves. */
function useListing(url: string) {
  // With the time it arrived: ages are read against it (a render reads no clock).
  const [data, setData] = useState<{ listing: RepositoryListing; at: number } | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [generation, setGeneration] = useState(0);
  useEffect(() => {
    const ctrl = new AbortController();
    listRepository(url, ctrl.signal).then(
      (l) => {
        setData({ listing: l, at: Date.now() });
        setError(null);
      },
      (e: unknown) => {
        if (!isAbort(e)) setError(asApiError(e));
      },
    );
    return () => ctrl.abort();
  }, [url, generation]);
  return { data, error, reload: () => setGeneration((g) => g + 1) };
}

function RepositoryView({ url }: { url: string }) {
  const { data, error, reload } = useListing(url);
  return (
    <>
      <section aria-labelledby="repository-backups-heading" className="card" data-testid="repository-backups">
        <div className="section-head">
          <h2 id="repository-backups-heading">Backups in this repository</h2>
          <button type="button" onClick={reload}>
            Refresh backups
          </button>
        </div>
        {error ? <ErrorBox error={error} title="Could not list the repository" /> : null}
        {data === null && !error ? <Loading what="the repository’s backups" /> : null}
        {data !== null ? <ListingBody listing={data.listing} now={data.at} /> : null}
      </section>
      {data !== null ? (
        <>
          <RepositoryBackupForm url={url} listing={data.listing} onCreated={reload} />
          <RepositoryVerifyForm url={url} listing={data.listing} onVerified={reload} />
        </>
      ) : null}
    </>
  );
}

function ListingBody({ listing, now }: { listing: RepositoryListing; now: number }) {
  const r = listing.repository;
  return (
    <>
      <p data-testid="repository-facts">
        Repository <code title={r.id}>{r.id}</code> ({r.kind === 's3' ? 'an S3 bucket' : 'a directory'}):{' '}
        {r.encryption === 'required' ? 'keeps only encrypted backups.' : 'keeps encrypted and unencrypted backups.'}{' '}
        {listing.backups.length} {listing.backups.length === 1 ? 'backup' : 'backups'}.
      </p>
      {listing.incomplete.length > 0 ? (
        <p className="muted">
          Not backups (their publication did not finish): {listing.incomplete.join(', ')}. <code>loopx repo prune</code>{' '}
          removes them.
        </p>
      ) : null}
      {listing.unreadable.length > 0 ? (
        <p className="muted">
          Unreadable entries: {listing.unreadable.join(', ')}. <code>loopx repo check</code> says more.
        </p>
      ) : null}
      {listing.backups.length === 0 ? (
        <p className="muted">No backups yet. Back this root up into it below.</p>
      ) : (
        <BackupTable backups={listing.backups} now={now} />
      )}
    </>
  );
}

function BackupTable({ backups, now }: { backups: readonly RepositoryBackup[]; now: number }) {
  return (
    <TableRegion label="Backups in this repository">
      <table className="reflow">
        <caption className="visually-hidden">
          The repository’s backups, newest first: the root each protects, when it was captured, its size, whether it is
          encrypted and whether it was verified
        </caption>
        <thead>
          <tr>
            <th scope="col">Backup</th>
            <th scope="col">Root</th>
            <th scope="col">Captured</th>
            <th scope="col" className="num">
              Size
            </th>
            <th scope="col">Encryption</th>
            <th scope="col">Verified</th>
            <th scope="col">Recovery</th>
          </tr>
        </thead>
        <tbody>
          {backups.map((b) => (
            <BackupRow key={b.backup_id} b={b} now={now} />
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

function BackupRow({ b, now }: { b: RepositoryBackup; now: number }) {
  return (
    <tr data-testid="repository-backup-row">
      <th scope="row">
        <code>{b.backup_id}</code>
      </th>
      <td data-label="Root">
        {b.root_id ? (
          <code title={b.root_id}>{abbreviate(b.root_id, 14)}</code>
        ) : (
          <span className="muted">unknown</span>
        )}
      </td>
      <td data-label="Captured">
        <time dateTime={b.created_at} title={b.created_at}>
          {ageText(b.created_at, now)}
        </time>
      </td>
      <td data-label="Size" className="num">
        {formatBytes(b.archive_bytes)}
      </td>
      <td data-label="Encryption" data-testid="repository-backup-encryption">
        {b.encrypted ? 'encrypted' : 'not encrypted'}
      </td>
      <td data-label="Verified" data-testid="repository-backup-verified">
        {b.verified_at ? (
          <>
            verified{' '}
            <time dateTime={b.verified_at} title={b.verified_at}>
              {ageText(b.verified_at, now)}
            </time>
          </>
        ) : (
          'not verified'
        )}
      </td>
      <td data-label="Recovery">
        {b.audit_id ? (
          <a href={ROUTES.audit(b.audit_id)}>Recover a Goal from {b.backup_id}</a>
        ) : (
          <span className="muted">verify it first</span>
        )}
      </td>
    </tr>
  );
}
