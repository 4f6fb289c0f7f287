/**
 * Adoption: the owners' half of recovering one Goal from a verified backup into a new, empty
 * runtime root. Each owner implements its dispositions here as steps — `retain_historical`,
 * `import_inert`, `rebind`, `reconcile`, `rebuild`, `discard` — and the recovery coordinator only
 * calls them, in the OWNERS table's dependency order, with an idempotency key per step and the
 * recovery's facts; it never writes an owner's state itself.
 *
 * A step's contract:
 * - It is idempotent: called again with the same context (after a crash, a retry) it converges on
 *   the same state and answers `already` (or `applied` when it had not landed), never applying
 *   twice. Its receipt is built from the owner's readback after the call, not from what the step
 *   meant to do.
 * - It reads the recovered state only from the verified copies the coordinator staged from the
 *   recovery workspace, through the owner's own readers (copies, never opened for writing), and
 *   writes only the destination root through the owner's live API.
 * - What it cannot settle — an external effect whose outcome stays unknown, a receiver that does
 *   not answer — is a hold in its receipt, with the owner, the continuation condition and one next
 *   action. A hold never becomes a guess.
 * - `execution_authority_granted` is false in every receipt: admission is the owners' ordinary
 *   business afterwards (a new session, a new execution generation, a new writer fence).
 *
 * ADOPTION is keyed by owner name with the OWNERS table's names, so a new owner's row is required
 * by the type checker.
 */
import type { OwnerName } from './table.js';
import { adoptionSteps as config } from './config/index.js';
import { adoptionSteps as goal } from './goal/index.js';
import { adoptionSteps as work } from './work/index.js';
import { adoptionSteps as effect } from './effect/index.js';
import { retainHistorical, type OwnerAdoptionStep } from './adoption-contract.js';

export * from './adoption-contract.js';

export const ADOPTION: Readonly<Record<OwnerName, readonly OwnerAdoptionStep[]>> = {
  // The Goal's route is rebuilt by the goal owner when it mints the new lifetime (it keeps the registry in step).
  registry: [],
  config,
  goal,
  work,
  session: [retainHistorical('session', 'sessions and Turn journals stay history; new work opens a new session under a new execution generation')],
  effect,
  quota: [retainHistorical('quota', 'the settled ledger stays history; nothing is debited again, new spend is debited under new Turn keys')],
  scheduler: [retainHistorical('scheduler', 'timers, automations and skills stay disabled data; re-create them explicitly')],
};
