/**
 * The model's answer while it arrives: the text of the run's model call in flight, assembled from
 * its `ModelStreamed` events as they come (from whichever process drives the run). It disappears
 * once the response is recorded (`ModelResponded`, then shown in the events) or the call failed;
 * a retried call starts again from its new attempt's text.
 */
import type { RunEvent } from './types';

interface InFlight {
  readonly turn: number;
  readonly callId: string;
  readonly attempt: number;
  readonly text: string;
}

/** The call in flight at the end of `events`, or null. */
export function inFlightText(events: readonly RunEvent[]): InFlight | null {
  let current = null as InFlight | null;
  for (const e of events) {
    const callId = typeof e.data.model_call_id === 'string' ? e.data.model_call_id : null;
    if (e.type === 'ModelStreamed' && callId) {
      const attempt = Number(e.data.attempt);
      const text = String(e.data.text ?? '');
      const same: InFlight | null =
        current !== null && current.callId === callId && current.attempt === attempt ? current : null;
      current = same
        ? { turn: same.turn, callId, attempt, text: same.text + text }
        : { turn: Number(e.data.turn), callId, attempt, text };
    } else if (
      e.type === 'ModelResponded' ||
      e.type === 'ModelRetried' ||
      e.type === 'Failed' ||
      e.type === 'Cancelled' ||
      e.type === 'Suspended'
    ) {
      current = null;
    }
  }
  return current;
}

export function RunStreaming({ events }: { events: readonly RunEvent[] }) {
  const call = inFlightText(events);
  if (!call) return null;
  return (
    <section aria-labelledby="run-streaming-heading" className="card" data-testid="run-streaming">
      <h2 id="run-streaming-heading">The model is answering (turn {call.turn})</h2>
      <p className="muted">
        Its text as it arrives{call.attempt > 1 ? ` — attempt ${call.attempt}, after a retry` : ''}; the run records the
        whole answer when it is complete.
      </p>
      <p className="streaming-text" aria-busy="true" data-testid="run-streaming-text">
        {call.text}
      </p>
    </section>
  );
}
