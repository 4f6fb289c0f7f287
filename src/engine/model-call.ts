/**
 * One model call of a turn, as the turn loop makes it: streamed text recorded as it arrives, and a
 * retryable provider failure retried with backoff inside the turn.
 *
 * Rules it keeps:
 * - Streamed text is informational: `ModelStreamed` events carry it (batched, at most every
 *   STREAM_FLUSH_MS or STREAM_FLUSH_CHARS), so `run events --follow` and the UI show it as it
 *   arrives from any process; what the run records as its response is the whole response, in
 *   `ModelResponded` (the turn loop's commit). Text streamed by an attempt that then failed stays
 *   in the log, marked by its attempt number.
 * - A retry makes only the model call again, under the same model call id: the turn's response is
 *   not recorded yet, so no tool of the turn has run and none is re-run. Each retry is recorded
 *   (`ModelRetried`: the failed attempt, its code, the wait) before the wait.
 * - The wait is the provider's own (retry-after) when it sent one, else `baseDelayMs × 2^n`; never
 *   more than `maxDelayMs`. After `attempts` attempts the last failure is the turn's.
 * - If recording streamed text fails (the run's log moved under this driver), the call is aborted
 *   and that failure is raised: a driver that lost its run stops.
 * - A failure names the endpoint's host (providers/failures.ts), and the call reports its progress
 *   on the diagnostics channel MODEL_CALL_CHANNEL — each attempt as it starts, each retry's wait,
 *   the end — for a process that shows it (the CLI on a terminal). A report carries the host, never
 *   a URL's path, a key or any text of the call; with no subscriber nothing is built.
 */
import { channel } from 'node:diagnostics_channel';
import { isLoopxError, type LoopxError } from '../core/index.js';
import type { ModelSpec } from './agent.js';
import type { ModelRetryPolicy } from './application.js';
import type { NewEvent } from './events.js';
import { classifyModelError, endpointHostOf } from './providers/failures.js';
import type { ModelProvider, ModelRequest, ModelResponse } from './providers/provider.js';

export const STREAM_FLUSH_MS = 100;
export const STREAM_FLUSH_CHARS = 512;

export interface ModelCall {
  readonly provider: ModelProvider;
  readonly request: Omit<ModelRequest, 'onText' | 'signal'>;
  readonly retry: ModelRetryPolicy;
  /** The variable the provider's key is read from, for an auth failure's next action. */
  readonly keyEnv: string | undefined;
  /** Commit informational events of this call to the run (synchronously). */
  readonly record: (events: NewEvent[]) => Promise<void>;
  readonly sleep?: (ms: number) => Promise<void>;
}

export type ModelCallResult =
  | {
      readonly ok: true;
      readonly response: ModelResponse;
      /** Streamed text not yet recorded: commit it with the response. */ readonly pending: NewEvent[];
    }
  | { readonly ok: false; readonly error: LoopxError };

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The diagnostics channel (node:diagnostics_channel) every model call of this process reports its progress on. */
export const MODEL_CALL_CHANNEL = 'loopx:model-call';

/**
 * One report on MODEL_CALL_CHANNEL: `attempt` as attempt `attempt` of at most `attempts` starts;
 * `retry` when it failed retryably, before the wait of `delay_ms` (its failure's `code`); `end`
 * once the call has its response (`ok`) or its failure. `host` is the endpoint's (undefined for a
 * provider that has none, such as `scripted`).
 */
export type ModelCallReport = {
  readonly run_id: string;
  readonly turn: number;
  readonly provider: string;
  readonly host: string | undefined;
  readonly attempts: number;
} & ModelCallPhase;

type ModelCallPhase =
  | { readonly phase: 'attempt'; readonly attempt: number }
  | { readonly phase: 'retry'; readonly attempt: number; readonly code: string; readonly delay_ms: number }
  | { readonly phase: 'end'; readonly ok: boolean };

const reports = channel(MODEL_CALL_CHANNEL);

export async function callModel(call: ModelCall): Promise<ModelCallResult> {
  const { turn, modelCallId } = call.request;
  // The request's model is the agent's ModelSpec: its base_url, when it has one, is where the call goes.
  const host = endpointHostOf(call.request.model as ModelSpec);
  const report = (r: ModelCallPhase) => {
    if (reports.hasSubscribers)
      reports.publish({
        run_id: call.request.runId,
        turn,
        provider: call.provider.name,
        host,
        attempts: call.retry.attempts,
        ...r,
      });
  };
  let ok = false;
  try {
    for (let attempt = 1; ; attempt++) {
      report({ phase: 'attempt', attempt });
      const stream = new StreamRecorder(call, attempt);
      try {
        const response = await call.provider.generate({
          ...call.request,
          onText: stream.onText,
          signal: stream.signal,
        });
        await stream.settled();
        stream.throwIfFailed();
        ok = true;
        return { ok: true, response, pending: stream.take() };
      } catch (e) {
        await stream.settled();
        stream.throwIfFailed();
        stream.flush();
        await stream.settled();
        const failure = classifyModelError(e, call.provider.name, call.keyEnv, host);
        if (!failure.retryable || attempt >= call.retry.attempts) return { ok: false, error: failure.error };
        const delay = Math.min(
          call.retry.maxDelayMs,
          failure.retryAfterMs ?? call.retry.baseDelayMs * 2 ** (attempt - 1),
        );
        await call.record([
          {
            type: 'ModelRetried',
            data: { turn, model_call_id: modelCallId, attempt, code: failure.error.code, delay_ms: Math.round(delay) },
          },
        ]);
        report({ phase: 'retry', attempt, code: failure.error.code, delay_ms: Math.round(delay) });
        await (call.sleep ?? wait)(delay);
      } finally {
        stream.close();
      }
    }
  } finally {
    report({ phase: 'end', ok });
  }
}

/** Buffers one attempt's text deltas and records them in batches, one commit at a time, in order. */
class StreamRecorder {
  readonly #call: ModelCall;
  readonly #attempt: number;
  readonly #abort = new AbortController();
  #buffer = '';
  #timer: NodeJS.Timeout | undefined;
  #failed: unknown;
  #closed = false;
  /** The batches' commits, chained: each starts when the one before it has landed. */
  #writing: Promise<void> = Promise.resolve();

  constructor(call: ModelCall, attempt: number) {
    this.#call = call;
    this.#attempt = attempt;
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  readonly onText = (delta: string): void => {
    if (this.#closed || this.#failed !== undefined) return;
    this.#buffer += delta;
    if (this.#buffer.length >= STREAM_FLUSH_CHARS) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), STREAM_FLUSH_MS);
  };

  #event(text: string): NewEvent {
    return {
      type: 'ModelStreamed',
      data: {
        turn: this.#call.request.turn,
        model_call_id: this.#call.request.modelCallId,
        attempt: this.#attempt,
        text,
      },
    };
  }

  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#buffer === '' || this.#failed !== undefined) return;
    const event = this.#event(this.#buffer);
    this.#buffer = '';
    this.#writing = this.#writing.then(async () => {
      if (this.#failed !== undefined) return;
      try {
        await this.#call.record([event]);
      } catch (e) {
        this.#failed = e;
        this.#abort.abort(e);
      }
    });
  }

  /** Every batch handed to `record` so far has landed (or failed). */
  settled(): Promise<void> {
    return this.#writing;
  }

  /** The unrecorded rest, for the response's own commit. */
  take(): NewEvent[] {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const rest = this.#buffer;
    this.#buffer = '';
    return rest === '' ? [] : [this.#event(rest)];
  }

  throwIfFailed(): void {
    if (this.#failed === undefined) return;
    throw isLoopxError(this.#failed)
      ? this.#failed
      : new Error('recording streamed text failed', { cause: this.#failed });
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }
}
