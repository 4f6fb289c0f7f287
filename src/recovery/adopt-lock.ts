/**
 * One writer of a recovery at a time: `loopx recover apply`, `resolve` and `abort` — from the CLI
 * or the daemon — hold an exclusive flock on `<destination>/recovery/lock` for their whole run. A
 * second one is refused at once (`recover_busy`), never queued behind the first and never let to
 * append to the journal beside it. The lock dies with its process, so a killed apply leaves
 * nothing to clean up; the lock file is never unlinked.
 */
import { join } from 'node:path';
import { tryLock } from '../core/index.js';
import { RECOVER_REFUSALS as R } from './adopt-codes.js';
import { LOCK_FILE, RECOVERY_DIR } from './adopt-plan.js';

/** `fn` under the recovery's lock; `recover_busy` while another apply, resolve or abort holds it. */
export async function withRecoveryLock<T>(
  destination: string,
  operatorDestination: string,
  fn: () => Promise<T>,
): Promise<T> {
  const held = tryLock(join(destination, RECOVERY_DIR, LOCK_FILE), 'exclusive');
  if (!held) throw R.busy(operatorDestination);
  try {
    return await fn();
  } finally {
    held.release();
  }
}
