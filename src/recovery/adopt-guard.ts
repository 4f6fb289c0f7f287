/**
 * A root a recovery is making takes no command before the apply made it, and no writer before the
 * adoption finished: opened early, a command would create stores in it (the apply would find it no
 * longer empty), and a writer would commit beside a half-adopted state (its work store imported but
 * not adopted, its effects not reconciled). Decided here once from the plan and the phase journal;
 * every way into a root (runtime/root.ts) asks before it opens anything, the apply's own path does not.
 * Light on purpose: it imports core and the recovery's file names, codes and journal reader only —
 * the status reader, which loads the planner and the owners, only when a plan is there.
 *
 * A root whose recovery applied every step but is still held (an effect whose outcome is unknown,
 * a receiver that has not confirmed the new lifetime's fence) admits no writer either — no work
 * run, no Todo write (`recover_reconciliation_held`): effects and deliveries are reconciled before
 * ordinary admission opens (the recovery specification's step 6). Resolving the hold opens it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { hasCode, operatorPath } from '../core/index.js';
import { RECOVER_REFUSALS as R } from './adopt-codes.js';
import { foldJournal, readJournal } from './adopt-journal.js';
import { PLAN_FILE, RECOVERY_DIR } from './adopt-files.js';

/** Refuse `root` while a recovery is making it: any command before `host:destination` is done, a writer until every step is. */
export function refuseRecoveryInProgress(root: string, options: { writer: boolean }): void {
  const planPath = join(root, RECOVERY_DIR, PLAN_FILE);
  if (!existsSync(planPath)) return;
  const destination = operatorPath(resolve(root));
  let steps: string[] = [];
  let state: ReturnType<typeof foldJournal> | undefined;
  try {
    const plan = JSON.parse(readFileSync(planPath, 'utf8')) as { steps: { action: string }[] };
    steps = plan.steps.map((s) => s.action);
    state = foldJournal(readJournal(root));
  } catch {
    state = undefined;
  }
  if (!state?.done.has('host:destination')) throw R.destinationNotApplied(destination);
  if (!options.writer) return;
  if (state.abandoned) throw R.abandoned();
  // The next action names no digest read from the plan file: the status prints the one `recover plan` printed.
  if (steps.length === 0 || steps.some((action) => !state.done.has(action))) throw R.adoptionIncomplete(destination);
}

/** A writer of `root` while its recovery is held: `recover_reconciliation_held`, naming the hold's own next action. */
export async function refuseHeldRecovery(root: string): Promise<void> {
  if (!existsSync(join(root, RECOVERY_DIR, PLAN_FILE))) return;
  // The status reader (the planner, the audit, the owners) is loaded only for a root a recovery made.
  const { recoveryStatus } = await import('./adopt-status.js');
  let status: Awaited<ReturnType<typeof recoveryStatus>>;
  try {
    status = await recoveryStatus(root);
  } catch (e) {
    // A byte copy of a recovered root is no recovery (and no root): its writers are refused as a copy, by the run authority.
    if (hasCode(e, 'recover_plan_elsewhere')) return;
    throw e;
  }
  if (status.state === 'reconciliation_held') throw R.reconciliationHeld(status.holds.length, status.next_action);
}
