/**
 * What an operator can do to a run from its page — suspend, resume, export, cancel (after a
 * confirmation), answer its question, resolve an uncertain call — through the daemon's routes, the
 * CLI's engine calls. One action at a time; a control that cannot act now says why, in visible text
 * its button is described by.
 */
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { ApiError, apiFetch, asApiError, postJson, saveBlob } from './api';
import { runPath } from './router';
import { ErrorBox, abbreviate, formatBytes } from './components';
import { TERMINAL } from './RunFollow';
import type { RunSummary, RunView } from './types';

export type ActionName = 'suspend' | 'resume' | 'export' | 'cancel' | 'answer' | 'resolve';

/** The last action's outcome: a note, or its refusal. */
export interface ActionOutcome {
  readonly name: ActionName;
  /** What it acted on within the run (a call id), if not the run. */
  readonly subject?: string;
  readonly note?: string;
  readonly error?: ApiError;
}

/** The run's actions, one at a time: each answer is merged into the run, which is then read again (the view carries what a summary does not). */
export function useRunActions(
  runId: string,
  root: string | null,
  setRun: (f: (prev: RunView | null) => RunView | null) => void,
  loadRun: () => Promise<RunView>,
) {
  const [busy, setBusy] = useState<ActionName | null>(null);
  const [outcome, setOutcome] = useState<ActionOutcome | null>(null);
  const [turns, setTurns] = useState('');

  /** POST the action; true when it was done. */
  async function post(
    name: Exclude<ActionName, 'export'>,
    body: unknown,
    note: (s: RunSummary) => string,
    subject?: string,
  ): Promise<boolean> {
    if (busy) return false;
    setBusy(name);
    setOutcome(null);
    const about = subject !== undefined ? { subject } : {};
    try {
      const summary = await postJson<RunSummary>(runPath(runId, root, `/${name}`), body);
      setRun((prev) => (prev ? { ...prev, ...summary } : prev));
      setOutcome({ name, ...about, note: note(summary) });
      void loadRun().catch(() => undefined);
      return true;
    } catch (e) {
      setOutcome({ name, ...about, error: asApiError(e) });
      return false;
    } finally {
      setBusy(null);
    }
  }

  async function exportSnapshot(): Promise<void> {
    if (busy) return;
    setBusy('export');
    setOutcome(null);
    try {
      const res = await apiFetch(runPath(runId, root, '/export'), {
        method: 'POST',
        headers: { Accept: 'application/octet-stream' },
      });
      const blob = await res.blob();
      saveBlob(new Blob([blob], { type: 'application/octet-stream' }), `${runId}.snapshot`);
      const sha = res.headers.get('x-loopx-sha256');
      setOutcome({
        name: 'export',
        note: `Exported ${runId}.snapshot (${formatBytes(blob.size)}${sha ? `, SHA-256 ${abbreviate(sha, 16)}` : ''}).`,
      });
    } catch (e) {
      setOutcome({ name: 'export', error: asApiError(e) });
    } finally {
      setBusy(null);
    }
  }

  return { busy, outcome, post, exportSnapshot, turns, setTurns };
}

export type RunActions = ReturnType<typeof useRunActions>;

/** The last action's note (announced), whatever it was: shown where it stays when the form that acted goes away. */
export function ActionNote({ actions }: { actions: RunActions }) {
  return (
    <p aria-live="polite" className="result-ok" data-testid="run-action-note">
      {actions.outcome?.note ?? ''}
    </p>
  );
}

/** The refusal of one of `names` (on `subject`, if given), where its control is. */
export function ActionRefusal({
  actions,
  names,
  subject,
}: {
  actions: RunActions;
  names: readonly ActionName[];
  subject?: string;
}) {
  const o = actions.outcome;
  if (!o?.error || !names.includes(o.name) || (subject !== undefined && o.subject !== subject)) return null;
  return <ErrorBox error={o.error} title="Refused" />;
}

/** A button that, when it cannot act, says why: visible text beside it that describes it. */
export function ActionButton({
  children,
  why,
  onClick,
  type = 'button',
  className,
}: {
  children: ReactNode;
  /** Why it cannot act now; null when it can. */
  why: string | null;
  onClick?: () => void;
  type?: 'button' | 'submit';
  className?: string;
}) {
  const id = useId();
  return (
    <span className="run-action">
      <button
        type={type}
        className={className}
        disabled={why !== null}
        aria-describedby={why !== null ? id : undefined}
        onClick={onClick}
      >
        {children}
      </button>
      {why !== null ? (
        <span id={id} className="why-disabled">
          {why}
        </span>
      ) : null}
    </span>
  );
}

const ENDED = 'The run has ended.';
const BUSY = 'Another action on this run is in progress.';

/** Why Resume cannot act now, or null. */
function resumeWhy(run: RunView): string | null {
  if (TERMINAL.has(run.status)) return ENDED;
  if (run.waiting_for?.kind === 'interaction') return 'Answer its question first.';
  if (run.waiting_for?.kind === 'resolution') return 'Resolve its uncertain calls first.';
  return null;
}

function suspendWhy(run: RunView): string | null {
  if (TERMINAL.has(run.status)) return ENDED;
  if (run.status === 'suspended') return 'It is suspended.';
  if (run.suspend_requested) return 'A suspend is requested: it takes effect at the next completed turn boundary.';
  return null;
}

/** Suspend, resume (optionally for some turns), export and cancel. */
export function RunControls({ run, actions }: { run: RunView; actions: RunActions }) {
  const { busy, post, exportSnapshot, turns, setTurns } = actions;
  const turnsId = useId();
  const orBusy = (why: string | null) => why ?? (busy !== null ? BUSY : null);
  const resume = () => {
    const n = Number.parseInt(turns, 10);
    const body = turns.trim() !== '' && Number.isFinite(n) ? { turns: n } : {};
    void post(
      'resume',
      body,
      (s) => `Resumed: status ${s.status}, ${s.completed_turns} turns, last sequence ${s.last_sequence}.`,
    );
  };
  return (
    <>
      <div className="actions run-controls">
        <ActionButton
          why={orBusy(suspendWhy(run))}
          onClick={() =>
            void post('suspend', undefined, (s) =>
              s.status === 'suspended'
                ? 'Suspended.'
                : `Suspend requested: the run suspends at its next completed turn boundary (status ${s.status}).`,
            )
          }
        >
          {busy === 'suspend' ? 'Suspending…' : 'Suspend'}
        </ActionButton>
        <span className="inline-field">
          <label htmlFor={turnsId}>Turns to resume (optional)</label>
          <input
            id={turnsId}
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            value={turns}
            onChange={(e) => setTurns(e.currentTarget.value)}
          />
        </span>
        <ActionButton why={orBusy(resumeWhy(run))} onClick={resume}>
          {busy === 'resume' ? 'Resuming…' : 'Resume'}
        </ActionButton>
        <ActionButton
          why={orBusy(
            run.status === 'active' ? 'Only a suspended or finished run is exported: suspend it first.' : null,
          )}
          onClick={() => void exportSnapshot()}
        >
          {busy === 'export' ? 'Exporting…' : 'Export'}
        </ActionButton>
        <CancelRun run={run} actions={actions} />
      </div>
      <p className="muted">
        Suspend takes effect at the next completed turn boundary. Export saves the signed snapshot of a suspended or
        finished run. Cancel ends the run for good.
      </p>
      <ActionNote actions={actions} />
      <ActionRefusal actions={actions} names={['suspend', 'resume', 'export', 'cancel']} />
    </>
  );
}

/** Cancel, after a confirmation that names the run. */
function CancelRun({ run, actions }: { run: RunView; actions: RunActions }) {
  const [asking, setAsking] = useState(false);
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) keep.current?.focus();
  }, [asking]);
  const why = TERMINAL.has(run.status) ? ENDED : actions.busy !== null && actions.busy !== 'cancel' ? BUSY : null;
  if (!asking || why !== null) {
    return (
      <ActionButton why={why} onClick={() => setAsking(true)}>
        Cancel the run…
      </ActionButton>
    );
  }
  return (
    <span className="confirm-cancel" role="group" aria-label="Confirm the cancel">
      <span>
        Cancel run <code>{abbreviate(run.run_id, 16)}</code>? It ends for good: it cannot be resumed, and its snapshots
        no longer import.
      </span>
      <button
        type="button"
        className="danger"
        disabled={actions.busy !== null}
        onClick={() => void cancelRun(actions, () => setAsking(false))}
      >
        {actions.busy === 'cancel' ? 'Cancelling…' : 'Yes, cancel the run'}
      </button>
      <button ref={keep} type="button" onClick={() => setAsking(false)}>
        Keep the run
      </button>
    </span>
  );
}

async function cancelRun(actions: RunActions, done: () => void): Promise<void> {
  if (await actions.post('cancel', undefined, (s) => `Cancelled: status ${s.status}.`)) done();
}
