/**
 * A run's events as they arrive: the log keeps its newest event in view while the reader is at its
 * end, and stays where a reader who scrolled up left it; it never takes the focus.
 */
import { useLayoutEffect, useRef } from 'react';
import type { ApiError } from './api';
import { ErrorBox } from './components';
import type { Follow } from './RunFollow';
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
          {follow === 'following' ? 'Following live: new events appear here as the run is driven — from this page, another tab or the command line.' : null}
          {follow === 'finished' ? `Not following: the run has ended${status ? ` (${status})` : ''}; no more events will come.` : null}
          {follow === 'error' ? 'The event stream stopped.' : null}
        </span>{' '}
        <span>{events.length === 1 ? '1 event' : `${events.length} events`} shown.</span>
      </p>
      {importedAt !== null ? (
        <p className="muted" data-testid="run-imported-note">
          This run came into this root by import: events up to sequence {importedAt} are not here; the list starts after it.
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
        <ol className="events">
          {events.map((e) => (
            <li key={e.sequence} data-testid="run-event">
              <span className="ev-seq">{e.sequence}</span> <span className="ev-type">{e.type}</span>{' '}
              <time className="ev-at muted" dateTime={e.at}>
                {e.at}
              </time>{' '}
              <code className="ev-data">{JSON.stringify(e.data)}</code>
            </li>
          ))}
        </ol>
      </div>
    </section>
  );
}
