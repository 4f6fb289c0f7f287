/** One recovery audit: the public summary (state-recovery-audit-public-v0) of GET /api/audits/:recovery_id, then its workspace read back (WorkspaceView). */
import { useState, type MouseEvent } from 'react';
import { ApiError, apiFetch, asApiError, enc, saveBlob } from './api';
import { useApiJson } from './hooks';
import {
  CLASSIFICATION_WORDS,
  ClassificationBadge,
  ErrorBox,
  ExecutionStatement,
  Loading,
  PageHeading,
  TableRegion,
  abbreviate,
  formatBytes,
} from './components';
import { ROUTES } from './router';
import type { AuditFinding, OwnerList, PublicAudit } from './types';
import { WorkspaceSection } from './WorkspaceView';
import { RecoverSection } from './RecoveryView';
import { AuditContentsSection, type AuditContents } from './AuditContents';

const SEVERITY_ORDER: Readonly<Record<string, number>> = { hold: 0, error: 1, warning: 2 };

/** Holds and errors first, otherwise in the audit's order. */
export function orderFindings(findings: readonly AuditFinding[]): AuditFinding[] {
  return findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => (SEVERITY_ORDER[a.f.severity] ?? 3) - (SEVERITY_ORDER[b.f.severity] ?? 3) || a.i - b.i)
    .map(({ f }) => f);
}

export function AuditView({ recoveryId }: { recoveryId: string }) {
  // App keys this view by recoveryId: another audit mounts a new view, with nothing of this one's.
  const { data: audit, error } = useApiJson<PublicAudit>(`/api/audits/${enc(recoveryId)}`);

  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <a href={ROUTES.backup}>Backup &amp; recovery</a> <span aria-hidden="true">▸</span>{' '}
        <span aria-current="page">Audit {abbreviate(recoveryId)}</span>
      </nav>
      <PageHeading>{audit ? `Audit of backup ${audit.backup.backup_id}` : 'Recovery audit'}</PageHeading>
      <ExecutionStatement />
      {error ? <ErrorBox error={error} title="Could not open the audit" /> : null}
      {!audit && !error ? <Loading what="the audit" /> : null}
      {audit ? <AuditBody audit={audit} /> : null}
    </>
  );
}

function AuditBody({ audit }: { audit: PublicAudit }) {
  // What each owner decides, from the daemon's owners table (the legend under the components).
  const { data: ownerList } = useApiJson<OwnerList>('/api/owners');
  const decides = new Map((ownerList?.owners ?? []).map((o) => [o.name, o.decides]));
  // What the backup holds, from the private audit (for the signed-in operator): first, and it names the components.
  const { data: contents, error: contentsError } = useApiJson<AuditContents>(
    `/api/audits/${enc(audit.recovery_id)}/contents`,
  );
  return (
    <>
      {contents ? <AuditVerdict audit={audit} verdict={contents.verdict} /> : null}
      <RecoverSection audit={audit} />
      <AuditContentsSection contents={contents} error={contentsError} />
      <AuditStatus audit={audit} />
      <AuditCounts audit={audit} />
      <AuditComponents audit={audit} decides={decides} contents={contents} />
      <AuditFindings audit={audit} />
      <WorkspaceSection recoveryId={audit.recovery_id} />
      <DeleteAudit recoveryId={audit.recovery_id} />
    </>
  );
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * What the operator can do with this backup, in one plain sentence before anything else: how many
 * Goals it can recover, and which holds recovery settles by itself. The audit's own phase (`held`
 * for every old-era evidence or owner hold) stays below, under Status, with its findings.
 */
function AuditVerdict({ audit, verdict }: { audit: PublicAudit; verdict: AuditContents['verdict'] }) {
  const rest = [
    verdict.holds_settled_by_recovery > 0
      ? `${plural(verdict.holds_settled_by_recovery, 'hold')} that recovery settles itself`
      : null,
    verdict.holds_for_operator > 0 ? `${plural(verdict.holds_for_operator, 'hold')} for you to settle` : null,
    verdict.errors > 0 ? plural(verdict.errors, 'error') : null,
  ].filter((x): x is string => x !== null);
  return (
    <section
      aria-labelledby="audit-verdict-heading"
      className={`verdict${verdict.recoverable ? '' : ' not-recoverable'}`}
      data-testid="audit-verdict"
    >
      <h2 id="audit-verdict-heading" className="visually-hidden">
        Verdict
      </h2>
      <p>
        <strong>{verdict.recoverable ? 'Recoverable' : 'Not recoverable as it is'}:</strong>{' '}
        {verdict.recoverable
          ? `${plural(verdict.eligible_goals, 'Goal')} eligible`
          : `none of its ${plural(verdict.goals, 'Goal')} can be recovered from this backup`}
        {rest.length > 0 ? `; ${rest.join('; ')}` : ''}.
      </p>
      <p>
        {verdict.recoverable ? (
          <a href="#recover-heading" onClick={(e) => focusRecover(e)}>
            Recover a Goal into a new root
          </a>
        ) : (
          <>Next action: {audit.next_action}</>
        )}
      </p>
    </section>
  );
}

/** The in-page link moves focus to the recovery form's heading (a hash link would change the route). */
function focusRecover(e: MouseEvent<HTMLAnchorElement>): void {
  e.preventDefault();
  const heading = document.getElementById('recover-heading');
  heading?.scrollIntoView({ block: 'start' });
  const field = document.querySelector<HTMLInputElement>('[data-testid="recover-section"] input');
  (field ?? heading)?.focus();
}

/** The verdict, its next action and the facts it rests on, with the raw audit's download. */
function AuditStatus({ audit }: { audit: PublicAudit }) {
  return (
    <section aria-labelledby="audit-status-heading" className="card">
      <h2 id="audit-status-heading">Status</h2>
      <p className={`status-badge phase-${audit.phase}`} data-testid="audit-status">
        <span className="status-phase">{audit.phase}</span>
        <span className="status-operator">
          operator state: <code>{audit.operator_state}</code>
        </span>
      </p>
      <p className="next-action">
        <strong>Next action:</strong>{' '}
        {audit.activation_eligible ? (
          // What the audit's words ask for is the recovery form on this page: a control, not a command to copy.
          <>
            <a href="#recover-heading" onClick={(e) => focusRecover(e)}>
              Recover a Goal into a new root
            </a>{' '}
            (the recovery settles the holds it names). On the command line: {audit.next_action}
          </>
        ) : (
          audit.next_action
        )}
      </p>
      <dl className="facts">
        <div>
          <dt>Execution authority granted</dt>
          <dd data-testid="audit-execution-authority">{audit.execution_authority_granted ? 'yes' : 'no'}</dd>
        </div>
        <div>
          <dt>Activation eligible</dt>
          <dd>{audit.activation_eligible ? 'yes' : 'no'}</dd>
        </div>
        <div>
          <dt>Workspace</dt>
          <dd>
            {audit.workspace.isolation}, {audit.workspace.registered ? 'registered' : 'not registered'}
          </dd>
        </div>
        <div>
          <dt>Capture</dt>
          <dd>
            <code>{audit.capture.achieved_profile}</code>
          </dd>
        </div>
        <div>
          <dt>Backup</dt>
          <dd>
            {audit.backup.backup_id}, created <time dateTime={audit.backup.created_at}>{audit.backup.created_at}</time>{' '}
            by loopx {audit.backup.producer_version}
          </dd>
        </div>
        <div>
          <dt>Recovery id</dt>
          <dd>
            <code className="digest">{audit.recovery_id}</code>
          </dd>
        </div>
        <div>
          <dt>Archive SHA-256</dt>
          <dd>
            <code className="digest">{audit.backup.archive_sha256}</code>
          </dd>
        </div>
        <div>
          <dt>Archive</dt>
          <dd>
            {formatBytes(audit.measurements.archive_bytes)} compressed, {formatBytes(audit.measurements.expanded_bytes)}{' '}
            expanded; {audit.counts.members.total} members ({audit.counts.members.sqlite_files} SQLite files)
          </dd>
        </div>
      </dl>
      <div className="download">
        <DownloadAudit recoveryId={audit.recovery_id} />
      </div>
    </section>
  );
}

/** How many assets each classification holds, and what the three words mean. */
function AuditCounts({ audit }: { audit: PublicAudit }) {
  const a = audit.counts.assets;
  return (
    <section aria-labelledby="audit-counts-heading" className="card">
      <h2 id="audit-counts-heading">Classification</h2>
      <ul className="counts" data-testid="audit-counts">
        <li className="count class-recovered_readable">
          <span className="count-n">{a.recovered_readable}</span>{' '}
          <span className="count-label">{CLASSIFICATION_WORDS.recovered_readable}</span>
        </li>
        <li className="count class-historical_only">
          <span className="count-n">{a.historical_only}</span>{' '}
          <span className="count-label">{CLASSIFICATION_WORDS.historical_only}</span>
        </li>
        <li className="count class-unknown_unrecoverable">
          <span className="count-n">{a.unknown_unrecoverable}</span>{' '}
          <span className="count-label">{CLASSIFICATION_WORDS.unknown_unrecoverable}</span>
        </li>
      </ul>
      <p className="muted">
        Recovered and readable: its owner read it back; it can be read from the inert workspace. Historical only: sound,
        kept as history; reconciled only during a later adoption, never by replay. Unknown or unrecoverable: no loopx
        owner reads it, or its owner could not.
      </p>
    </section>
  );
}

/** Every component — named by its owner and what it belongs to, beside its id — with its verification and next action; the legend says what each owner shown decides. */
function AuditComponents({
  audit,
  decides,
  contents,
}: {
  audit: PublicAudit;
  decides: ReadonlyMap<string, string>;
  contents: AuditContents | null;
}) {
  const names = new Map((contents?.components ?? []).map((c) => [c.component_id, c]));
  const titles = new Map((contents?.goals ?? []).map((g) => [g.goal_id, g.title]));
  const shown = [...new Set(audit.components.map((c) => c.owner_kind))].filter((name) => decides.has(name));
  return (
    <section aria-labelledby="audit-components-heading" className="card">
      <h2 id="audit-components-heading">Components</h2>
      <TableRegion label="Components">
        <table>
          <caption className="visually-hidden">
            {audit.components.length} components, each with its classification, owner, verification status and next
            action
          </caption>
          <thead>
            <tr>
              <th scope="col">Component</th>
              <th scope="col">Classification</th>
              <th scope="col">Owner</th>
              <th scope="col">Verification</th>
              <th scope="col">Required</th>
              <th scope="col">Members</th>
              <th scope="col">Next action</th>
            </tr>
          </thead>
          <tbody>
            {audit.components.map((c) => (
              <tr key={c.component_id} data-testid="audit-component-row">
                <th scope="row">
                  <ComponentName
                    id={c.component_id}
                    named={names.get(c.component_id)}
                    title={titles.get(names.get(c.component_id)?.goal_id ?? '') ?? null}
                  />
                  {c.logical_scope !== 'machine' ? <span className="muted scope"> {c.logical_scope}</span> : null}
                </th>
                <td>
                  <ClassificationBadge value={c.classification} />
                </td>
                <td data-testid="component-owner" title={decides.get(c.owner_kind)}>
                  {c.owner_kind}
                </td>
                <td>
                  <span className={`verification verification-${c.verification}`}>{c.verification}</span>
                </td>
                <td>{c.required ? 'required' : 'optional'}</td>
                <td className="num">{c.member_count}</td>
                <td data-testid="component-next-action">{c.next_action}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
      {shown.length > 0 ? (
        <dl className="owner-legend" data-testid="owner-legend" aria-label="What each owner decides">
          {shown.map((name) => (
            <div key={name} data-testid="owner-legend-entry">
              <dt>{name}</dt>
              <dd>{decides.get(name)}</dd>
            </div>
          ))}
        </dl>
      ) : null}
    </section>
  );
}

/** A component by what it is (`Goal launch: work`, with the Goal's title), its id beneath; only its id until the contents arrive. */
function ComponentName({
  id,
  named,
  title,
}: {
  id: string;
  named: AuditContents['components'][number] | undefined;
  title: string | null;
}) {
  if (!named) return <code>{id}</code>;
  return (
    <>
      <span className="component-name">{named.name}</span>
      {title !== null ? <span className="component-title"> “{title}”</span> : null}
      <code className="muted scope">{id}</code>
    </>
  );
}

/** Every finding, holds and errors first. */
function AuditFindings({ audit }: { audit: PublicAudit }) {
  const findings = orderFindings(audit.findings);
  return (
    <section aria-labelledby="audit-findings-heading" className="card">
      <h2 id="audit-findings-heading">Findings</h2>
      <p className="muted">
        {audit.counts.findings.hold} held, {audit.counts.findings.error} errors, {audit.counts.findings.warning}{' '}
        warnings — holds and errors first.
      </p>
      <TableRegion label="Findings">
        <table>
          <caption className="visually-hidden">Findings, holds and errors first</caption>
          <thead>
            <tr>
              <th scope="col">Code</th>
              <th scope="col">Severity</th>
              <th scope="col">Owner</th>
              <th scope="col">Component</th>
              <th scope="col">Next action</th>
            </tr>
          </thead>
          <tbody>
            {findings.map((f, i) => (
              <tr key={`${f.code}-${f.component ?? ''}-${i}`} data-testid="audit-finding-row">
                <th scope="row">
                  <code>{f.code}</code>
                </th>
                <td>
                  <span className={`badge severity-${f.severity}`}>{f.severity}</span>
                </td>
                <td>{f.owner}</td>
                <td>{f.component ? <code>{f.component}</code> : <span className="muted">whole backup</span>}</td>
                <td>{f.next_action}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </section>
  );
}

/** A link to the raw (private) audit: fetched with the token and saved through a blob URL. */
function DownloadAudit({ recoveryId }: { recoveryId: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const path = `/api/audits/${enc(recoveryId)}/raw`;
  const filename = `recovery-audit-${recoveryId.slice(0, 12)}.json`;

  async function onClick(ev: MouseEvent<HTMLAnchorElement>) {
    ev.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    setSaved(null);
    try {
      const res = await apiFetch(path, { headers: { Accept: 'application/json' } });
      const blob = await res.blob();
      saveBlob(new Blob([blob], { type: 'application/json' }), filename);
      const sha = res.headers.get('x-loopx-sha256');
      setSaved(`Saved ${filename} (${formatBytes(blob.size)}${sha ? `, SHA-256 ${abbreviate(sha, 16)}` : ''}).`);
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <a href={path} download={filename} onClick={onClick} className="button-link" aria-busy={busy}>
        Download audit
      </a>{' '}
      <span className="muted">
        the private audit file’s exact bytes (it names members and Goal ids: keep it owner-only)
      </span>
      <p className="saved-note" aria-live="polite">
        {saved ?? ''}
      </p>
      {error ? <ErrorBox error={error} title="Could not download the audit" /> : null}
    </>
  );
}

/** Delete the audit and its inert workspace, after a confirmation bound to its recovery id. */
function DeleteAudit({ recoveryId }: { recoveryId: string }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  async function remove() {
    setError(null);
    try {
      await apiFetch(`/api/audits/${enc(recoveryId)}`, {
        method: 'DELETE',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ confirm: recoveryId }),
      });
      window.location.hash = ROUTES.backup;
    } catch (e) {
      setError(asApiError(e));
    }
  }
  return (
    <section aria-labelledby="delete-audit-heading" className="card">
      <h2 id="delete-audit-heading">Delete this audit</h2>
      <p>
        Removes the audit and its inert workspace for good. It is refused while a recovery planned from this workspace
        is live.
      </p>
      {asking ? (
        <div className="actions">
          <span>
            Delete audit <code>{abbreviate(recoveryId)}</code> and its workspace?
          </span>
          <button type="button" className="danger" onClick={() => void remove()}>
            Delete audit {abbreviate(recoveryId)}
          </button>
          <button type="button" className="secondary" onClick={() => setAsking(false)}>
            Keep it
          </button>
        </div>
      ) : (
        <button type="button" className="secondary" onClick={() => setAsking(true)}>
          Delete this audit…
        </button>
      )}
      {error ? <ErrorBox error={error} title="Not deleted" testId="delete-audit-refusal" /> : null}
    </section>
  );
}
