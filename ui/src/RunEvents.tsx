/**
 * A run's events as a timeline an operator reads: each event a line with its sequence, its time and
 * a sentence saying what happened — from what the event carries and nothing else (a call's
 * arguments are never in an event, so never on this page) — its raw JSON behind "Raw event". The
 * log keeps its newest event in view while the reader is at its end, and stays where a reader who
 * scrolled up left it; it never takes the focus.
 */
import { useLayoutEffect, useRef } from 'react';
import type { ApiError } from './api';
import { ErrorBox } from './components';
import type { Follow } from './RunFollow';
import { eventWords, type EventWords } from './runEventWords';
import type { RunEvent, RunStatus } from './types';

/** How close to its end (px) the log counts as read to the end. */
const AT_END_PX = 24;

/** The events shown, whether they are followed live, and why not. */
export function RunEvents({
  events,
  follow,
  status,
  streamError,
  importedAt,
  refollow,
}: {
  events: readonly RunEvent[];
  follow: Follow;
  status: RunStatus | null;
  streamError: ApiError | null;
  importedAt: number | null;
  refollow: () => void;
}) {
  const log = useRef<HTMLDivElement>(null);
  // Whether the reader is at the end of the log: then a new event scrolls into view.
  const atEnd = useRef(true);
  useLayoutEffect(() => {
    const el = log.current;
    if (el && atEnd.current) el.scrollTop = el.scrollHeight;
  }, [events.length]);

  return (
    <section aria-labelledby="run-events-heading" className="card">
      <div className="section-head">
        <h2 id="run-events-heading">Events</h2>
        {follow === 'error' ? (
          <button type="button" onClick={refollow}>
            Follow again
          </button>
        ) : null}
      </div>
      <p className="muted">
        <span role="status" data-testid="run-follow-state">
          {follow === 'connecting' ? 'Connecting to the event stream…' : null}
          {follow === 'following'
            ? 'Following live: new events appear here as the run is driven — from this page, another tab or the command line.'
            : null}
          {follow === 'finished'
            ? `Not following: the run has ended${status ? ` (${status})` : ''}; no more events will come.`
            : null}
          {follow === 'error' ? 'The event stream stopped.' : null}
        </span>{' '}
        <span>{events.length === 1 ? '1 event' : `${events.length} events`} shown.</span>
      </p>
      {importedAt !== null ? (
        <p className="muted" data-testid="run-imported-note">
          This run came into this root by import: events up to sequence {importedAt} are not here; the list starts after
          it.
        </p>
      ) : null}
      {streamError ? <ErrorBox error={streamError} title="Could not follow the events" /> : null}
      <div
        ref={log}
        role="log"
        aria-label="Run events"
        className="event-log"
        tabIndex={0}
        data-testid="run-event-log"
        onScroll={(e) => {
          const el = e.currentTarget;
          atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight <= AT_END_PX;
        }}
      >
        <EventLines events={events} />
      </div>
    </section>
  );
}

/** The day and the time of an event as the reader's locale writes them; the raw event keeps its exact ISO time. */
function clock(at: string): { day: string; time: string } {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return { day: '', time: at };
  return { day: d.toLocaleDateString(), time: d.toLocaleTimeString() };
}

interface Line {
  readonly event: RunEvent;
  readonly words: EventWords;
  /** Its time, with its day when the day changed since the line before. */
  readonly when: string;
}

/** The timeline's lines: each event's sentence (a Completed one quotes the model's last answer before it) and its time. */
function linesOf(events: readonly RunEvent[]): Line[] {
  const lines: Line[] = [];
  let lastAnswer: string | null = null;
  let lastDay = '';
  for (const e of events) {
    const words = eventWords(e, { lastAnswer });
    if (e.type === 'ModelResponded' && typeof e.data.text === 'string' && e.data.text !== '') lastAnswer = e.data.text;
    const { day, time } = clock(e.at);
    lines.push({ event: e, words, when: day !== lastDay ? `${day} ${time}` : time });
    lastDay = day;
  }
  return lines;
}

/** One line per event, in sequence order: its sequence, its time, its sentence, its raw JSON. */
function EventLines({ events }: { events: readonly RunEvent[] }) {
  return (
    <ol className="events">
      {linesOf(events).map(({ event: e, words, when }) => (
        <li
          key={e.sequence}
          data-testid="run-event"
          className={words.deduplicated ? 'ev-deduplicated' : words.tone ? `ev-${words.tone}` : undefined}
        >
          <span className="ev-seq">
            <span className="visually-hidden">Event </span>
            {e.sequence}
          </span>{' '}
          <time className="ev-at" dateTime={e.at}>
            {when}
          </time>{' '}
          <span className="ev-text" data-testid="run-event-text">
            {words.text}
          </span>
          <details className="ev-raw">
            <summary>
              Raw event<span className="visually-hidden"> {e.sequence}</span>
            </summary>
            <pre className="ev-data" data-testid="run-event-raw">
              {JSON.stringify(e, null, 2)}
            </pre>
          </details>
        </li>
      ))}
    </ol>
  );
}
