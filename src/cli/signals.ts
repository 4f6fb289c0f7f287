/**
 * Stop signals for the commands that run until stopped or can be interrupted (`daemon`,
 * `dev webhook-sink`, `backup-state verify --execute`, `run events --follow`). Install it before
 * anything is announced — a signal sent the moment an address is printed must reach the command,
 * not the default action. The first SIGINT or SIGTERM aborts `signal` and removes the handlers, so
 * a second one meets the default action (a forced stop); `dispose()` removes them when the command
 * ends on its own.
 */
export interface StopSignal {
  readonly signal: AbortSignal;
  /** Resolves on the first stop signal. */
  readonly stopped: Promise<void>;
  dispose(): void;
}

export function onStopSignal(signals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): StopSignal {
  const ac = new AbortController();
  const dispose = (): void => {
    for (const s of signals) process.off(s, stop);
  };
  const stop = (): void => {
    dispose();
    ac.abort();
  };
  for (const s of signals) process.on(s, stop);
  const stopped = new Promise<void>((resolve) => ac.signal.addEventListener('abort', () => resolve(), { once: true }));
  return { signal: ac.signal, stopped, dispose };
}
