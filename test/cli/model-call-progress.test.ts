/**
 * The line a terminal shows while a model call is in progress (src/cli/progress.ts): the host it
 * asks, the attempt from the second on, the time taken, a retry's wait with its failure's code —
 * redrawn every second, erased when the call ends — and nothing at all on a stream that is not a
 * terminal. Time and the ticker are the test's; the reports are the engine's shape.
 */
import { channel } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import {
  MODEL_CALL_CHANNEL,
  modelCallLine,
  modelCallProgress,
  showModelCalls,
  type ModelCallReport,
} from '../../src/cli/progress.js';

const HOST = '127.0.0.1:4242';
const ERASE = '\r\x1b[2K';

/** A terminal stream that records what is written, and a clock and ticker the test moves. */
function terminal(isTTY = true) {
  const written: string[] = [];
  let t = 1_000_000;
  let tick: (() => void) | undefined;
  const stream = { isTTY, write: (s: string) => written.push(s) > 0 };
  const clock = {
    now: () => t,
    every: (fn: () => void) => {
      tick = fn;
      return () => (tick = undefined);
    },
  };
  return {
    stream,
    written,
    clock,
    advance(ms: number) {
      t += ms;
      tick?.();
    },
    ticking: () => tick !== undefined,
    /** The line as the terminal shows it now. */
    shown: () => written.join('').split(ERASE).at(-1) ?? '',
  };
}

const report = (r: Partial<ModelCallReport> & Pick<ModelCallReport, 'phase'>): ModelCallReport =>
  ({ host: HOST, attempts: 4, attempt: 1, ...r }) as ModelCallReport;

describe('the progress line of a model call', () => {
  it('names the host and the time taken, then the attempt once the call was made again', () => {
    expect(modelCallLine({ host: HOST, attempt: 1, attempts: 4 }, 3_400, 0)).toBe(`asking the model at ${HOST}… (3 s)`);
    expect(modelCallLine({ host: HOST, attempt: 2, attempts: 3 }, 4_000, 0)).toBe(
      `asking the model at ${HOST}… (attempt 2 of 3, 4 s)`,
    );
    expect(modelCallLine({ host: undefined, attempt: 1, attempts: 4 }, 0, 0)).toBe('asking the model… (0 s)');
    expect(
      modelCallLine(
        { host: HOST, attempt: 1, attempts: 4, waiting: { code: 'model_unavailable', untilMs: 2_000 } },
        1_000,
        0,
      ),
    ).toBe(`the model at ${HOST} failed (model_unavailable); asking again in 2 s (attempt 2 of 4, 1 s)`);
  });

  it('is drawn when an attempt starts, redrawn every second, shows a retry’s wait, and is erased when the call ends', () => {
    const term = terminal();
    const progress = modelCallProgress(term.stream, term.clock);
    progress.report(report({ phase: 'attempt', attempt: 1 }));
    expect(term.shown()).toBe(`asking the model at ${HOST}… (0 s)`);
    term.advance(10_000);
    expect(term.shown()).toBe(`asking the model at ${HOST}… (10 s)`);
    progress.report(report({ phase: 'retry', attempt: 1, code: 'model_unavailable', delay_ms: 2_000 }));
    expect(term.shown()).toBe(
      `the model at ${HOST} failed (model_unavailable); asking again in 2 s (attempt 2 of 4, 10 s)`,
    );
    term.advance(1_000);
    expect(term.shown()).toContain('asking again in 1 s');
    term.advance(1_000);
    progress.report(report({ phase: 'attempt', attempt: 2 }));
    // The time is the whole call's, across its attempts.
    expect(term.shown()).toBe(`asking the model at ${HOST}… (attempt 2 of 4, 12 s)`);
    progress.report(report({ phase: 'end', ok: true }));
    expect(term.written.at(-1)).toBe(ERASE);
    expect(term.shown()).toBe('');
    expect(term.ticking()).toBe(false);
    // The next call starts its own clock.
    term.advance(5_000);
    progress.report(report({ phase: 'attempt', attempt: 1 }));
    expect(term.shown()).toBe(`asking the model at ${HOST}… (0 s)`);
    progress.close();
    expect(term.shown()).toBe('');
  });

  it('shows the engine’s reports while it is on, and writes nothing once stopped', () => {
    const term = terminal();
    const stop = showModelCalls(term.stream as unknown as NodeJS.WriteStream);
    channel(MODEL_CALL_CHANNEL).publish(report({ phase: 'attempt', attempt: 1 }));
    expect(term.shown()).toMatch(new RegExp(`^asking the model at ${HOST.replace(/\./g, '\\.')}… \\(\\d+ s\\)$`));
    stop();
    expect(term.shown()).toBe('');
    const before = term.written.length;
    channel(MODEL_CALL_CHANNEL).publish(report({ phase: 'attempt', attempt: 2 }));
    expect(term.written.length).toBe(before);
  });

  it('is quiet on a stream that is not a terminal', () => {
    const piped = terminal(false);
    const stop = showModelCalls(piped.stream as unknown as NodeJS.WriteStream);
    channel(MODEL_CALL_CHANNEL).publish(report({ phase: 'attempt', attempt: 1 }));
    channel(MODEL_CALL_CHANNEL).publish(report({ phase: 'end', ok: false }));
    stop();
    expect(piped.written).toEqual([]);
  });
});
