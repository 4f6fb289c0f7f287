/**
 * The delivery fence a Goal's deliveries carry to a receiver: one monotonic integer per lineage,
 * so a receiver needs no more than "refuse what is below the newest you have seen".
 *
 * It orders two things, lexicographically: the Goal's lifetime (its lineage generation — one more
 * for each recovery) and, within a lifetime, the store installation its work is written through
 * (the PostgreSQL installation's restore generation — one more for each `db rotate`; always 0 for
 * a store that has none). A process left on a superseded installation (the old primary of a
 * failover, started again) still delivers under its old fence, and a receiver that has seen the
 * rotated installation's refuses it — as it refuses an older lifetime's.
 *
 *   fence = (generation − 1) × 2^32 + restore_generation + 1
 *
 * The first lifetime on a store never rotated carries 1, as before installations were counted.
 */
import { LoopxError } from '../../core/index.js';
import type { GoalLineage } from './contract.js';

/** How many installations one lifetime's fences can name. */
const SPAN = 2 ** 32;
/** The highest generation whose fences stay safe integers: (2^21 − 1) × 2^32 + (2^32 − 2) + 1 = 2^53 − 1. */
const MAX_GENERATION = 2 ** 21;

/** The fence of a lifetime's deliveries written through an installation at `restoreGeneration` (0: none). */
export function deliveryFence(lineage: Pick<GoalLineage, 'generation'>, restoreGeneration = 0): number {
  const g = lineage.generation;
  const r = restoreGeneration;
  // Both come from decoded records (a lineage, an installation row): out of range here is a defect, not input.
  if (!Number.isSafeInteger(g) || g < 1 || g > MAX_GENERATION || !Number.isSafeInteger(r) || r < 0 || r >= SPAN - 1)
    throw new LoopxError(
      'internal',
      'delivery_fence_out_of_range',
      `No delivery fence for generation ${g}, restore generation ${r}.`,
    );
  return (g - 1) * SPAN + r + 1;
}

/** The lowest fence of a lifetime: what a recovery raises a receiver to for its new lifetime. */
export const lifetimeFence = (lineage: Pick<GoalLineage, 'generation'>): number => deliveryFence(lineage, 0);

/** The lineage generation a fence belongs to (a fence ≤ 0 belongs to none: 0). */
export const fenceGeneration = (fence: number): number => (fence >= 1 ? Math.floor((fence - 1) / SPAN) + 1 : 0);
