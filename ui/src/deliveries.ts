/**
 * What a delivery's receiver did with it, in words: the run page's timeline and the Goal page's
 * effects table say the same. The daemon reports it as `delivery_result` (with `duplicate_of`) on a
 * run's `ToolResulted` event and on a Goal's effect, read from the effect's receipt:
 *
 * - `stored`: the receiver answered `replayed: false` — it stored the delivery now;
 * - `replayed`: the receiver answered `replayed: true` — it already held the delivery (a repeat of
 *   its idempotency key) and stored nothing again;
 * - `not_sent`: nothing was sent — the effect owner already held the logical operation committed
 *   (`duplicate_of` names the operation that delivered it).
 *
 * Absent or null (an older record, another kind of effect, a receiver that says neither) means not
 * known: nothing is claimed, and a deduplicated delivery is never shown as a fresh one.
 */

export type DeliveryResult = 'stored' | 'replayed' | 'not_sent';

/** The words every deduplicated delivery starts with, on every page. */
export const DEDUPLICATED = 'deduplicated: the receiver already held it';

export interface DeliveryWords {
  readonly text: string;
  readonly deduplicated: boolean;
}

/** The words for a delivery's result, or null when it is not known. */
export function deliveryWords(result: unknown, duplicateOf: unknown): DeliveryWords | null {
  if (result === 'stored') return { text: 'stored by the receiver', deduplicated: false };
  if (result === 'replayed') return { text: `${DEDUPLICATED} (not stored again)`, deduplicated: true };
  if (result === 'not_sent') {
    const first =
      typeof duplicateOf === 'string' && duplicateOf !== '' ? `; operation ${duplicateOf} delivered it` : '';
    return { text: `${DEDUPLICATED} (not sent again${first})`, deduplicated: true };
  }
  return null;
}
