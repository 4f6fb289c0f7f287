/**
 * What a webhook delivery's receiver did with it, read from the delivery's effect receipt: the
 * `delivery_result` and `duplicate_of` of a run's `ToolResulted` event (docs/runs.md) and of a
 * Goal's effect (src/runtime/goal-activity.ts reads the same receipts the same way).
 *
 * - `stored`: the receiver answered `replayed: false` (sendWebhook's `{http_status, response}`);
 * - `replayed`: it answered `replayed: true` — it already held the idempotency key, stored nothing again;
 * - `not_sent`: nothing was sent — the effect owner held the logical operation committed
 *   (goal-tools' `{sent: false, duplicate_of}`); `duplicate_of` names the operation that delivered it.
 *
 * Anything else is null, "not known": an effect that is not committed, a receipt a reconciliation
 * or an operator wrote, a receiver that says neither, a receipt bounded to its digest. Nothing is
 * ever guessed, so a deduplicated delivery never reads as a fresh one.
 */
import { effect as effectOwner } from '../owners/index.js';

export type DeliveryResult = 'stored' | 'replayed' | 'not_sent';

export interface Delivery {
  readonly delivery_result: DeliveryResult | null;
  readonly duplicate_of: string | null;
}

export const UNKNOWN_DELIVERY: Delivery = { delivery_result: null, duplicate_of: null };

const isRecord = (v: unknown): v is { readonly [k: string]: unknown } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The delivery result a committed delivery's receipt states (read before the receipt is bounded — see mutations.ts). */
export function deliveryOfReceipt(receipt: unknown): Delivery {
  if (!isRecord(receipt)) return UNKNOWN_DELIVERY;
  if (receipt.sent === false) {
    return typeof receipt.duplicate_of === 'string' && receipt.duplicate_of !== ''
      ? { delivery_result: 'not_sent', duplicate_of: receipt.duplicate_of }
      : UNKNOWN_DELIVERY;
  }
  const status = receipt.http_status;
  if (typeof status !== 'number' || status < 200 || status >= 300 || !isRecord(receipt.response))
    return UNKNOWN_DELIVERY;
  const replayed = receipt.response.replayed;
  return replayed === true
    ? { delivery_result: 'replayed', duplicate_of: null }
    : replayed === false
      ? { delivery_result: 'stored', duplicate_of: null }
      : UNKNOWN_DELIVERY;
}

/** Whether an effect is a webhook delivery, whose `ToolResulted` carries the two fields. */
export const isDelivery = (effect: Pick<effectOwner.EffectRecord, 'kind'> | undefined): boolean =>
  effect?.kind === effectOwner.WEBHOOK_KIND;

/** A delivery effect as the effect owner holds it: its result when it is committed, else not known. */
export const deliveryOfEffect = (effect: Pick<effectOwner.EffectRecord, 'outcome' | 'receipt'>): Delivery =>
  effect.outcome === 'committed' ? deliveryOfReceipt(effect.receipt) : UNKNOWN_DELIVERY;
