/**
 * Named fault points for crash tests. Inert unless the test-only switch LOOPX_TEST_FAULT names the
 * point. `LOOPX_TEST_FAULT=<point>` makes the process SIGKILL itself there — a real, uncatchable
 * death at an exact place, so tests need no sleeps. `LOOPX_TEST_FAULT=throw:<point>` throws an
 * untyped error there instead, as a failing OS call would (an fsync's EIO), so the in-process
 * handling of a failure at that point is tested too. `LOOPX_TEST_FAULT=stop:<point>` makes the
 * process SIGSTOP itself there — paused exactly at that point until a test sends SIGCONT. Never set in production; the name of every
 * point is listed in the docs.
 */
export const THROW_FAULT_PREFIX = 'throw:';
export const STOP_FAULT_PREFIX = 'stop:';

export function faultPoint(name: string): void {
  const wanted = process.env.LOOPX_TEST_FAULT;
  if (wanted === undefined) return;
  if (wanted === name) process.kill(process.pid, 'SIGKILL');
  if (wanted === `${STOP_FAULT_PREFIX}${name}`) process.kill(process.pid, 'SIGSTOP');
  if (wanted === `${THROW_FAULT_PREFIX}${name}`)
    throw Object.assign(new Error(`injected fault at ${name}`), { code: 'EIO' });
}
