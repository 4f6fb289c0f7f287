/**
 * Test-only defects of the recovery, so a real drill run can show each figure reported missed.
 * Inert unless the test-only switch LOOPX_TEST_DRILL_DEFECT names them (comma-separated), like
 * LOOPX_TEST_FAULT (src/core/faults.ts): never set in production, and never passed on to the
 * drill's own children. Each makes the recovery worse in exactly one way a figure must notice,
 * and changes nothing else:
 * - `drop-captured-transaction`: the new root is left without the newest captured work
 *   transaction, as an import that dropped it would leave it (taken out of its imported history
 *   once the apply is complete, before anything reads it) — the RPO figure must be missed;
 * - `extra-operator-command`: the operator issues one command more than the recovery needs (a
 *   `recover status` after the apply) — the human-actions figure must be missed.
 */
import { work } from '../../owners/index.js';
import { GOAL } from './definition.js';

export const DRILL_DEFECT_ENV = 'LOOPX_TEST_DRILL_DEFECT';

export type DrillDefect = 'drop-captured-transaction' | 'extra-operator-command';

/** Whether the test-only switch names `defect`. */
export function defectInjected(defect: DrillDefect): boolean {
  const wanted = process.env[DRILL_DEFECT_ENV];
  return wanted !== undefined && wanted.split(',').includes(defect);
}

/** `drop-captured-transaction`: the imported history of `destination` loses its transaction at `cursor`. */
export function dropImportedTransaction(destination: string, cursor: number): void {
  work.dropLineageCommit(destination, GOAL, cursor);
}
