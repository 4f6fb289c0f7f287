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
 * by the type checker; so is its row of HISTORICAL_PREVIEW, the words the plan's preview shows for
 * its state that stays history.
 */
import type { OwnerName } from './table.js';
import { adoptionSteps as config } from './config/index.js';
import { adoptionSteps as goal } from './goal/index.js';
import { adoptionSteps as work } from './work/index.js';
import { adoptionSteps as effect, type EffectRecord } from './effect/index.js';
import { retainHistorical, type OwnerAdoptionStep } from './adoption-contract.js';

export * from './adoption-contract.js';

export const ADOPTION: Readonly<Record<OwnerName, readonly OwnerAdoptionStep[]>> = {
  // The Goal's route is rebuilt by the goal owner when it mints the new lifetime (it keeps the registry in step).
  registry: [],
  config,
  goal,
  work,
  session: [
    retainHistorical(
      'session',
      'sessions and Turn journals stay history; new work opens a new session under a new execution generation',
    ),
  ],
  effect,
  quota: [
    retainHistorical(
      'quota',
      'the settled ledger stays history; nothing is debited again, new spend is debited under new Turn keys',
    ),
  ],
  scheduler: [
    retainHistorical('scheduler', 'timers, automations and skills stay disabled data; re-create them explicitly'),
  ],
};

/** What the recovery preview read of the Goal from the workspace, for the owners' words: its effects and its session count. */
export interface PreviewFacts {
  readonly effects: readonly EffectRecord[];
  readonly sessions: number;
}

/**
 * How the plan's preview names an owner's state that stays history (`historical_only`), in the
 * operator's words and with what it counts. `lead`: a line shown first, whatever the closure
 * holds, that stands for the owner's components (they get no line of their own); `words`: the line
 * of each of its historical-only components. Neither: `the <owner> owner’s state as captured`.
 */
export interface HistoricalPreview {
  readonly lead?: (facts: PreviewFacts) => string;
  readonly words?: (facts: PreviewFacts) => string;
}

const count = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

function effectWords({ effects }: PreviewFacts): string {
  const byOutcome: Record<string, number> = {};
  for (const e of effects) byOutcome[e.outcome] = (byOutcome[e.outcome] ?? 0) + 1;
  const outcomes = Object.entries(byOutcome).map(([o, n]) => `${n} ${o}`);
  return `the effect journal: ${count(effects.length, 'effect')} of this Goal${outcomes.length > 0 ? ` (${outcomes.join(', ')})` : ''}, never sent again`;
}

export const HISTORICAL_PREVIEW: Readonly<Record<OwnerName, HistoricalPreview>> = {
  registry: {},
  config: {},
  goal: {},
  work: {},
  session: { lead: ({ sessions }) => `${count(sessions, 'session')} and their turn journals` },
  effect: { words: effectWords },
  quota: { words: () => 'quota usage as counted at the capture' },
  scheduler: { words: () => 'the scheduler’s state as captured (nothing in it is scheduled again)' },
};

/** The preview's row of `owner` (a name from an audit: an unknown one has none). */
export const historicalPreviewOf = (owner: string): HistoricalPreview =>
  Object.hasOwn(HISTORICAL_PREVIEW, owner) ? HISTORICAL_PREVIEW[owner as OwnerName] : {};
