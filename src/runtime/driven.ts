import type { LocalRunAuthority } from '../run-authority/index.js';

/** Whether a live driver holds the run's lock now: probed by taking it (and letting go at once). */
export async function drivenNow(authority: LocalRunAuthority, runId: string): Promise<boolean> {
  try {
    const lease = await authority.acquireRun(runId);
    if (!lease) return true;
    await lease.release();
    return false;
  } catch {
    return false; // not a run id the authority knows how to lock: nobody drives it
  }
}
