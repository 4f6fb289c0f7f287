/**
 * "What this backup holds" on the audit page (GET /api/audits/:recovery_id/contents): per Goal its
 * id and title, lifecycle, Todos by status, committed history, sessions, runs and effects — each
 * row with its classification, owner and next action — when and from where the audit was made,
 * and where its inert workspace lies with the command that reads it without changing it. Read
 * from the private audit for the signed-in operator; nothing here offers to run anything.
 */
import type { ReactNode } from 'react';
import { ClassificationBadge, ErrorBox, Loading, TableRegion } from './components';
import type { ApiError } from './api';
import type { DaemonAuditContents, Effect, Goal, Row, Run, Source } from './generated/audit-contents';
import { countsText } from './WorkspaceView';

export type AuditContents = DaemonAuditContents;

const TODO_ORDER = ['open', 'blocked', 'deferred', 'done'];
const OUTCOME_ORDER = ['committed', 'absent', 'unknown', 'rejected', 'superseded', 'pending'];

const ITEM_WORDS: Readonly<Record<Row['item'], string>> = {
  goal: 'Goal',
  todos: 'Todos',
  history: 'Committed history',
  sessions: 'Sessions',
  runs: 'Runs',
  effects: 'Effects',
};

const listed = (row: Row, order: readonly string[]): string =>
  row.count === 0 ? 'none' : `${row.count}: ${countsText(row.by_status, order)}`;

/** What a row found, in words, per item (a table, not a switch: the items are not owner kinds, but "goal" reads like one). */
const FOUND: Readonly<Record<Row['item'], (row: Row) => string>> = {
  goal: (row) => (row.count === 0 ? 'no readable record' : Object.keys(row.by_status).join(', ')),
  todos: (row) => listed(row, TODO_ORDER),
  history: (row) => `${row.count} ${row.count === 1 ? 'transaction' : 'transactions'}`,
  sessions: (row) => String(row.count),
  runs: (row) => listed(row, []),
  effects: (row) => listed(row, OUTCOME_ORDER),
};

/** What a row found, in words: "3: 1 open, 1 blocked, 1 done", "9 transactions", "active". */
export const foundText = (row: Row): string => FOUND[row.item](row);

/** Where the audited backup came from, in words. */
export function sourceText(s: Source): string {
  if (s.kind === 'root_backup') return `backup ${s.backup_id} of this root`;
  if (s.kind === 'user_backup') return `backup ${s.backup_id} from your backups folder`;
  if (s.kind === 'upload') return `uploaded backup ${s.backup_id}`;
  if (s.kind === 'repository') {
    const sealed = s.encrypted === undefined ? '' : s.encrypted ? ' (encrypted there)' : ' (NOT encrypted there)';
    return `backup ${s.backup_id} from repository ${s.repository_id ?? '(unnamed)'}${sealed}`;
  }
  return `backup ${s.backup_id} (source not recorded)`;
}

export function AuditContentsSection({ contents, error }: { contents: AuditContents | null; error: ApiError | null }) {
  return (
    <section aria-labelledby="contents-heading" className="card" data-testid="audit-contents">
      <h2 id="contents-heading">What this backup holds</h2>
      {error ? <ErrorBox error={error} title="Could not read what the backup holds" /> : null}
      {!contents && !error ? <Loading what="what the backup holds" /> : null}
      {contents ? <ContentsBody c={contents} /> : null}
    </section>
  );
}

function ContentsBody({ c }: { c: AuditContents }) {
  const other = c.other.runs.length > 0 || c.other.effects.length > 0;
  return (
    <>
      <dl className="facts" data-testid="audit-provenance">
        <div>
          <dt>Audit made</dt>
          <dd>
            <time dateTime={c.verified_at}>{c.verified_at}</time>
          </dd>
        </div>
        <div>
          <dt>Source</dt>
          <dd data-testid="audit-source">
            {sourceText(c.source)}, made <time dateTime={c.source.backup_created_at}>{c.source.backup_created_at}</time>
          </dd>
        </div>
        <div>
          <dt>Workspace (in the root’s directory)</dt>
          <dd>
            <code className="command" data-testid="workspace-directory">
              {c.workspace.directory}
            </code>
          </dd>
        </div>
        <div>
          <dt>Read it without changing it, in the root’s directory</dt>
          <dd>
            <code className="command" data-testid="workspace-command">
              {c.workspace.command}
            </code>
          </dd>
        </div>
      </dl>
      {c.goals.length === 0 ? <p className="muted">The audit names no Goal.</p> : null}
      {c.goals.map((g) => (
        <GoalContents key={g.goal_id} g={g} />
      ))}
      {other ? (
        <div className="contents-goal" data-testid="contents-other">
          <h3>Outside any Goal</h3>
          <HoldingsTable rows={c.other.rows} label="What belongs to no Goal" />
          <RunsList runs={c.other.runs} label="Runs outside any Goal" />
          <EffectsList effects={c.other.effects} label="Effects outside any Goal" />
        </div>
      ) : null}
    </>
  );
}

function GoalContents({ g }: { g: Goal }) {
  return (
    <div className="contents-goal" data-testid={`contents-goal-${g.goal_id}`}>
      <h3>
        Goal <code>{g.goal_id}</code>
        {g.title !== null ? <>: {g.title}</> : <span className="muted"> (no readable record)</span>}
      </h3>
      <p className="muted">
        {g.lifecycle ?? 'lifecycle unknown'};{' '}
        {g.activation_eligible
          ? 'can be recovered into a new root (below)'
          : 'not eligible for recovery from this backup'}
        . Read it without changing it, in the root’s directory: <code className="command">{g.read_command}</code>
      </p>
      <HoldingsTable rows={g.rows} label={`What the backup holds of Goal ${g.goal_id}`} />
      <RunsList runs={g.runs} label={`Runs of Goal ${g.goal_id}`} />
      <EffectsList effects={g.effects} label={`Effects of Goal ${g.goal_id}`} />
    </div>
  );
}

/** A cell that, on a narrow screen, shows its column's name before its value (the table reflows; nothing is hidden). */
function Cell({
  label,
  children,
  className,
  testId,
}: {
  label: string;
  children: ReactNode;
  className?: string;
  testId?: string;
}) {
  return (
    <td data-label={label} className={className} data-testid={testId}>
      {children}
    </td>
  );
}

function HoldingsTable({ rows, label }: { rows: readonly Row[]; label: string }) {
  return (
    <TableRegion label={label}>
      <table className="reflow">
        <caption className="visually-hidden">{label}: each with its classification, owner and next action</caption>
        <thead>
          <tr>
            <th scope="col">What</th>
            <th scope="col">Found</th>
            <th scope="col">Classification</th>
            <th scope="col">Owner</th>
            <th scope="col">Next action</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.item} data-testid={`holding-${r.item}`}>
              <th scope="row">{ITEM_WORDS[r.item]}</th>
              <Cell label="Found" testId="holding-found">
                {foundText(r)}
              </Cell>
              <Cell label="Classification">
                <ClassificationBadge value={r.classification} />
              </Cell>
              <Cell label="Owner" testId="holding-owner">
                {r.owner}
              </Cell>
              <Cell label="Next action" testId="holding-next-action">
                {r.holds.map((h, i) => (
                  <span key={`${h.code}-${i}`} className="badge severity-hold">
                    held: {h.code}
                  </span>
                ))}
                {r.holds.length > 0 ? ' ' : null}
                {r.next_action}
              </Cell>
            </tr>
          ))}
        </tbody>
      </table>
    </TableRegion>
  );
}

function RunsList({ runs, label }: { runs: readonly Run[]; label: string }) {
  if (runs.length === 0) return null;
  return (
    <>
      <h4>Runs found</h4>
      <TableRegion label={label}>
        <table className="reflow">
          <caption className="visually-hidden">{label}, as the backup recorded them (not runs of this root)</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Lifecycle</th>
              <th scope="col">Turns</th>
              <th scope="col">Agent</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.run_id} data-testid="contents-run">
                <th scope="row">
                  <code>{r.run_id}</code>
                </th>
                <Cell label="Lifecycle">{r.lifecycle}</Cell>
                <Cell label="Turns">{r.completed_turns}</Cell>
                <Cell label="Agent">
                  <code>{r.definition_id}</code>
                </Cell>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </>
  );
}

function EffectsList({ effects, label }: { effects: readonly Effect[]; label: string }) {
  if (effects.length === 0) return null;
  return (
    <>
      <h4>Effects found</h4>
      <TableRegion label={label}>
        <table className="reflow">
          <caption className="visually-hidden">
            {label}, each with its recorded outcome (never delivered again from here)
          </caption>
          <thead>
            <tr>
              <th scope="col">Effect</th>
              <th scope="col">Target</th>
              <th scope="col">Outcome</th>
              <th scope="col">Hold</th>
            </tr>
          </thead>
          <tbody>
            {effects.map((e) => (
              <tr key={e.operation_id} data-testid="contents-effect">
                <th scope="row">
                  <code>{e.kind}</code> <span className="muted scope">{e.operation_id}</span>
                </th>
                <Cell label="Target">
                  <code>{e.target}</code>
                </Cell>
                <Cell label="Outcome">
                  <span className={`badge outcome-${e.outcome}`}>{e.outcome}</span>
                </Cell>
                <Cell label="Hold">{e.hold ?? <span className="muted">none</span>}</Cell>
              </tr>
            ))}
          </tbody>
        </table>
      </TableRegion>
    </>
  );
}
