/**
 * Public API of the fixture owner, an owner that lives only in the test tree: its live API, its
 * `recovery` contract (its row of a table of owners) and its rows of the adoption tables. It shows
 * that adding an owner is its folder and one row (test/owners/fixture-owner/fixture-owner.test.ts).
 */
import {
  MACHINE,
  retainHistorical,
  type HistoricalPreview,
  type OwnerAdoptionStep,
} from '../../../src/owners/index.js';
import { recovery } from './recovery.js';

export {
  FIXTURE_ERROR_CODES,
  FIXTURE_ERRORS,
  isFixtureError,
  type FixtureError,
  type FixtureErrorCode,
} from './errors.js';
export { openFixtureNotes, type FixtureNotes } from './notes.js';
export { readHistoricalFile, type FixtureHistory } from './historical.js';
export { FIXTURE_FILE, type Note } from './schema.js';
export { recovery } from './recovery.js';

/** Its row of ADOPTION: the notes stay history, read back from the staged copy for the receipt. */
export const adoptionSteps: readonly OwnerAdoptionStep[] = [
  retainHistorical('fixture', 'notes stay history; new notes are written under the new Goal lifetime', (ctx) =>
    recovery.readHistorical({ root: ctx.workspace_root, scratchDir: ctx.scratch_dir }, MACHINE),
  ),
];

/** Its row of HISTORICAL_PREVIEW. */
export const historicalPreview: HistoricalPreview = { words: () => 'the notes as captured' };
