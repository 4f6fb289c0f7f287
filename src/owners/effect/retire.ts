/**
 * A receiver retired for one Goal on the operator's evidence that it will never answer again
 * (`loopx recover resolve --receiver-gone`). The effect owner records it and decides from it:
 *
 * - the retirement itself is one entry of the effect journal, under an identity derived from the
 *   Goal and the target (kind `effect.target_retired`, settled `rejected` at once, the operator's
 *   reason and evidence in its intent and receipt): every provider, every backup and every
 *   recovery of the journal carries it with no table of its own, and recording it again is a
 *   readback;
 * - each uncertain effect of the Goal to that target is abandoned: its outcome stays unknown — it
 *   is never learned, never guessed — held as `receiver_gone`, and never dispatched; one still
 *   waiting in the outbox is settled `superseded` (it never took effect);
 * - from then on a delivery of this Goal to the target is refused (`delivery_receiver_gone`)
 *   before anything is recorded or sent.
 */
import { sha256Hex } from '../../core/index.js';
import type { EffectJournal, EffectRecord, JsonValue } from './contract.js';
import { OwnerError } from '../owner-errors.js';
import { EFFECT_ERRORS, isEffectError, type EffectError } from './errors.js';
import { isUncertain } from './rules.js';

export const TARGET_RETIRED_KIND = 'effect.target_retired';
/** The hold reason of an unknown effect abandoned with its retired receiver. */
export const RECEIVER_GONE = 'receiver_gone';

const keyOf = (goalId: string, target: string): string => `target-retired:${goalId}:${sha256Hex(target).slice(0, 32)}`;

/** The retirement of `target` for `goalId`, if the operator recorded one. */
export async function targetRetirement(
  journal: EffectJournal,
  goalId: string,
  target: string,
): Promise<EffectRecord | undefined> {
  const e = await journal.getByIdempotencyKey(keyOf(goalId, target));
  return e?.kind === TARGET_RETIRED_KIND ? e : undefined;
}

/** The uncertain effects of `goalId` to `target` that a retirement abandons (the ones it holds already included). */
export async function effectsToRetire(journal: EffectJournal, goalId: string, target: string): Promise<EffectRecord[]> {
  return (await journal.list({ goal_id: goalId })).filter(
    (e) => e.target === target && e.kind !== TARGET_RETIRED_KIND && (isUncertain(e) || e.outcome === 'pending'),
  );
}

export interface RetireTargetRequest {
  readonly goal_id: string;
  readonly target: string;
  /** The operator's reason, as they gave it (private: in the journal, never in errors). */
  readonly reason: string;
  /** What the retirement was decided from (recovery id, hold digest…). */
  readonly evidence: Readonly<Record<string, JsonValue>>;
}

/** Record the retirement, then abandon every uncertain effect of the Goal to the target; returns what it abandoned. */
export async function retireTarget(
  journal: EffectJournal,
  r: RetireTargetRequest,
): Promise<{ readonly retirement: EffectRecord; readonly abandoned: readonly string[] }> {
  const key = keyOf(r.goal_id, r.target);
  const operationId = key;
  await journal.recordIntent({
    operation_id: operationId,
    idempotency_key: key,
    goal_id: r.goal_id,
    kind: TARGET_RETIRED_KIND,
    target: r.target,
    intent: { reason: r.reason, ...r.evidence },
  });
  const current = (await journal.get(operationId))!;
  const retirement =
    current.outcome === 'pending'
      ? (await journal.settle(operationId, 'rejected', { retired_by: 'operator', reason: RECEIVER_GONE })).effect
      : current;
  const abandoned: string[] = [];
  for (const e of await effectsToRetire(journal, r.goal_id, r.target)) {
    await abandon(journal, e);
    abandoned.push(e.operation_id);
  }
  return { retirement, abandoned };
}

/** One effect abandoned with its receiver, from the state it is in (read again once if it changed meanwhile). */
async function abandon(journal: EffectJournal, first: EffectRecord): Promise<void> {
  let e = first;
  for (let attempt = 0; ; attempt++) {
    try {
      if (e.outcome === 'pending' && e.dispatched_at === null) {
        await journal.settle(e.operation_id, 'superseded', { abandoned: true, reason: RECEIVER_GONE });
        return;
      }
      if (e.outcome === 'pending')
        await journal.resolve(e.operation_id, { outcome: e.outcome, attempt: e.attempt }, 'unknown', {
          abandoned: true,
          reason: RECEIVER_GONE,
        });
      if (e.hold !== RECEIVER_GONE) await journal.holdUnknown(e.operation_id, RECEIVER_GONE);
      return;
    } catch (err) {
      // Settled meanwhile (its outcome learned after all): that stands; otherwise decide on what it is now.
      if (
        attempt > 0 ||
        !(
          isEffectError(err, 'effect_state_changed') ||
          isEffectError(err, 'effect_already_settled') ||
          isEffectError(err, 'effect_not_held')
        )
      )
        throw err;
      e = (await journal.get(e.operation_id))!;
      if (!isUncertain(e) && e.outcome !== 'pending') return;
    }
  }
}

/** A delivery of this Goal to a receiver the operator retired. */
export const receiverGone = (goalId: string, target: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'rejected',
    'delivery_receiver_gone',
    `The receiver ${target} was retired for this Goal: it will never answer again, so nothing more is sent to it.`,
    {
      nextAction: `run the work with another receiver: loopx work run --goal ${goalId} --sink URL --agent AGENT_FILE`,
      details: { goal_id: goalId, target },
    },
  );
