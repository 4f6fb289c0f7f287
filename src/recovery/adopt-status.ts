/**
 * The status of an adoption (`loopx recover status`), read back from the plan, the phase journal
 * and the owners — never from a process's memory — with the operator state and the fields every
 * recovery status shows: ids and digests, requested and achieved capture profile, component and
 * verification counts, asset counts, the current phase, the last durable owner receipt,
 * retryability, whether the source and destination writer fences are established, the holds with
 * their owners, continuation conditions and one next action each, and
 * `execution_authority_granted: false`.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, operatorPath, sha256Hex } from '../core/index.js';
import { LAYOUT, effect, type AdoptionHold, type AdoptionStepReceipt } from '../owners/index.js';
import { foldJournal, readJournal, type AbandonedReceipt } from './adopt-journal.js';
import { readPlan, type AdoptionPlan, type PlanPreview } from './adopt-plan.js';
import type { VerificationStatus } from './audit.js';
import { confirmableDigest, type AdoptionHost } from './adopt-apply.js';

export const RECOVERY_STATES = [
  'verifying',
  'restored_inert',
  'audit_held',
  'adoption_prepared',
  'applying',
  'reconciliation_held',
  'complete',
  'abandoned',
] as const;
export type RecoveryState = (typeof RECOVERY_STATES)[number];

export interface RecoveryHold extends AdoptionHold {
  /**
   * What the operator confirms to settle the hold from their own evidence (`--receiver-gone`): the
   * digest of the recovery, the hold as read, and the effects the settlement would abandon — a hold
   * that changed since it was read is never settled on an old confirmation.
   */
  readonly digest: string;
  readonly next_action: string;
}

/** A hold settled through its owner, as the journal recorded it (the operator's reason with an operator's settlement). */
export interface ResolvedHold {
  readonly hold_id: string;
  readonly owner: string;
  readonly outcome: string;
  readonly reason?: string;
  readonly abandoned?: readonly string[];
}

export interface RecoveryStatus {
  readonly schema_version: 'loopx_recovery_status_v0';
  readonly recovery_id: string;
  readonly backup_id: string;
  readonly audit_recovery_id: string;
  readonly plan_digest: string;
  readonly state: RecoveryState;
  readonly goal: {
    readonly goal_id: string;
    readonly recovered_instance_id: string;
    readonly new_instance_id: string | null;
  };
  readonly capture: {
    readonly requested_profile: string | null;
    readonly achieved_profile: string;
    readonly captured_at_end: string | null;
  };
  readonly components: {
    readonly required: number;
    readonly optional: number;
    readonly by_owner: Record<string, number>;
  };
  /** The components by verification status — the six counts every recovery status shows — and `other`, every one not verified. */
  readonly verification: Readonly<Record<VerificationStatus, number>> & { readonly other: number };
  readonly assets: {
    readonly recovered_readable: number;
    readonly historical_only: number;
    readonly unknown_unrecoverable: number;
  };
  readonly phase: { readonly completed_steps: number; readonly total_steps: number; readonly current: string | null };
  readonly last_durable_receipt: {
    readonly action: string;
    readonly owner: string;
    readonly result: string;
    readonly at: string;
  } | null;
  readonly retryable: boolean;
  readonly fences: { readonly source_established: boolean; readonly destination_established: boolean };
  readonly holds: readonly RecoveryHold[];
  readonly resolved_holds: readonly ResolvedHold[];
  readonly preview: PlanPreview;
  /**
   * The apply's own time apart from the time the recovery then stood held: `apply_ms` from the
   * first step's intent until every step was first done (null before that); `held_ms` from then
   * until the last hold was settled (null when none was), which is mostly time waiting on an operator.
   */
  readonly timing: { readonly apply_ms: number | null; readonly held_ms: number | null };
  readonly receipts: readonly {
    readonly action: string;
    readonly owner: string;
    readonly disposition: string;
    readonly result: string;
    readonly readback: Readonly<Record<string, unknown>>;
    /** When the step's first intent was recorded, and when it was first done (the step's own time in the apply; a re-run to settle a hold is not counted here). */
    readonly started_at: string;
    readonly done_at: string;
  }[];
  readonly next_action: string;
  /** Why an abandoned recovery ended, when it was not the operator's abort (another recovery superseded the Goal first). */
  readonly ended?: AbandonedReceipt;
  readonly execution_authority_granted: false;
}

/**
 * The open holds, read back from the owners: unknown effects from the destination's journal (not
 * one abandoned with a retired receiver), receiver holds from the latest reconciliation; with the
 * targets of the Goal's unknown effects (what a receiver's settlement abandons).
 */
async function openHolds(
  root: string,
  goalId: string,
  receipts: Map<string, { receipt: AdoptionStepReceipt | { holds: readonly [] } }>,
  resolved: ReadonlyMap<string, unknown>,
  onPostgres: boolean,
): Promise<{ holds: AdoptionHold[]; unknownTargets: ReadonlyMap<string, string> }> {
  const latest = (receipts.get('effect:reconcile')?.receipt.holds ?? []) as readonly AdoptionHold[];
  // Every unknown effect of the Goal by its target (a receiver's digest names them, abandoned or not, so it reads the same after a settlement that stopped halfway); held are the ones not abandoned.
  const unknown = new Map<string, string>();
  const held = new Set<string>();
  const note = (e: { goal_id: string; outcome: string; hold: string | null; operation_id: string; target: string }) => {
    if (e.goal_id !== goalId || e.outcome !== 'unknown') return;
    unknown.set(e.operation_id, e.target);
    if (e.hold !== effect.RECEIVER_GONE) held.add(e.operation_id);
  };
  // Read through the live journal (its write-ahead log included: a settlement killed before its
  // checkpoint is read as it committed), never through a copy of the file; a root with no journal has no effect.
  if (onPostgres || existsSync(join(root, LAYOUT.effectsDb))) {
    const journal = effect.openRootEffectJournal(root);
    try {
      for (const e of await journal.list({ goal_id: goalId })) note(e);
    } finally {
      journal.close();
    }
  }
  const holds = latest.filter((h) =>
    h.hold_id.startsWith('effect:') ? held.has(h.hold_id.slice('effect:'.length)) : !resolved.has(h.hold_id),
  );
  return { holds, unknownTargets: unknown };
}

/** A hold's digest (see `RecoveryHold.digest`): a receiver's names the held effects to it, which settling it abandons. */
export function holdDigest(
  recoveryId: string,
  planDigest: string,
  h: AdoptionHold,
  unknownTargets: ReadonlyMap<string, string>,
): string {
  const abandons = h.hold_id.startsWith('receiver:')
    ? [...unknownTargets]
        .filter(([, target]) => target === h.subject)
        .map(([id]) => id)
        .sort()
    : [];
  return sha256Hex(
    canonicalJson({
      recovery_id: recoveryId,
      plan_digest: planDigest,
      hold_id: h.hold_id,
      code: h.code,
      subject: h.subject,
      abandons,
    }),
  );
}

/** Holds no retry and no settlement clears: the receiver follows another lifetime of the Goal, so this recovery never delivers there. */
const FINAL_RECEIVER_HOLDS: ReadonlySet<string> = new Set(['receiver_fence_newer', 'receiver_fence_conflict']);

const nextActionOf = (h: AdoptionHold, d: string): string => {
  if (FINAL_RECEIVER_HOLDS.has(h.code))
    return `continue the Goal in the root the receiver follows (this one stays history): loopx recover status --destination <that-root>`;
  return h.retryable
    ? `ask again when the external system answers: loopx recover resolve --destination ${d} --hold ${h.hold_id}`
    : `settle it with the external system's owner, then: loopx recover resolve --destination ${d} --hold ${h.hold_id}`;
};

/**
 * The writer fences. Source: this recovery's supersession receipt is in the journal — the old
 * lifetime superseded by the new one — and, where the run authority is at hand (`host`), the
 * authority records exactly that for this recovery (without it, as for a root's writer guard, the
 * receipt's readback is the evidence). Destination: the history imported into a new work store and
 * every effect and receiver reconciled, no receiver still held.
 */
function fencesOf(
  recovered: string,
  recoveryId: string,
  done: ReturnType<typeof foldJournal>['done'],
  successor: string | null,
  withAuthority: boolean,
  superseded: { readonly successor_instance_id: string; readonly recovery_id: string } | undefined,
  receiverHolds: boolean,
): RecoveryStatus['fences'] {
  const receipt = done.get('host:supersede')?.receipt.readback as
    { superseded_instance_id?: unknown; successor_instance_id?: unknown } | undefined;
  const journaled =
    successor !== null && receipt?.superseded_instance_id === recovered && receipt.successor_instance_id === successor;
  const recorded =
    !withAuthority || (superseded?.recovery_id === recoveryId && superseded.successor_instance_id === successor);
  return {
    source_established: journaled && recorded,
    destination_established: done.has('work:import_inert') && done.has('effect:reconcile') && !receiverHolds,
  };
}

/** Every step done and no hold, but a fence missing: another recovery holds the lifetime, or the same apply establishes it (it refuses a plan that is not loopx's). */
const fenceNextAction = (
  d: string,
  superseded: { readonly recovery_id: string } | undefined,
  recoveryId: string,
): string =>
  superseded !== undefined && superseded.recovery_id !== recoveryId
    ? 'continue the Goal in the root that recovery made'
    : `a writer fence is not established: run the same apply with the digest loopx recover plan printed: loopx recover apply --destination ${d} --confirm PLAN_DIGEST`;

const VERIFICATION: readonly VerificationStatus[] = [
  'verified',
  'invalid',
  'missing',
  'ambiguous',
  'unsupported',
  'unknown',
];

function verificationCounts(components: readonly { readonly verification: string }[]): RecoveryStatus['verification'] {
  const counts = Object.fromEntries(
    VERIFICATION.map((v) => [v, components.filter((c) => c.verification === v).length]),
  ) as Record<VerificationStatus, number>;
  return { ...counts, other: components.length - counts.verified };
}

/** `loopx recover status`: the recovery read back from its plan, its journal and the owners (see the header). */
export async function recoveryStatus(destination: string, host?: AdoptionHost): Promise<RecoveryStatus> {
  const plan = readPlan(destination);
  const root = plan.destination.path;
  const d = operatorPath(root);
  const j = foldJournal(readJournal(root));
  const steps = plan.steps.length;
  const completed = plan.steps.filter((s) => j.done.has(s.action)).length;
  const holds = completed === steps ? await statusHolds(plan, j, d) : [];
  const goalReceipt = j.done.get('goal:rebind')?.receipt.readback as { goal_instance_id?: string } | undefined;
  const superseded = await host?.supersession(plan.goal.goal_instance_id);
  const receiverHolds = holds.some((h) => h.hold_id.startsWith('receiver:'));
  const fences = fencesOf(
    plan.goal.goal_instance_id,
    plan.recovery_id,
    j.done,
    goalReceipt?.goal_instance_id ?? null,
    host !== undefined,
    superseded,
    receiverHolds,
  );
  const state = stateOf(j, completed, steps, holds, fences);
  return {
    schema_version: 'loopx_recovery_status_v0',
    recovery_id: plan.recovery_id,
    backup_id: plan.audit.backup_id,
    audit_recovery_id: plan.audit.recovery_id,
    plan_digest: plan.plan_digest,
    state,
    goal: {
      goal_id: plan.goal.goal_id,
      recovered_instance_id: plan.goal.goal_instance_id,
      new_instance_id: goalReceipt?.goal_instance_id ?? null,
    },
    capture: {
      requested_profile: plan.audit.requested_profile,
      achieved_profile: plan.audit.achieved_profile,
      captured_at_end: plan.audit.captured_at_end,
    },
    components: componentCounts(plan.components),
    verification: verificationCounts(plan.components),
    assets: assetCounts(plan.components),
    phase: {
      completed_steps: completed,
      total_steps: steps,
      current: plan.steps.find((s) => !j.done.has(s.action))?.action ?? null,
    },
    last_durable_receipt: j.last
      ? { action: j.last.receipt.action, owner: j.last.receipt.owner, result: j.last.receipt.result, at: j.last.at }
      : null,
    retryable: state === 'applying' || state === 'adoption_prepared' || holds.some((h) => h.retryable),
    fences,
    holds,
    resolved_holds: [...j.resolved].map(([hold_id, r]) => ({ hold_id, ...(r as Omit<ResolvedHold, 'hold_id'>) })),
    preview: plan.preview,
    timing: timingOf(
      plan.steps.map((s) => s.action),
      j,
    ),
    receipts: receiptsOf(
      plan.steps.map((s) => s.action),
      j,
    ),
    next_action: statusNextAction(state, plan, d, host, holds, superseded, j),
    ...(j.abandonedBy !== undefined ? { ended: j.abandonedBy } : {}),
    execution_authority_granted: false,
  };
}

/** The open holds of a recovery whose steps are all done, each with its digest and its one next action. */
async function statusHolds(plan: AdoptionPlan, j: ReturnType<typeof foldJournal>, d: string): Promise<RecoveryHold[]> {
  const open = await openHolds(
    plan.destination.path,
    plan.goal.goal_id,
    j.done,
    j.resolved,
    plan.destination_store !== undefined,
  );
  return open.holds.map((h) => ({
    ...h,
    digest: holdDigest(plan.recovery_id, plan.plan_digest, h, open.unknownTargets),
    next_action: nextActionOf(h, d),
  }));
}

/**
 * The operator state: `complete` only with both writer fences established, whatever the plan file
 * lists as its steps (a plan without the supersession or the reconciliation never completes): held until they are.
 */
function stateOf(
  j: ReturnType<typeof foldJournal>,
  completed: number,
  steps: number,
  holds: readonly RecoveryHold[],
  fences: RecoveryStatus['fences'],
): RecoveryState {
  return j.abandoned
    ? 'abandoned'
    : j.began.size === 0
      ? 'adoption_prepared'
      : completed < steps
        ? 'applying'
        : holds.length > 0 || !fences.source_established || !fences.destination_established
          ? 'reconciliation_held'
          : 'complete';
}

/** The one next action a status shows for its state. */
function statusNextAction(
  state: RecoveryState,
  plan: AdoptionPlan,
  d: string,
  host: AdoptionHost | undefined,
  holds: readonly RecoveryHold[],
  superseded: { readonly recovery_id: string } | undefined,
  j: ReturnType<typeof foldJournal>,
): string {
  return state === 'adoption_prepared'
    ? `confirm and apply: loopx recover apply --destination ${d} --confirm ${confirmableDigest(plan, host)}`
    : state === 'applying'
      ? `finish it: loopx recover apply --destination ${d} --confirm ${confirmableDigest(plan, host)}`
      : state === 'reconciliation_held'
        ? (holds[0]?.next_action ?? fenceNextAction(d, superseded, plan.recovery_id))
        : state === 'complete'
          ? `continue the Goal's unfinished work: loopx work run --goal ${plan.goal.goal_id} --root ${d} --agent AGENT_FILE`
          : j.abandonedBy !== undefined
            ? `continue the Goal in the root the other recovery made (root id ${j.abandonedBy.winner_root ?? 'unknown'}): loopx recover status --destination <that-root>`
            : 'plan the recovery again into a new destination';
}

/** The plan's components: required and optional, and how many each owner holds. */
function componentCounts(components: AdoptionPlan['components']): RecoveryStatus['components'] {
  const byOwner: Record<string, number> = {};
  for (const c of components) byOwner[c.owner] = (byOwner[c.owner] ?? 0) + 1;
  return {
    required: components.filter((c) => c.required).length,
    optional: components.filter((c) => !c.required).length,
    by_owner: byOwner,
  };
}

/** The plan's components by asset classification: readable, historical only, and the rest. */
function assetCounts(components: AdoptionPlan['components']): RecoveryStatus['assets'] {
  return {
    recovered_readable: components.filter((c) => c.classification === 'recovered_readable').length,
    historical_only: components.filter((c) => c.classification === 'historical_only').length,
    unknown_unrecoverable: components.filter(
      (c) => c.classification !== 'recovered_readable' && c.classification !== 'historical_only',
    ).length,
  };
}

/** The apply's own time, and the time it then stood held until its last settlement (journal times). */
function timingOf(
  actions: readonly string[],
  j: {
    startedAt: ReadonlyMap<string, string>;
    firstDoneAt: ReadonlyMap<string, string>;
    settledAt: string | undefined;
  },
) {
  const starts = actions.map((a) => j.startedAt.get(a)).filter((x): x is string => x !== undefined);
  const firsts = actions.map((a) => j.firstDoneAt.get(a));
  if (starts.length === 0 || firsts.some((x) => x === undefined)) return { apply_ms: null, held_ms: null };
  const t0 = Math.min(...starts.map(Date.parse));
  const end = Math.max(...firsts.map((x) => Date.parse(x!)));
  const settled = j.settledAt === undefined ? undefined : Date.parse(j.settledAt);
  return { apply_ms: end - t0, held_ms: settled !== undefined && settled > end ? settled - end : null };
}

/** Each step done: its newest receipt, timed by its first run (a re-run to settle a hold is not the apply's time). */
function receiptsOf(actions: readonly string[], j: ReturnType<typeof foldJournal>): RecoveryStatus['receipts'] {
  return actions.flatMap((action) => {
    const d = j.done.get(action);
    if (!d) return [];
    const r = d.receipt;
    return [
      {
        action: r.action,
        owner: r.owner,
        disposition: r.disposition,
        result: r.result,
        readback: r.readback,
        started_at: j.startedAt.get(action) ?? d.at,
        done_at: j.firstDoneAt.get(action) ?? d.at,
      },
    ];
  });
}
