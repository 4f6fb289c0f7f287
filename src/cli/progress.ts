/**
 * Progress on a terminal stream (stderr), drawn only when that stream is a TTY: a one-line
 * progress bar, redrawn at most ten times a second unless forced, erased when done; and the line
 * of a model call in progress (`showModelCalls`), which names the host asked, the attempt and the
 * time taken instead of leaving the terminal silent.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';

export interface ProgressBar {
  update(fraction: number, label: string, force?: boolean): void;
  end(): void;
}

export function progressBar(stream: NodeJS.WriteStream, width = 28): ProgressBar {
  let last = 0;
  let drawn = false;
  return {
    update(fraction, label, force = false) {
      const t = Date.now();
      if (!force && t - last < 100) return;
      last = t;
      const f = Math.max(0, Math.min(1, fraction));
      const filled = Math.round(f * width);
      stream.write(`\r\x1b[2K[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round(f * 100)}%  ${label}`);
      drawn = true;
    },
    end() {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}

/**
 * What the engine reports on its model-call diagnostics channel (engine/model-call.ts,
 * `MODEL_CALL_CHANNEL` and `ModelCallReport`, of which these are the fields shown). The CLI
 * imports nothing of the engine, so they are repeated here; test/engine/model-call-host.test.ts
 * holds the channel's name equal and checks the fields the engine publishes.
 */
export const MODEL_CALL_CHANNEL = 'loopx:model-call';

export type ModelCallReport = { readonly host: string | undefined; readonly attempts: number } & (
  | { readonly phase: 'attempt'; readonly attempt: number }
  | { readonly phase: 'retry'; readonly attempt: number; readonly code: string; readonly delay_ms: number }
  | { readonly phase: 'end'; readonly ok: boolean }
);

/** Whole seconds, as the progress line shows a time. */
const seconds = (ms: number): string => `${Math.max(0, Math.round(ms / 1000))} s`;

/**
 * The progress line of a model call in progress, `elapsedMs` after it began: the host it asks,
 * which attempt of how many (from the second on), and how long it has taken — or, while a retry
 * waits, why and for how long.
 */
export function modelCallLine(
  state: {
    readonly host: string | undefined;
    readonly attempt: number;
    readonly attempts: number;
    readonly waiting?: { readonly code: string; readonly untilMs: number };
  },
  elapsedMs: number,
  nowMs: number,
): string {
  const where = state.host === undefined ? 'the model' : `the model at ${state.host}`;
  if (state.waiting)
    return `${where} failed (${state.waiting.code}); asking again in ${seconds(state.waiting.untilMs - nowMs)} (attempt ${state.attempt + 1} of ${state.attempts}, ${seconds(elapsedMs)})`;
  const attempt = state.attempt > 1 ? `attempt ${state.attempt} of ${state.attempts}, ` : '';
  return `asking ${where}… (${attempt}${seconds(elapsedMs)})`;
}

export interface ModelCallProgress {
  report(r: ModelCallReport): void;
  /** Erase the line and stop redrawing it. */
  close(): void;
}

/**
 * A model call's progress on `stream`, one line redrawn every second from the reports it is given
 * and erased when the call ends. `now` and the ticker are injectable for tests.
 */
export function modelCallProgress(
  stream: Pick<NodeJS.WriteStream, 'write'>,
  options: { now?: () => number; every?: (fn: () => void, ms: number) => () => void } = {},
): ModelCallProgress {
  const now = options.now ?? Date.now;
  const every =
    options.every ??
    ((fn, ms) => {
      const t = setInterval(fn, ms);
      t.unref();
      return () => clearInterval(t);
    });
  let call:
    | {
        startedAt: number;
        host: string | undefined;
        attempt: number;
        attempts: number;
        waiting?: { code: string; untilMs: number };
      }
    | undefined;
  let stop: (() => void) | undefined;
  let drawn = false;
  const draw = () => {
    if (!call) return;
    stream.write(`\r\x1b[2K${modelCallLine(call, now() - call.startedAt, now())}`);
    drawn = true;
  };
  const erase = () => {
    stop?.();
    stop = undefined;
    if (drawn) stream.write('\r\x1b[2K');
    drawn = false;
    call = undefined;
  };
  return {
    report(r) {
      if (r.phase === 'end') return erase();
      if (r.phase === 'attempt') {
        call = { startedAt: call?.startedAt ?? now(), host: r.host, attempt: r.attempt, attempts: r.attempts };
      } else if (call) {
        call.waiting = { code: r.code, untilMs: now() + r.delay_ms };
      }
      draw();
      stop ??= every(draw, 1000);
    },
    close: erase,
  };
}

/**
 * Show the progress of this process's model calls on `stream` (stderr) while it is a terminal;
 * nothing otherwise. Returns the function that stops it and erases the line.
 */
export function showModelCalls(stream: NodeJS.WriteStream = process.stderr): () => void {
  if (!stream.isTTY) return () => {};
  const progress = modelCallProgress(stream);
  const onReport = (message: unknown) => progress.report(message as ModelCallReport);
  subscribe(MODEL_CALL_CHANNEL, onReport);
  return () => {
    unsubscribe(MODEL_CALL_CHANNEL, onReport);
    progress.close();
  };
}

/** `fn`, with this process's model calls shown on stderr meanwhile (`showModelCalls`). */
export async function withModelCallsShown<T>(fn: () => Promise<T>): Promise<T> {
  const stop = showModelCalls();
  try {
    return await fn();
  } finally {
    stop();
  }
}

/** A byte count as an operator reads it: B, KiB or MiB, one decimal. */
export const mib = (bytes: number): string =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KiB`
      : `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
