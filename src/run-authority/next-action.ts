/**
 * The operator's next action for a run record, where the record alone calls for one (`loopx
 * authority show --run`). Defined here, once, beside the records; the engine's refusals name the
 * same step from the importing root's side.
 */
import type { RunRecord } from './contract.js';

/** IMPORTING: an import consumed the snapshot and did not complete; the same import, run again in the owner root, completes it. */
export function recordNextAction(record: RunRecord): string | null {
  if (record.state !== 'IMPORTING') return null;
  return `complete it by importing the same snapshot file again into the root the record names (owner_root ${record.ownerRoot}): loopx run import <snapshot-file> --root <that-root>`;
}
