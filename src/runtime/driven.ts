/**
 * What a read of a root (`run show`, `run list`, `run events`) asks the run authority: whether a
 * live driver holds a run now. The authority is opened only when it exists — a read never creates
 * it — and a root without one reads as driven by nobody.
 */
import { openRunAuthority, type LocalRunAuthority } from '../run-authority/index.js';
import type { RootAccess } from './root.js';

/** Whether a live driver holds the run's lock now: probed by taking it (and letting go at once). */
async function drivenNow(authority: LocalRunAuthority, runId: string): Promise<boolean> {
  try {
    const lease = await authority.acquireRun(runId);
    if (!lease) return true;
    await lease.release();
    return false;
  } catch {
    return false; // not a run id the authority knows how to lock: nobody drives it
  }
}

/** `fn` with the probe of the run authority at `a` (undefined when there is none), closed after. */
export async function withDrivenProbe<T>(
  a: RootAccess,
  fn: (isDriven: ((runId: string) => Promise<boolean>) | undefined) => Promise<T>,
): Promise<T> {
  let authority: LocalRunAuthority | undefined;
  try {
    authority = openRunAuthority({ ...(a.authorityDir !== undefined ? { dir: a.authorityDir } : {}), create: false });
  } catch {
    authority = undefined;
  }
  try {
    return await fn(authority ? (runId) => drivenNow(authority, runId) : undefined);
  } finally {
    await authority?.close();
  }
}
