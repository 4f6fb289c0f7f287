/**
 * Recovering one Goal of an audit into a new root: on the audit page, the choice of the Goal and of
 * the new root's name (proposed; an occupied one is refused) and the preview; on the recovery page
 * (GET /api/recoveries/:id), the preview with the plan digest, a deliberate confirmation, the
 * progress per step with its owner, the result — complete, or held with each hold, its owner, what
 * must become true and its one control — and a retry that converges. The page holds nothing of its
 * own: every state is read back from the daemon (the recovery's journal), so a reload or a daemon
 * restart mid-adoption shows where it is.
 */
import { useEffect, useRef, useState, type FormEvent, type RefObject } from 'react';
import { flushSync } from 'react-dom';
import { ApiError, asApiError, enc, getJson, postJson } from './api';
import { ErrorBox, Loading, PageHeading, abbreviate } from './components';
import { useApiJson } from './hooks';
import { ROUTES } from './router';
import { RecoveryRpo, RecoveryTimeline } from './Timeline';
import type { PublicAudit, Recovery, RecoveryPlanAnswer, RecoveryPreview, WorkspaceListing } from './types';

const STATE_WORDS: Record<string, string> = {
  adoption_prepared: 'planned — waiting for your confirmation',
  applying: 'applying',
  reconciliation_held: 'held — a hold needs your action',
  complete: 'complete',
  abandoned: 'abandoned',
};

/** On the audit page: recover one of its Goals (only when the audit can be adopted). */
export function RecoverSection({ audit }: { audit: PublicAudit }) {
  const { data: ws } = useApiJson<WorkspaceListing>(`/api/audits/${enc(audit.recovery_id)}/workspace`);
  return (
    <section aria-labelledby="recover-heading" className="card" data-testid="recover-section">
      <h2 id="recover-heading">Recover a Goal into a new root</h2>
      {!audit.activation_eligible ? (
        <RecoverBlocked audit={audit} />
      ) : !ws ? (
        <Loading what="the Goals of the workspace" />
      ) : (
        ws.goals.map((g) => (
          <RecoverGoalForm key={g.goal_id} auditId={audit.recovery_id} goalId={g.goal_id} title={g.title} />
        ))
      )}
    </section>
  );
}

/** Why no Goal of this audit can be recovered: the hold (or error) that prevents it, its owner, and its one next action. */
function RecoverBlocked({ audit }: { audit: PublicAudit }) {
  const blocking =
    audit.findings.find((f) => f.severity === 'hold') ?? audit.findings.find((f) => f.severity === 'error');
  return (
    <p data-testid="recover-blocked">
      This backup cannot be recovered as it is
      {blocking ? (
        <>
          : the {blocking.owner} owner holds it (<code>{blocking.code}</code>). Next action: {blocking.next_action}
        </>
      ) : (
        <>: {audit.next_action}</>
      )}
    </p>
  );
}

function RecoverGoalForm({ auditId, goalId, title }: { auditId: string; goalId: string; title: string }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    const ctrl = new AbortController();
    // The proposal fills an empty field the operator is not in, checked and shown in one task
    // (flushSync): arriving late, it must never join or replace what they select and type.
    getJson<{ destination_name: string }>(
      `/api/audits/${enc(auditId)}/recoveries/proposal?goal=${enc(goalId)}`,
      ctrl.signal,
    ).then(
      (r) => {
        if (document.activeElement !== input.current)
          flushSync(() => setName((n) => (n === '' ? r.destination_name : n)));
      },
      () => undefined,
    );
    return () => ctrl.abort();
  }, [auditId, goalId]);

  async function preview(ev: FormEvent) {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const plan = await postJson<RecoveryPlanAnswer>(`/api/audits/${enc(auditId)}/recoveries`, {
        goal_id: goalId,
        destination_name: name,
      });
      window.location.hash = ROUTES.recovery(plan.recovery_id);
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  }

  const inputId = `recover-name-${goalId}`;
  return (
    <form className="recover-form" onSubmit={(ev) => void preview(ev)} data-testid={`recover-goal-${goalId}`}>
      <h3>
        Recover this Goal: <code>{goalId}</code> “{title}”
      </h3>
      <label htmlFor={inputId}>New root (a new directory beside this daemon’s root)</label>
      <input
        id={inputId}
        ref={input}
        value={name}
        onChange={(ev) => setName(ev.target.value)}
        required
        pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}"
      />
      <button type="submit" disabled={busy || name === ''}>
        {busy ? 'Planning…' : 'Preview the recovery'}
      </button>
      <p className="muted">
        Previewing changes nothing live: it writes a plan into the new directory, bound to this backup by its digest.
      </p>
      {error ? <ErrorBox error={error} title="The recovery cannot be planned" /> : null}
    </form>
  );
}

function PreviewList({ preview }: { preview: RecoveryPreview }) {
  const sections: [string, readonly string[]][] = [
    ['Recovered and readable', preview.recovered_readable],
    ['Historical only', preview.historical_only],
    ['Lost or unknown', preview.lost_or_unknown],
    ['Holds expected', preview.expected_holds],
    ['External systems that will be asked', preview.external_systems],
    ['What is left for you to do', preview.human_actions],
  ];
  return (
    <dl className="preview" data-testid="recovery-preview">
      {sections.map(([label, items]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>
            <ul>
              {(items.length > 0 ? items : ['none']).map((i) => (
                <li key={i}>{i}</li>
              ))}
            </ul>
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** An act answers the recovery as it stands after it, or null when it was refused (the refusal is shown on the State card). */
type Act = (path: string, body?: unknown) => Promise<Recovery | null>;

const secondsText = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** What became of the hold the operator last acted on: being asked, or the answer. */
type HoldProgress =
  | { readonly hold_id: string; readonly subject: string; readonly phase: 'asking' }
  | {
      readonly hold_id: string;
      readonly subject: string;
      readonly phase: 'answered';
      readonly text: string;
      readonly settled: boolean;
    };

/** The words for what an action on `hold` led to, read from the recovery after it. */
function holdOutcome(hold: Hold, after: Recovery): { text: string; settled: boolean } {
  const still = after.status.holds.find((h) => h.hold_id === hold.hold_id);
  if (still) return { settled: false, text: `Still held: ${still.code}. It continues when ${still.continuation}.` };
  const resolved = after.status.resolved_holds.find((r) => r.hold_id === hold.hold_id);
  return {
    settled: true,
    text: `Settled${resolved ? `: ${resolved.outcome}` : ': its owner answered'}. ${after.status.holds.length === 0 ? 'Nothing else is held.' : `${after.status.holds.length} still held.`}`,
  };
}

/** The last apply's failure as the typed error the page shows (its next action may be null). */
const applyError = (e: NonNullable<Recovery['last_apply_error']>) =>
  new ApiError(0, {
    code: e.code,
    message: e.message,
    ...(e.next_action !== null ? { next_action: e.next_action } : {}),
  });

/** The recovery's facts: its new root, steps done, components verified, timing, fences and backup. */
function StateFacts({ r }: { r: Recovery }) {
  const s = r.status;
  return (
    <dl className="facts">
      <div>
        <dt>New root</dt>
        <dd>
          <code data-testid="recovery-destination">{r.destination_name}</code> (beside this daemon’s root)
        </dd>
      </div>
      <div>
        <dt>Steps done</dt>
        <dd data-testid="recovery-steps">
          {s.phase.completed_steps} of {s.phase.total_steps}
          {s.phase.current && s.state !== 'complete' ? ` — next: ${s.phase.current}` : ''}
        </dd>
      </div>
      <div>
        <dt>Components verified</dt>
        <dd data-testid="recovery-verification">
          {s.verification.verified} verified, {s.verification.invalid} invalid, {s.verification.missing} missing,{' '}
          {s.verification.ambiguous} ambiguous, {s.verification.unsupported} unsupported, {s.verification.unknown}{' '}
          unknown
        </dd>
      </div>
      {s.timing.apply_ms !== null ? (
        <div>
          <dt>Time</dt>
          <dd data-testid="recovery-timing">
            the apply took {secondsText(s.timing.apply_ms)}
            {s.timing.held_ms !== null
              ? `; it then stood held ${secondsText(s.timing.held_ms)} until its holds were settled (time waiting on you, not the apply's)`
              : ''}
          </dd>
        </div>
      ) : null}
      <div>
        <dt>Old writers fenced</dt>
        <dd>{s.fences.source_established ? 'yes' : 'not yet'}</dd>
      </div>
      <div>
        <dt>Backup</dt>
        <dd>{s.backup_id}</dd>
      </div>
    </dl>
  );
}

/** The recovery's state, with its facts, its last failure or refusal, its result, and a retry when it stopped. */
function StateCard({
  r,
  running,
  act,
  actionError,
  headingRef,
}: {
  r: Recovery;
  running: boolean;
  act: Act;
  actionError: ApiError | null;
  headingRef: RefObject<HTMLHeadingElement | null>;
}) {
  const s = r.status;
  return (
    <section aria-labelledby="recovery-state-heading" className="card">
      {/* Focused after each action: the control that was used may be gone with the state it belonged to. */}
      <h2 id="recovery-state-heading" ref={headingRef} tabIndex={-1}>
        State
      </h2>
      <p className={`status-badge recovery-${s.state}`} data-testid="recovery-state" role="status">
        {s.state === 'applying' && !r.applying_now
          ? 'stopped part-way — not running now'
          : (STATE_WORDS[s.state] ?? s.state)}
      </p>
      <StateFacts r={r} />
      {r.last_apply_error ? <ErrorBox error={applyError(r.last_apply_error)} title="The last apply stopped" /> : null}
      {actionError ? <ErrorBox error={actionError} title="Refused" testId="recovery-refusal" /> : null}
      {s.state === 'complete' ? <RecoveryResult r={r} /> : null}
      {s.state === 'applying' && !r.applying_now ? (
        <button
          type="button"
          disabled={running}
          onClick={() => void act(`/api/recoveries/${enc(r.recovery_id)}/apply`, { confirm: s.plan_digest })}
        >
          Retry the apply (it continues where it stopped)
        </button>
      ) : null}
    </section>
  );
}

/** A complete recovery: where the Goal continues — its page in the new root, or the command line. */
function RecoveryResult({ r }: { r: Recovery }) {
  const s = r.status;
  return (
    <div data-testid="recovery-result">
      <p>
        The Goal continues in the new root under a new lifetime (
        <code className="digest">{s.goal.new_instance_id}</code>); its old lifetime can no longer write.
      </p>
      <p>
        <a href={ROUTES.goal(r.goal_id, r.destination_name)}>
          Continue Goal {r.goal_id} in {r.destination_name}
        </a>{' '}
        — or on the command line:{' '}
        <code>
          loopx work run --goal {r.goal_id} --root {r.destination_name} --agent &lt;agent-file&gt;
        </code>
      </p>
    </div>
  );
}

function ConfirmCard({ r, running, act }: { r: Recovery; running: boolean; act: Act }) {
  const [confirmed, setConfirmed] = useState(false);
  const s = r.status;
  const base = `/api/recoveries/${enc(r.recovery_id)}`;
  return (
    <section aria-labelledby="confirm-heading" className="card">
      <h2 id="confirm-heading">Preview and confirm</h2>
      <PreviewList preview={s.preview} />
      <p>
        Plan digest: <code data-testid="plan-digest">{s.plan_digest}</code>
      </p>
      <label className="confirm-check">
        <input type="checkbox" checked={confirmed} onChange={(ev) => setConfirmed(ev.target.checked)} /> I have read the
        preview: recover this Goal into <code>{r.destination_name}</code>
      </label>
      <div className="actions">
        <button
          type="button"
          disabled={!confirmed || running}
          onClick={() => void act(`${base}/apply`, { confirm: s.plan_digest })}
        >
          Confirm and recover
        </button>
        <button type="button" className="secondary" disabled={running} onClick={() => void act(`${base}/abort`)}>
          Abandon this plan
        </button>
      </div>
    </section>
  );
}

/** Receiver holds no retry clears: the receiver follows another lifetime of this Goal. */
const FINAL_RECEIVER_HOLDS: ReadonlySet<string> = new Set(['receiver_fence_newer', 'receiver_fence_conflict']);
/** Receiver holds the operator may settle as gone: the receiver stopped answering. */
const GONE_SETTLEABLE: ReadonlySet<string> = new Set(['receiver_unreachable', 'receiver_fence_unconfirmed']);

type Hold = Recovery['status']['holds'][number];

/** A receiver that will never answer again, settled from the operator's evidence: their reason, confirmed by the hold's digest. */
function ReceiverGone({ hold, resolve, running, act }: { hold: Hold; resolve: string; running: boolean; act: Act }) {
  const [reason, setReason] = useState('');
  const id = `gone-${hold.hold_id}`;
  return (
    <fieldset className="hold-outcome">
      <legend>Or, if it will never answer again</legend>
      <p>
        Its deliveries whose outcome is unknown are abandoned (never sent, their outcome never guessed), and this Goal
        sends it nothing more. Hold digest <code>{abbreviate(hold.digest)}</code>.
      </p>
      <label htmlFor={id}>How you know it is gone</label>
      <input id={id} type="text" maxLength={1000} value={reason} onChange={(ev) => setReason(ev.target.value)} />
      <button
        type="button"
        className="secondary"
        disabled={running || reason.trim() === ''}
        onClick={() => void act(resolve, { receiver_gone: true, confirm: hold.digest, reason: reason.trim() })}
      >
        It is gone: stop delivering to it
      </button>
    </fieldset>
  );
}

/** One hold: whose it is, when it continues, and the controls that may settle it. */
function HoldItem({ r, h, running, act }: { r: Recovery; h: Hold; running: boolean; act: Act }) {
  const resolve = `/api/recoveries/${enc(r.recovery_id)}/holds/${enc(h.hold_id)}/resolve`;
  return (
    <li data-testid={`hold-${h.hold_id}`}>
      <p>
        <strong>{h.subject}</strong> — owner <code>{h.owner}</code>, <code>{h.code}</code>
      </p>
      <p>Continues when: {h.continuation}</p>
      {FINAL_RECEIVER_HOLDS.has(h.code) ? null : (
        // A receiver that follows another lifetime of the Goal is never settled by asking again.
        <button type="button" disabled={running} onClick={() => void act(resolve, {})}>
          Ask again and settle
        </button>
      )}
      {GONE_SETTLEABLE.has(h.code) ? <ReceiverGone hold={h} resolve={resolve} running={running} act={act} /> : null}
      {h.code === 'effect_outcome_unknown' ? (
        // An effect whose outcome is unknown may also be settled from the operator's own evidence.
        <fieldset className="hold-outcome">
          <legend>Or settle it from your own evidence</legend>
          <button
            type="button"
            className="secondary"
            disabled={running}
            onClick={() => void act(resolve, { outcome: 'committed' })}
          >
            It happened: committed
          </button>
          <button
            type="button"
            className="secondary"
            disabled={running}
            onClick={() => void act(resolve, { outcome: 'absent' })}
          >
            It did not happen: absent
          </button>
        </fieldset>
      ) : null}
    </li>
  );
}

/** Each hold's control, with what the last action on a hold is doing or led to (announced), and the holds settled so far. */
function HoldsCard({
  r,
  running,
  act,
  progress,
}: {
  r: Recovery;
  running: boolean;
  act: (hold: Hold) => Act;
  progress: HoldProgress | null;
}) {
  if (r.status.holds.length === 0 && r.status.resolved_holds.length === 0 && progress === null) return null;
  return (
    <section aria-labelledby="holds-heading" className="card" data-testid="recovery-holds">
      <h2 id="holds-heading">Holds</h2>
      <div aria-live="polite" data-testid="hold-progress">
        {progress?.phase === 'asking' ? (
          <p>
            <progress aria-label={`Settling ${progress.subject}`} /> Asking the owner of {progress.subject}…
          </p>
        ) : null}
        {progress?.phase === 'answered' ? (
          <p className={progress.settled ? 'result-ok' : undefined}>
            <strong>{progress.subject}:</strong> {progress.text}
          </p>
        ) : null}
      </div>
      {r.status.holds.length === 0 ? <p>Nothing is held.</p> : null}
      <ul className="holds">
        {r.status.holds.map((h) => (
          <HoldItem key={h.hold_id} r={r} h={h} running={running} act={act(h)} />
        ))}
      </ul>
      {r.status.resolved_holds.length > 0 ? (
        <>
          <h3>Settled</h3>
          <ul data-testid="resolved-holds">
            {r.status.resolved_holds.map((x) => (
              <li key={x.hold_id}>
                <code>{x.hold_id}</code>: {x.outcome}
                {x.reason !== undefined ? ` (your reason: ${x.reason})` : ''}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}

/** The recovery page. */
export function RecoveryView({ recoveryId }: { recoveryId: string }) {
  const { data: r, error, reload } = useApiJson<Recovery>(`/api/recoveries/${enc(recoveryId)}`);
  const [actionError, setActionError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const stateHeading = useRef<HTMLHeadingElement>(null);
  const running = r !== null && (r.applying_now || busy);

  // While an apply runs in the daemon, read its state again every second.
  useEffect(() => {
    if (!r?.applying_now) return;
    const t = setTimeout(reload, 1000);
    return () => clearTimeout(t);
  }, [r, reload]);

  const [holdProgress, setHoldProgress] = useState<HoldProgress | null>(null);
  const act: Act = async (path, body) => {
    setBusy(true);
    setActionError(null);
    try {
      return await postJson<Recovery>(path, body);
    } catch (e) {
      setActionError(asApiError(e));
      return null;
    } finally {
      setBusy(false);
      reload();
      stateHeading.current?.focus();
    }
  };
  // A hold's control: "asking" while its owner is asked, then what it answered, beside the holds.
  const actOnHold =
    (hold: Hold): Act =>
    async (path, body) => {
      setHoldProgress({ hold_id: hold.hold_id, subject: hold.subject, phase: 'asking' });
      const after = await act(path, body);
      setHoldProgress(
        after ? { hold_id: hold.hold_id, subject: hold.subject, phase: 'answered', ...holdOutcome(hold, after) } : null,
      );
      return after;
    };

  return (
    <>
      <nav aria-label="Breadcrumb" className="breadcrumb">
        <a href={ROUTES.backup}>Backup &amp; recovery</a> <span aria-hidden="true">▸</span>{' '}
        {r ? (
          <>
            <a href={ROUTES.audit(r.audit_id)}>Audit {abbreviate(r.audit_id)}</a> <span aria-hidden="true">▸</span>{' '}
          </>
        ) : null}
        <span aria-current="page">Recovery {abbreviate(recoveryId)}</span>
      </nav>
      <PageHeading>{r ? `Recovery of Goal ${r.goal_id}` : 'Recovery'}</PageHeading>
      {error ? <ErrorBox error={error} title="Could not read the recovery" /> : null}
      {!r && !error ? <Loading what="the recovery" /> : null}
      {r ? (
        <>
          <StateCard r={r} running={running} act={act} actionError={actionError} headingRef={stateHeading} />
          {r.status.state === 'adoption_prepared' ? <ConfirmCard r={r} running={running} act={act} /> : null}
          <HoldsCard r={r} running={running} act={actOnHold} progress={holdProgress} />
          {r.status.receipts.length > 0 ? <RecoveryTimeline receipts={r.status.receipts} /> : null}
          <RecoveryRpo status={r.status} />
        </>
      ) : null}
    </>
  );
}
