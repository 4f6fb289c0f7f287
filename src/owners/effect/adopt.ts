/**
 * The effect owner's adoption step (`reconcile`), for a Goal recovered into a new root. Every
 * effect of the Goal in the recovered journal is recorded in the destination's journal under its
 * ORIGINAL operation id and idempotency key — never dispatched, never under a new identity:
 *
 * - settled in the backup (committed, absent, rejected, superseded): kept as it was;
 * - uncertain (unknown, or dispatched without an outcome): the external system is asked about the
 *   original operation id (deliveries), or the Goal's recovered work history is (Todo updates: the
 *   work owner's receipt under the same id) — committed or absent when the answer is certain;
 *   otherwise it stays `unknown`, a hold with its owner and one next action;
 * - recorded but never dispatched: asked the same way (a capture taken between the intent and the
 *   dispatch); found → committed, else absent. Recovery never re-sends it: the continuing work
 *   decides anew, and a delivery's idempotency key — stable for the logical operation across
 *   lifetimes — keeps the receiver from storing it twice.
 *
 * Then each receiver the Goal delivers to is asked what it holds for the Goal's lineage: a
 * delivery the recovered journal does not know was committed after the capture (known
 * externally, lost locally) and is recorded as committed under its original identity, so the
 * continuing work cannot deliver it again. Last, the receiver's fence for the lineage is advanced
 * to the new lifetime's generation, named by the new lifetime: from then on it refuses the old
 * lifetime's deliveries, and any other lifetime's at this generation. A receiver that does not
 * answer is a hold (retryable); one that already holds a newer fence (`receiver_fence_newer`), or
 * this generation for another lifetime — a second recovery of the same backup under another run
 * authority, which the run authority of this user cannot see (`receiver_fence_conflict`) — is a
 * hold no retry clears: only the lifetime the receiver follows delivers there.
 */
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { stepReceipt, type AdoptionContext, type AdoptionHold, type OwnerAdoptionStep } from '../adoption-contract.js';
import { openFileConfigStore } from '../config/index.js';
import { goalNotFound, lifetimeFence, lineageOf, openFileGoalStore, type GoalRecord } from '../goal/index.js';
import { LAYOUT } from '../layout.js';
import { MACHINE } from '../contract.js';
import { rejected } from '../../core/index.js';
import { recovery } from './recovery.js';
import { openFileRegistry } from '../registry/index.js';
import { openGoalWork } from '../work/index.js';
import type { EffectJournal, EffectRecord, JsonValue, ReconcileObservation, SettledOutcome } from './contract.js';
import { readHistoricalFile } from './historical.js';
import { rootStores } from '../root-stores.js';
import { isUncertain } from './rules.js';
import { targetRetirement } from './retire.js';
import {
  WEBHOOK_KIND,
  advanceReceiverFence,
  webhookGoalQuery,
  webhookIntent,
  webhookOperationQuery,
  webhookTarget,
} from './webhook.js';

/** The machine-configuration namespace holding a root's deliveries endpoint (`webhook_url`). */
export const EFFECTS_CONFIG_NAMESPACE = 'effects';
/** The kind of the work owner's Todo updates in the journal. */
export const TODO_UPDATE_KIND = 'work.todo_update';

const urlOf = (e: EffectRecord): string | null => {
  try {
    const u = (JSON.parse(e.intent) as { url?: unknown }).url;
    return typeof u === 'string' ? u : null;
  } catch {
    return null;
  }
};

interface Reconciled {
  readonly outcome: SettledOutcome;
  readonly receipt: JsonValue;
}

/** What the source's uncertain (or never dispatched) effect is now, asked under its original identity. */
async function ask(ctx: AdoptionContext, e: EffectRecord): Promise<Reconciled> {
  let o: ReconcileObservation;
  if (e.kind === WEBHOOK_KIND) {
    o = await webhookOperationQuery(ctx.options)(e);
  } else if (e.kind === TODO_UPDATE_KIND) {
    const work = await openGoalWork({ root: ctx.destination, goal_id: ctx.goal_id });
    try {
      o = (await work.readReceipt(e.operation_id))
        ? { status: 'committed', receipt: { source: 'work_receipt' } }
        : { status: 'absent', receipt: { source: 'work_history' } };
    } finally {
      work.close();
    }
  } else {
    o = { status: 'unknown', reason: 'no_reconciliation_query' };
  }
  const base = { recovered: true, source_outcome: e.outcome, source_attempt: e.attempt };
  if (o.status === 'committed') return { outcome: 'committed', receipt: { ...base, observation: o.receipt } };
  if (o.status === 'absent') return { outcome: 'absent', receipt: { ...base, observation: o.receipt ?? null } };
  return { outcome: 'unknown', receipt: { ...base, reason: o.reason } };
}

const effectHold = (e: EffectRecord): AdoptionHold => ({
  hold_id: `effect:${e.operation_id}`,
  owner: 'effect',
  code: 'effect_outcome_unknown',
  subject: `effect:${e.operation_id} (${e.target})`,
  continuation:
    'the external system answers for the original operation id, or the operator settles it from their own evidence',
  retryable: true,
});

/** The recovered journal's effects of this Goal, each recorded in the destination under its original identity. */
async function adoptRecovered(ctx: AdoptionContext, journal: EffectJournal, source: readonly EffectRecord[]) {
  const holds: AdoptionHold[] = [];
  const counts: Record<string, number> = {};
  for (const [i, e] of source.entries()) {
    // A crash between two effects: the ones before are recorded, the rest not yet; the retry adopts each again (`already`).
    if (i > 0) ctx.fault(`recover.${reconcile.action}.between-effects`);
    const settled = !isUncertain(e) && e.outcome !== 'pending';
    const r: Reconciled = settled
      ? {
          outcome: e.outcome as SettledOutcome,
          receipt: { recovered: true, source_outcome: e.outcome, source_receipt: e.receipt },
        }
      : await ask(ctx, e);
    const intent = JSON.parse(e.intent) as JsonValue;
    const { effect } = await journal.adopt({
      operation_id: e.operation_id,
      idempotency_key: e.idempotency_key,
      goal_id: e.goal_id,
      kind: e.kind,
      target: e.target,
      intent,
      outcome: r.outcome,
      receipt: r.receipt,
      attempt: e.attempt,
    });
    counts[effect.outcome] = (counts[effect.outcome] ?? 0) + 1;
    if (effect.outcome === 'unknown') holds.push(effectHold(effect));
  }
  return { holds, counts };
}

/** The deliveries endpoints of this Goal: its recovered deliveries' and the destination configuration's. */
function receiversOf(ctx: AdoptionContext, source: readonly EffectRecord[]): string[] {
  const ns = openFileConfigStore(ctx.destination).read().value.namespaces[EFFECTS_CONFIG_NAMESPACE] as
    { webhook_url?: unknown } | undefined;
  const urls = [...source.filter((e) => e.kind === WEBHOOK_KIND).map(urlOf), ns?.webhook_url];
  return [...new Set(urls.filter((u): u is string => typeof u === 'string'))].sort();
}

const receiverHold = (url: string, code: string, retryable: boolean, continuation: string): AdoptionHold => ({
  hold_id: `receiver:${webhookTarget(url)}`,
  owner: 'effect',
  code,
  subject: webhookTarget(url),
  continuation,
  retryable,
});

/** One receiver: what it holds for the lineage after the capture, then its fence moved to the new lifetime. */
async function askReceiver(
  ctx: AdoptionContext,
  journal: EffectJournal,
  url: string,
  goal: GoalRecord,
  known: ReadonlySet<string>,
) {
  const lineage = lineageOf(goal);
  const after: string[] = [];
  const listed = await webhookGoalQuery(url, lineage.lineage_id, ctx.options);
  if (listed.status !== 'answered')
    return {
      after,
      hold: receiverHold(
        url,
        'receiver_unreachable',
        true,
        'the receiver answers the query for this Goal, or the operator records that it never will',
      ),
    };
  for (const d of listed.deliveries) {
    if (known.has(d.operation_id)) continue;
    await journal.adopt({
      operation_id: d.operation_id,
      idempotency_key: d.idempotency_key,
      goal_id: ctx.goal_id,
      kind: WEBHOOK_KIND,
      target: webhookTarget(url),
      intent: webhookIntent(url, { observed_after_capture: true, body_sha256: d.body_sha256 }),
      outcome: 'committed',
      receipt: { recovered: true, source: 'receiver_after_capture', sequence: d.sequence, fence: d.fence },
      attempt: 1,
    });
    after.push(d.operation_id);
  }
  ctx.fault('recover.effect:reconcile.fence');
  // The new lifetime's lowest fence: above every fence of the lifetimes before it, at or below each it sends (fence.ts).
  const fence = await advanceReceiverFence(url, lineage.lineage_id, lifetimeFence(lineage), {
    ...ctx.options,
    lifetime: goal.goal_instance_id,
  });
  if (fence.status === 'unknown')
    return {
      after,
      hold: receiverHold(
        url,
        'receiver_fence_unconfirmed',
        true,
        "the receiver confirms the new lifetime's fence, or the operator records that it never will",
      ),
    };
  if (fence.status === 'refused')
    return {
      after,
      hold: receiverHold(
        url,
        'receiver_fence_newer',
        false,
        'the receiver already follows a newer lifetime of this Goal; this recovery cannot deliver there',
      ),
    };
  if (fence.status === 'conflict')
    return {
      after,
      hold: receiverHold(
        url,
        'receiver_fence_conflict',
        false,
        `another recovery of this Goal (lifetime ${fence.lifetime}) holds its generation ${fence.newest_fence} at the receiver; this recovery cannot deliver there — continue the Goal in the root that recovery made`,
      ),
    };
  return { after, hold: undefined };
}

/** A root's effect journal on the provider its configuration names (a recovery's destination may keep it in a database service). */
export function openRootEffectJournal(root: string): EffectJournal {
  return rootStores(root).effects();
}

/** The recovered journal's export no longer reads as it was verified. */
const recoveredJournalUnreadable = () =>
  rejected('recovery_effects_unreadable', 'The recovered effect journal cannot be read from the recovery workspace.', {
    nextAction: 'verify the backup again into a new workspace and plan the recovery from it',
  });

/**
 * The recovered journal's effects: from the staged copy of effects.db, or from the export of a
 * journal captured from a database service. No copy is no effect only when the audit verified the
 * journal as absent (the source never created it); a captured journal whose copy is not there is
 * refused, never read as empty.
 */
function recoveredEffects(ctx: AdoptionContext): readonly EffectRecord[] {
  if (ctx.exports?.('effect', MACHINE) !== undefined) {
    const read = recovery.readHistorical(
      { root: ctx.workspace_root, scratchDir: ctx.scratch_dir, exports: ctx.exports },
      MACHINE,
    );
    if (!read.ok) throw recoveredJournalUnreadable();
    return read.value.effects;
  }
  const copy = join(ctx.workspace_root, LAYOUT.effectsDb);
  if (existsSync(copy)) return readHistoricalFile(copy, { scratchDir: ctx.scratch_dir }).effects;
  if (ctx.components.some((c) => c.content_digest !== 'absent')) throw recoveredJournalUnreadable();
  return [];
}

const reconcile: OwnerAdoptionStep = {
  action: 'effect:reconcile',
  disposition: 'reconcile',
  describes:
    "every effect of the Goal under its original identity: settled ones kept, uncertain ones asked of their external system, never re-sent; each receiver's fence moved to the new lifetime",
  async apply(ctx) {
    const source = recoveredEffects(ctx).filter((e) => e.goal_id === ctx.goal_id);
    const goal = openFileGoalStore(ctx.destination, { registry: openFileRegistry(ctx.destination) }).get(ctx.goal_id);
    if (!goal) throw goalNotFound(ctx.goal_id); // the Goal's lifetime is adopted before its effects
    const journal = openRootEffectJournal(ctx.destination);
    try {
      ctx.fault(`recover.${reconcile.action}.before`);
      const { holds, counts } = await adoptRecovered(ctx, journal, source);
      const known = new Set(source.map((e) => e.operation_id));
      const afterCapture: string[] = [];
      const receivers = receiversOf(ctx, source);
      for (const url of receivers) {
        // Retired for this Goal on the operator's evidence (it will never answer again): not asked, never held again.
        if (await targetRetirement(journal, ctx.goal_id, webhookTarget(url))) continue;
        const r = await askReceiver(ctx, journal, url, goal, known);
        afterCapture.push(...r.after);
        if (r.hold) holds.push(r.hold);
      }
      ctx.fault(`recover.${reconcile.action}.after`);
      return stepReceipt(
        reconcile,
        'effect',
        ctx,
        'applied',
        {
          recovered_effects: source.length,
          by_outcome: counts,
          committed_after_capture: afterCapture.sort(),
          receivers: receivers.map(webhookTarget),
          fence: lifetimeFence(lineageOf(goal)),
        },
        { holds },
      );
    } finally {
      journal.close();
    }
  },
};

export const adoptionSteps: readonly OwnerAdoptionStep[] = [reconcile];
