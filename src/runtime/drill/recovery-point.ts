/**
 * What the drill measures its recovery point (RPO) from, by owner readback and never by what the
 * recovery says it did: the source's work history as the source held it when it was lost, and
 * which of those transactions the new root holds — each asked of the new root's work owner under
 * its original operation id, held only when it answers with the source's own revision. Read-only
 * on both roots; the receipt (receipt.ts) judges the figures against the frozen targets.
 */
import { work as workOwner } from '../../owners/index.js';
import { GOAL } from './definition.js';

/** One committed work transaction of the source. */
export interface SourceTransaction {
  readonly cursor: number;
  readonly operation_id: string;
  readonly provider_revision: string;
  readonly committed_at: string;
}

/** The Goal's committed work transactions in `root`, in cursor order. */
export async function workHistoryOf(root: string): Promise<SourceTransaction[]> {
  const work = await workOwner.openGoalWork({ root, goal_id: GOAL });
  try {
    const out: SourceTransaction[] = [];
    for await (const t of work.iterateHistory(0)) {
      out.push({
        cursor: t.cursor,
        operation_id: t.operation_id,
        provider_revision: t.provider_revision,
        committed_at: t.receipt.committed_at,
      });
    }
    return out;
  } finally {
    work.close();
  }
}

/** The cursors of the source transactions `destination` holds as the source committed them (same id, same revision). */
export async function heldIn(destination: string, history: readonly SourceTransaction[]): Promise<number[]> {
  const work = await workOwner.openGoalWork({ root: destination, goal_id: GOAL });
  try {
    const held: number[] = [];
    for (const t of history) {
      const r = await work.readReceipt(t.operation_id);
      if (r !== undefined && r.provider_revision === t.provider_revision) held.push(t.cursor);
    }
    return held;
  } finally {
    work.close();
  }
}
