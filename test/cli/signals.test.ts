/** onStopSignal: the first signal aborts and removes its handlers (a second meets the default action); dispose removes them too. */
import { describe, expect, it } from 'vitest';
import { onStopSignal } from '../../src/cli/signals.js';

describe('onStopSignal', () => {
  it('the first signal aborts and resolves `stopped`, and leaves no handler behind', async () => {
    const before = process.listenerCount('SIGUSR2');
    const stop = onStopSignal(['SIGUSR2']);
    expect(process.listenerCount('SIGUSR2')).toBe(before + 1);
    process.kill(process.pid, 'SIGUSR2');
    await stop.stopped;
    expect(stop.signal.aborted).toBe(true);
    expect(process.listenerCount('SIGUSR2')).toBe(before);
  });

  it('dispose removes the handlers without aborting', () => {
    const before = process.listenerCount('SIGUSR2');
    const stop = onStopSignal(['SIGUSR2']);
    stop.dispose();
    expect(process.listenerCount('SIGUSR2')).toBe(before);
    expect(stop.signal.aborted).toBe(false);
  });
});
