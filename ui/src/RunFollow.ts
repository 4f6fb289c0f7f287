/**
 * One run, kept live: the run as GET /api/runs/:id answers it, and its events followed on the
 * daemon's live stream (`?follow=until-terminal`) — which keeps following a run that waits, is
 * suspended or is driven by another process (the CLI, `work run`) until it ends, and sends the
 * run's view (`event: run`) whenever it changes, so what is done elsewhere shows without a reload.
 */
import { useCallback, useEffect, useRef, useState, type Dispatch, type SetStateAction } from 'react';
import { ApiError, asApiError, getJson, isAbort } from './api';
import { runPath } from './router';
import { readSse } from './sse';
import type { RunEvent, RunStatus, RunView } from './types';

/** Connecting (no view yet), following a run that can still change, finished (the run has ended), or the stream failed. */
export type Follow = 'connecting' | 'following' | 'finished' | 'error';

export const TERMINAL: ReadonlySet<RunStatus> = new Set<RunStatus>(['completed', 'failed', 'cancelled']);

/** A pause before following again a stream the daemon ended while the run could still change. */
const REFOLLOW_MS = 1000;

/** The run, loaded when the view opens and again through loadRun; the live stream sets it too. */
export function useRun(runId: string, root: string | null = null) {
  const [run, setRun] = useState<RunView | null>(null);
  const [loadError, setLoadError] = useState<ApiError | null>(null);

  const loadRun = useCallback(
    async (signal?: AbortSignal) => {
      const r = await getJson<RunView>(runPath(runId, root), signal);
      setRun(r);
      setLoadError(null);
      return r;
    },
    [runId, root],
  );

  // App.tsx keys RunDetail by its run id: another run is a new component with fresh state, so
  // nothing here resets it (a setState in the effect body would render twice). The first load
  // sets state in its promise's callbacks: react-hooks/set-state-in-effect takes a setState after
  // an await inside loadRun for a synchronous one (react/react#34905).
  useEffect(() => {
    const ctrl = new AbortController();
    getJson<RunView>(runPath(runId, root), ctrl.signal).then(
      (r) => {
        setRun(r);
        setLoadError(null);
      },
      (e: unknown) => {
        if (!isAbort(e)) setLoadError(asApiError(e));
      },
    );
    return () => ctrl.abort();
  }, [runId, root]);

  return { run, setRun, loadError, loadRun };
}

function parseStreamError(data: string): ApiError {
  let body: { code?: unknown; message?: unknown; next_action?: unknown; details?: unknown } = {};
  try {
    const parsed = JSON.parse(data) as typeof body & { error?: typeof body };
    body = parsed.error ?? parsed;
  } catch {
    // not JSON
  }
  return new ApiError(0, {
    code: typeof body.code === 'string' ? body.code : 'ui_stream_interrupted',
    message: typeof body.message === 'string' ? body.message : 'The daemon stopped the event stream.',
    ...(typeof body.next_action === 'string' ? { next_action: body.next_action } : {}),
    details: body.details,
  });
}

/**
 * The cursor an imported run's refusal names: details.recovery_cursor, else the `--after N` of its
 * next action (an imported run has no events before its snapshot).
 */
function namedCursor(err: ApiError): number | undefined {
  const detail = (err.details as { recovery_cursor?: unknown } | undefined)?.recovery_cursor;
  const fromNext = /--after (\d+)/.exec(err.nextAction ?? '')?.[1];
  return typeof detail === 'number' ? detail : fromNext !== undefined ? Number(fromNext) : undefined;
}

/** What following a run changes in the view. */
interface FollowHandlers {
  readonly setFollow: (f: Follow) => void;
  readonly setEvents: Dispatch<SetStateAction<readonly RunEvent[]>>;
  readonly setStreamError: (e: ApiError | null) => void;
  readonly setImportedAt: (n: number) => void;
  readonly setRun: (r: RunView) => void;
  readonly loadRun: (signal?: AbortSignal) => Promise<RunView>;
}

/** One pass over the live stream from the last event seen; resolves with the last view it carried (or null) when the daemon ends it. */
async function followOnce(
  runId: string,
  root: string | null,
  signal: AbortSignal,
  lastSeen: { current: number },
  h: FollowHandlers,
): Promise<RunView | null> {
  let streamFailure: ApiError | null = null;
  let view: RunView | null = null;
  await readSse(runPath(runId, root, `/events?follow=until-terminal&after=${lastSeen.current}`), {
    signal,
    lastEventId: lastSeen.current > 0 ? String(lastSeen.current) : null,
    onMessage: (m) => {
      if (m.event === 'error') {
        // The daemon ends the stream with `event: error` when the engine refuses mid-stream.
        streamFailure = parseStreamError(m.data);
        return;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(m.data);
      } catch {
        return;
      }
      if (m.event === 'run') {
        view = parsed as RunView;
        h.setRun(view);
        h.setFollow(TERMINAL.has(view.status) ? 'finished' : 'following');
        return;
      }
      const ev = parsed as RunEvent;
      if (typeof ev.sequence !== 'number' || ev.sequence <= lastSeen.current) return;
      lastSeen.current = ev.sequence;
      h.setEvents((prev) => [...prev, ev]);
    },
  });
  if (streamFailure) throw streamFailure;
  return view;
}

/** Follow the run until it has ended: again after a pause if the daemon ended the stream before; an imported run from its snapshot's sequence. */
async function followRun(
  runId: string,
  root: string | null,
  signal: AbortSignal,
  lastSeen: { current: number },
  h: FollowHandlers,
): Promise<void> {
  while (!signal.aborted) {
    let last: RunView | null;
    try {
      last = await followOnce(runId, root, signal, lastSeen, h);
      if (signal.aborted) return;
      // The daemon ends a live stream when the run has ended, its last message the run as it ended; or when it stops.
      last = last && TERMINAL.has(last.status) ? last : await h.loadRun(signal);
    } catch (e) {
      if (isAbort(e) || signal.aborted) return;
      const err = asApiError(e);
      // An imported run: start at the cursor the daemon names, else at the run's last sequence.
      if (err.code === 'cursor_before_snapshot') {
        let cursor = namedCursor(err);
        if (cursor === undefined) cursor = (await h.loadRun(signal).catch(() => null))?.last_sequence;
        if (cursor !== undefined && cursor > lastSeen.current) {
          lastSeen.current = cursor;
          h.setImportedAt(cursor);
          continue;
        }
      }
      h.setStreamError(err);
      h.setFollow('error');
      return;
    }
    h.setStreamError(null);
    if (TERMINAL.has(last.status)) {
      h.setFollow('finished');
      return;
    }
    await new Promise((res) => window.setTimeout(res, REFOLLOW_MS));
  }
}

/** The run's events as they arrive, and the run's view as it changes; `refollow` opens the stream again after it failed. */
export function useRunEvents(
  runId: string,
  root: string | null,
  setRun: (r: RunView) => void,
  loadRun: (signal?: AbortSignal) => Promise<RunView>,
) {
  const [events, setEvents] = useState<readonly RunEvent[]>([]);
  const [follow, setFollow] = useState<Follow>('connecting');
  const [streamError, setStreamError] = useState<ApiError | null>(null);
  const [streamGeneration, setStreamGeneration] = useState(0);
  const lastSeen = useRef(0);
  const [importedAt, setImportedAt] = useState<number | null>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    void followRun(runId, root, ctrl.signal, lastSeen, {
      setFollow,
      setEvents,
      setStreamError,
      setImportedAt,
      setRun,
      loadRun,
    });
    return () => ctrl.abort();
  }, [runId, root, streamGeneration, setRun, loadRun]);

  const refollow = useCallback(() => {
    setStreamError(null);
    setFollow('connecting');
    setStreamGeneration((g) => g + 1);
  }, []);
  return { events, follow, streamError, importedAt, refollow };
}
