/**
 * Named fault points for crash tests. Inert unless the test-only switch LOOPX_TEST_FAULT names the
 * point; then the process SIGKILLs itself there — a real, uncatchable death at an exact place, so
 * tests need no sleeps. Never set in production; the name of every point is listed in the docs.
 */
export function faultPoint(name: string): void {
  const wanted = process.env.LOOPX_TEST_FAULT;
  if (wanted === undefined || wanted !== name) return;
  process.kill(process.pid, 'SIGKILL');
}
