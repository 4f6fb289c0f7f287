/** The question a waiting run asks its operator, and the form that answers it (`loopx run answer`). */
import { useId, useState, type FormEvent } from 'react';
import { ActionButton, ActionRefusal, type RunActions } from './RunActions';
import type { RunView } from './types';

export function RunAnswer({
  run,
  question,
  actions,
}: {
  run: RunView;
  question: { interaction_id: string; prompt: string };
  actions: RunActions;
}) {
  const fieldId = useId();
  const promptId = useId();
  const [text, setText] = useState('');
  const [missing, setMissing] = useState(false);

  async function onSubmit(ev: FormEvent) {
    ev.preventDefault();
    if (text.trim() === '') {
      setMissing(true);
      return;
    }
    setMissing(false);
    const done = await actions.post('answer', { interaction_id: question.interaction_id, text }, (s) =>
      s.waiting_for?.kind === 'interaction'
        ? 'Answered; the run asks again.'
        : `Answered: the run is ${s.status}, ${s.completed_turns} turns.`,
    );
    if (done) setText('');
  }

  return (
    <section aria-labelledby="run-question-heading" className="card" data-testid="run-question">
      <h2 id="run-question-heading">The run asks you</h2>
      <p className="run-prompt" id={promptId}>
        “{question.prompt}”
      </p>
      <p className="muted">
        Interaction <code>{question.interaction_id}</code>. The run waits until it is answered; from a terminal:{' '}
        <code>
          loopx run answer {run.run_id} {question.interaction_id} “…”
        </code>
      </p>
      <form onSubmit={(e) => void onSubmit(e)} noValidate>
        <div className="field field-stacked">
          <label htmlFor={fieldId}>Your answer</label>
          <textarea
            id={fieldId}
            rows={3}
            value={text}
            aria-describedby={promptId}
            aria-invalid={missing || undefined}
            onChange={(e) => setText(e.currentTarget.value)}
          />
        </div>
        {missing ? (
          <p className="field-error" role="alert">
            Write an answer first.
          </p>
        ) : null}
        <ActionButton
          type="submit"
          className="primary"
          why={actions.busy !== null && actions.busy !== 'answer' ? 'Another action on this run is in progress.' : null}
        >
          {actions.busy === 'answer' ? 'Sending…' : 'Send the answer'}
        </ActionButton>
      </form>
      <ActionRefusal actions={actions} names={['answer']} />
    </section>
  );
}
