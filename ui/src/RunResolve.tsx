/**
 * A run's uncertain mutating calls: each with the evidence the run and the effect owner hold about
 * it, beside the form that settles it (`loopx run resolve`: committed with its result, absent, or
 * abandon) after a deliberate confirmation. A call is never re-run; it is settled under its
 * original id.
 */
import { useId, useState, type FormEvent } from 'react';
import { abbreviate } from './components';
import { ActionButton, ActionRefusal, type RunActions } from './RunActions';
import type { CallEvidence, RunView, UncertainCall } from './types';

type Choice = 'committed' | 'absent' | 'abandon';

const CHOICES: readonly { value: Choice; label: string; hint: string }[] = [
  {
    value: 'committed',
    label: 'It took effect (committed)',
    hint: 'The receiver has it. Give the result the run should see.',
  },
  {
    value: 'absent',
    label: 'It did not take effect (absent)',
    hint: 'The receiver never got it. It is not sent again.',
  },
  {
    value: 'abandon',
    label: 'Give up knowing (abandon)',
    hint: 'The outcome stays unknown and held; the run goes on without it.',
  },
];

const OUTCOME_WORDS: Record<string, string> = {
  pending: 'dispatched, never settled',
  unknown: 'unknown',
};

export function RunResolve({
  run,
  calls,
  actions,
}: {
  run: RunView;
  calls: readonly UncertainCall[];
  actions: RunActions;
}) {
  return (
    <section aria-labelledby="run-uncertain-heading" className="card" data-testid="run-uncertain">
      <h2 id="run-uncertain-heading">Uncertain calls</h2>
      <p>
        These mutating calls were sent and their outcome is unknown. The run waits: it never sends them again. Check the
        receiver with the evidence below, then settle each one under its original id.
      </p>
      {calls.map((c) => (
        <ResolveCall key={c.call_id} run={run} call={c} actions={actions} />
      ))}
    </section>
  );
}

/** The radio choices of what happened at the receiver: committed, absent or abandon. */
function ChoiceFieldset({
  name,
  choice,
  onChoose,
}: {
  name: string;
  choice: Choice | null;
  onChoose: (c: Choice) => void;
}) {
  return (
    <fieldset>
      <legend>What happened at the receiver?</legend>
      {CHOICES.map((c) => (
        <label key={c.value} className="choice">
          <input
            type="radio"
            name={name}
            value={c.value}
            checked={choice === c.value}
            onChange={() => onChoose(c.value)}
          />{' '}
          <span>
            {c.label} <span className="muted choice-hint">{c.hint}</span>
          </span>
        </label>
      ))}
    </fieldset>
  );
}

/** One uncertain call: its evidence beside the confirmed form that settles it under its original id. */
function ResolveCall({ run, call, actions }: { run: RunView; call: UncertainCall; actions: RunActions }) {
  const headingId = useId();
  const resultId = useId();
  const [choice, setChoice] = useState<Choice | null>(null);
  const [result, setResult] = useState('');
  const [confirmed, setConfirmed] = useState(false);
  const short = abbreviate(call.call_id.split('/').slice(1).join('/') || call.call_id, 24);

  const why =
    actions.busy !== null && actions.busy !== 'resolve'
      ? 'Another action on this run is in progress.'
      : choice === null
        ? 'Choose what happened first.'
        : choice === 'committed' && result.trim() === ''
          ? 'Give its result (JSON) first.'
          : !confirmed
            ? 'Confirm that you checked the evidence first.'
            : null;

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (why !== null || choice === null) return;
    const body = { call_id: call.call_id, resolution: choice, ...(choice === 'committed' ? { result } : {}) };
    await actions.post(
      'resolve',
      body,
      (s) => `Resolved call ${short} as ${choice}: the run is ${s.status}.`,
      call.call_id,
    );
  }

  return (
    <article className="uncertain-call" aria-labelledby={headingId} data-testid="uncertain-call">
      <h3 id={headingId}>
        Call <code>{call.call_id}</code>
      </h3>
      <div className="uncertain-body">
        <Evidence call={call} />
        <form onSubmit={(e) => void onSubmit(e)} noValidate className="resolve-form">
          <ChoiceFieldset name={`resolution-${call.call_id}`} choice={choice} onChoose={setChoice} />
          {choice === 'committed' ? (
            <div className="field field-stacked">
              <label htmlFor={resultId}>Its result, as JSON</label>
              <textarea
                id={resultId}
                rows={2}
                value={result}
                placeholder='{"delivered": true}'
                onChange={(e) => setResult(e.currentTarget.value)}
              />
            </div>
          ) : null}
          <label className="confirm-check">
            <input type="checkbox" checked={confirmed} onChange={(e) => setConfirmed(e.currentTarget.checked)} /> I
            checked the receiver’s evidence for call {short}: settle it as {choice ?? '…'}. It is never sent again.
          </label>
          <ActionButton type="submit" className="primary" why={why}>
            {actions.busy === 'resolve' ? 'Resolving…' : `Resolve call ${short}`}
          </ActionButton>
          <p className="muted">
            From a terminal:{' '}
            <code>
              loopx run resolve {run.run_id} {call.call_id} (--committed RESULT | --absent | --abandon)
            </code>
          </p>
        </form>
      </div>
      <ActionRefusal actions={actions} names={['resolve']} subject={call.call_id} />
    </article>
  );
}

/** What the run and the effect owner hold about the call: no arguments or intent, their digests. */
function Evidence({ call }: { call: UncertainCall }) {
  const e: CallEvidence | null | undefined = call.evidence;
  return (
    <dl className="facts evidence" data-testid="call-evidence" aria-label={`Evidence for call ${call.call_id}`}>
      <div>
        <dt>Effect owner’s outcome</dt>
        <dd>
          {call.outcome === null
            ? 'no record (the call is older than the effect journal)'
            : (OUTCOME_WORDS[call.outcome] ?? call.outcome)}
        </dd>
      </div>
      {e ? (
        <>
          <div>
            <dt>Tool</dt>
            <dd>
              <code>{e.tool}</code> in turn {e.turn}
            </dd>
          </div>
          <div>
            <dt>Arguments</dt>
            <dd>
              {e.arguments.fields.length > 0 ? e.arguments.fields.join(', ') : 'no named fields'}; {e.arguments.bytes}{' '}
              bytes, SHA-256 <code title={e.arguments.sha256}>{abbreviate(e.arguments.sha256, 16)}</code>
            </dd>
          </div>
        </>
      ) : null}
      {e?.effect ? <EffectFacts effect={e.effect} /> : null}
    </dl>
  );
}

function EffectFacts({ effect }: { effect: NonNullable<CallEvidence['effect']> }) {
  return (
    <>
      <div>
        <dt>The receiver was asked</dt>
        <dd>
          <code>{effect.kind}</code> at <code>{effect.target}</code>, under key <code>{effect.idempotency_key}</code>;
          intent SHA-256 <code title={effect.intent_digest}>{abbreviate(effect.intent_digest, 16)}</code>
        </dd>
      </div>
      <div>
        <dt>Attempts</dt>
        <dd>
          {effect.attempts === 1 ? '1 dispatch' : `${effect.attempts} dispatches`}
          {effect.dispatched_at ? (
            <>
              , the last at <time dateTime={effect.dispatched_at}>{effect.dispatched_at}</time>
            </>
          ) : null}
          ; {effect.reconcile_attempts} reconciliation {effect.reconcile_attempts === 1 ? 'attempt' : 'attempts'}
          {effect.hold ? (
            <>
              ; held: <code>{effect.hold}</code>
            </>
          ) : null}
        </dd>
      </div>
      <div>
        <dt>History</dt>
        <dd>
          <ol className="effect-history">
            {effect.history.map((h, i) => (
              <li key={i}>
                <time dateTime={h.at}>{h.at}</time> {h.event} → {h.outcome}
                {h.reason ? (
                  <>
                    {' '}
                    (<code>{h.reason}</code>)
                  </>
                ) : null}
              </li>
            ))}
          </ol>
        </dd>
      </div>
    </>
  );
}
