/**
 * The adoption coordinator (`loopx recover apply | status | resolve | abort`). It owns the plan,
 * the phase journal and the owners' receipts — nothing else. It runs the plan's steps in order:
 * for each, a durable intent in the journal, the owner's step (which calls the owner's API with
 * the step's idempotency key and reads the owner back), then the receipt in the journal. A crash
 * anywhere and a second `apply` converge: a step that is done is not called again, a step that
 * began is called again and its owner answers `already` for what had landed.
 *
 * - `apply` derives the plan again from the audit, the workspace and the destination and refuses a
 *   plan file that differs (`recover_plan_tampered`: the file is a record, not an authority), and a
 *   confirmed digest that is not the derived plan's, and — before its first live
 *   mutation — a plan whose workspace, audit or destination changed (`recover_plan_stale`), or
 *   whose Goal lifetime another recovery already superseded.
 * - It ends `complete`, or `reconciliation_held` with the holds the owners reported; `resolve`
 *   settles one hold through its owner; `abort` is legal only before the first step began.
 * - One apply, resolve or abort at a time, from the CLI or the daemon: each holds the recovery's
 *   lock (adopt-lock.ts) for its whole run and a second is `recover_busy`; under it, the writer
 *   reads the plan and the journal once and numbers its appends from what it holds.
 * - Status is read back from the journal and the owners, never kept in memory: it survives any
 *   restart. Every receipt and status says `execution_authority_granted: false`; admission is the
 *   owners' ordinary business afterwards (`loopx work run` in the new root).
 */
import { timingSafeEqual } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { faultPoint, hasCode, operatorPath } from '../core/index.js';
import {
  ADOPTION,
  OWNER_LIST,
  effect,
  goal,
  registry,
  type AdoptionContext,
  type AdoptionStepReceipt,
  type OwnerAdoptionStep,
} from '../owners/index.js';
import { ARCHIVE_ROOT } from '../backup/index.js';
import { isOutOfSpace } from '../store/index.js';
import { WORKSPACE_DIR } from './audit.js';
import { MAX_REASON_CHARS, RECOVER_REFUSALS as R } from './adopt-codes.js';
import { foldJournal, JournalWriter, type HostReceipt } from './adopt-journal.js';
import { withRecoveryLock } from './adopt-lock.js';
import { discardStaging, stageWorkspace, type StagedWorkspace } from './adopt-staging.js';
import {
  RECOVERY_DIR,
  readPlan,
  recomputePlan,
  reverifyWorkspace,
  type AdoptionPlan,
  type DestinationStore,
  type PlannedStep,
} from './adopt-plan.js';
import { recoveryStatus, type RecoveryHold, type RecoveryStatus } from './adopt-status.js';

/** What the coordinator asks outside the owners: the new root and the per-user run authority. */
export interface AdoptionHost {
  /** Make the destination a runtime root — its Goal state in `store` when named — and bind its identity in the run authority (idempotent); its root id. */
  initDestination(root: string, store?: DestinationStore): Promise<string>;
  /** Record a lifetime as superseded in the run authority (idempotent; a different successor is a conflict). */
  supersede(request: {
    goal_instance_id: string;
    goal_id: string;
    successor_instance_id: string;
    goal_lineage: string;
    fence: number;
    recovery_id: string;
    successor_root: string;
    source_root: string | null;
  }): Promise<{ readonly replayed: boolean }>;
  /** The root id the verified workspace's run kernel names (the root the backup was taken of); null when it names none. */
  sourceRoot(workspaceRoot: string): string | null;
  supersession(
    goalInstanceId: string,
  ): Promise<
    | { readonly successor_instance_id: string; readonly recovery_id: string; readonly successor_root?: string }
    | undefined
  >;
  /**
   * The digest `recover plan` printed for this plan, as the run authority sealed it then — never
   * one read back from the plan file alone; undefined when the seal is missing or does not verify.
   */
  printedDigest(plan: AdoptionPlan): string | undefined;
}

/** What a next action asks the operator to confirm: the printed digest, or its name when it cannot be vouched for. */
export const confirmableDigest = (plan: AdoptionPlan, host: AdoptionHost | undefined): string =>
  host?.printedDigest(plan) ?? 'PLAN_DIGEST';

export interface AdoptionRunOptions {
  readonly host: AdoptionHost;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
  /** Called as each step starts (progress on a TTY). */
  readonly onStep?: (step: PlannedStep, index: number, total: number) => void;
}

const stepOf = (action: string): OwnerAdoptionStep | undefined => {
  for (const o of OWNER_LIST) {
    const s = ADOPTION[o.name as keyof typeof ADOPTION].find((x) => x.action === action);
    if (s) return s;
  }
  return undefined;
};

/** Before the first live mutation: the plan still describes the world it bound. */
async function checkFresh(plan: AdoptionPlan, host: AdoptionHost): Promise<void> {
  const { audit } = reverifyWorkspace(plan.workspace.path);
  if (
    audit.recovery_id !== plan.audit.recovery_id ||
    audit.backup.embedded_manifest_sha256 !== plan.audit.embedded_manifest_sha256
  )
    throw R.planStale('the workspace holds another verification');
  const st = lstatSync(plan.destination.path);
  if (st.dev !== plan.destination.dev || st.ino !== plan.destination.ino)
    throw R.planStale('the destination is another directory');
  if (readdirSync(plan.destination.path).some((n) => n !== RECOVERY_DIR))
    throw R.planStale('the destination is no longer empty');
  const superseded = await host.supersession(plan.goal.goal_instance_id);
  if (superseded && superseded.recovery_id !== plan.recovery_id) throw R.supersededElsewhere();
  faultPoint('recover.apply.after-fresh');
}

/** Whether `e` says the recovered lifetime was superseded by another recovery first. */
const lostRace = (e: unknown): boolean =>
  hasCode(e, 'goal_lifetime_already_superseded') || hasCode(e, 'recover_lifetime_superseded_elsewhere');

/**
 * Another recovery superseded the Goal lifetime first: this one can never continue it, so it ends
 * here — `abandoned`, its receipt naming the winning recovery and root — and the lifetime it
 * minted in its own destination is retired through the goal owner. Idempotent: a re-run after a
 * crash in between retires nothing twice and records one end.
 */
async function endLostRace(plan: AdoptionPlan, journal: JournalWriter, host: AdoptionHost): Promise<void> {
  const winner = await host.supersession(plan.goal.goal_instance_id);
  if (!winner || winner.recovery_id === plan.recovery_id)
    throw R.planInvalid('the recovery lost its Goal to no other recovery');
  const minted =
    (
      foldJournal(journal.entries).done.get('goal:rebind')?.receipt.readback as
        { goal_instance_id?: string } | undefined
    )?.goal_instance_id ?? null;
  if (minted !== null) {
    const goals = goal.openFileGoalStore(plan.destination.path, {
      registry: registry.openFileRegistry(plan.destination.path),
    });
    const current = goals.get(plan.goal.goal_id);
    if (current?.goal_instance_id === minted && current.lifecycle !== 'retired')
      goals.retire({ goal_id: current.goal_id, goal_instance_id: minted }, current.lifecycle);
  }
  faultPoint('recover.abandon.before');
  journal.append({
    event: 'abandoned',
    at: new Date().toISOString(),
    receipt: {
      reason: 'superseded_elsewhere',
      winner_recovery_id: winner.recovery_id,
      winner_root: winner.successor_root ?? null,
      retired_instance_id: minted,
    },
  });
}

/** The context of one step: it reads the workspace only as `staged` holds it (adopt-staging.ts), its copies verified against the audit. */
function contextFor(
  plan: AdoptionPlan,
  step: PlannedStep,
  scratch: string,
  options: AdoptionRunOptions,
  staged: StagedWorkspace,
): AdoptionContext {
  return {
    ...(staged.exports === undefined ? {} : { exports: staged.exports }),
    recovery_id: plan.recovery_id,
    goal_id: plan.goal.goal_id,
    workspace_root: staged.root,
    workspace_dir: staged.dir,
    scratch_dir: scratch,
    destination: plan.destination.path,
    components: plan.components.filter((c) => step.component_ids.includes(c.component_id)),
    key: () => step.idempotency_key,
    fault: faultPoint,
    options: {
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    },
  };
}

const hostReceipt = (
  step: PlannedStep,
  result: 'applied' | 'already',
  readback: Record<string, unknown>,
): HostReceipt => ({
  owner: step.owner,
  action: step.action,
  disposition: 'bind',
  idempotency_key: step.idempotency_key,
  result,
  readback,
  holds: [],
  execution_authority_granted: false,
});

/** The coordinator's own steps: the new root, and the supersession of the recovered lifetime. */
async function runHostStep(
  plan: AdoptionPlan,
  step: PlannedStep,
  done: ReturnType<typeof foldJournal>['done'],
  host: AdoptionHost,
): Promise<HostReceipt> {
  if (step.action === 'host:destination') {
    faultPoint('recover.host:destination.before');
    const rootId = await host.initDestination(plan.destination.path, plan.destination_store);
    return hostReceipt(step, 'applied', { root_id: rootId });
  }
  const lifetime = [...done.values()]
    .map((d) => (d.receipt as AdoptionStepReceipt).lifetime)
    .find((l) => l !== undefined);
  const rootId = (done.get('host:destination')?.receipt.readback as { root_id?: string } | undefined)?.root_id;
  if (!lifetime || rootId === undefined)
    throw R.planInvalid('the supersession step comes before the lifetime it records');
  faultPoint('recover.host:supersede.before');
  const { replayed } = await host.supersede({
    goal_instance_id: lifetime.superseded,
    goal_id: lifetime.goal_id,
    successor_instance_id: lifetime.successor,
    goal_lineage: lifetime.lineage_id,
    fence: goal.lifetimeFence(lifetime),
    recovery_id: plan.recovery_id,
    successor_root: rootId,
    source_root: host.sourceRoot(join(plan.workspace.path, WORKSPACE_DIR, ARCHIVE_ROOT)),
  });
  faultPoint('recover.host:supersede.after');
  const back = await host.supersession(lifetime.superseded);
  if (back?.successor_instance_id !== lifetime.successor) throw R.supersededElsewhere();
  return hostReceipt(step, replayed ? 'already' : 'applied', {
    superseded_instance_id: lifetime.superseded,
    successor_instance_id: lifetime.successor,
    fence: goal.lifetimeFence(lifetime),
  });
}

/** Run every step not done yet, in order; each with its intent before and its receipt after, appended through the one writer. */
async function runSteps(plan: AdoptionPlan, journal: JournalWriter, options: AdoptionRunOptions): Promise<void> {
  // What the steps still to run read, copied once into the destination's staging and verified there, before any of them runs.
  const { done: before } = foldJournal(journal.entries);
  const staged = stageWorkspace(
    plan,
    plan.steps.filter((s) => !before.has(s.action)),
  );
  // The supersession names the source root as the staged, verified run kernel names it.
  const host: AdoptionHost = { ...options.host, sourceRoot: () => options.host.sourceRoot(staged.root) };
  const scratch = mkdtempSync(join(tmpdir(), 'loopx-recover-'));
  try {
    for (const [i, step] of plan.steps.entries()) {
      const { done } = foldJournal(journal.entries);
      if (done.has(step.action)) continue;
      options.onStep?.(step, i, plan.steps.length);
      await outOfSpaceRefused(plan, async () => {
        journal.append({
          event: 'intent',
          action: step.action,
          idempotency_key: step.idempotency_key,
          at: new Date().toISOString(),
        });
        const owned = stepOf(step.action);
        const receipt = owned
          ? await owned.apply(contextFor(plan, step, scratch, options, staged))
          : await runHostStep(plan, step, done, host);
        journal.append({
          event: 'done',
          action: step.action,
          idempotency_key: step.idempotency_key,
          receipt,
          at: new Date().toISOString(),
        });
      });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    staged.close();
  }
}

/**
 * A step that ran out of space — the destination's file system, or a database store's — is
 * `recover_capacity_free_space`, whatever the owner called it: every step is idempotent, so the
 * same apply, run again once there is room, goes on from where it stopped.
 */
async function outOfSpaceRefused(plan: AdoptionPlan, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    if (isOutOfSpace(e)) throw R.capacityFreeSpace(operatorPath(plan.destination.path), plan.plan_digest, e);
    throw e;
  }
}

/** `fn` with the plan read once and the journal held by this writer, under the recovery's lock (`recover_busy` while another holds it). */
function underLock<T>(destination: string, fn: (plan: AdoptionPlan, journal: JournalWriter) => Promise<T>): Promise<T> {
  const plan = readPlan(destination);
  return withRecoveryLock(plan.destination.path, operatorPath(plan.destination.path), () =>
    fn(plan, JournalWriter.open(plan.destination.path)),
  );
}

/** `loopx recover apply`: the confirmed plan, applied (see the header). */
export async function applyAdoption(
  destination: string,
  confirm: string,
  options: AdoptionRunOptions,
): Promise<RecoveryStatus> {
  return underLock(destination, async (file, journal) => {
    discardStaging(file.destination.path); // a killed apply's copies: never trusted, never left behind by a refusal
    // The plan file is a record: the steps that run are the ones loopx derives again from the audit,
    // the workspace and the destination (a file that says otherwise is refused), and only the digest
    // of that derived plan, as the operator confirmed it, authorises them.
    const plan = recomputePlan(file);
    if (confirm !== plan.plan_digest) throw R.confirmMismatch(operatorPath(plan.destination.path));
    const state = foldJournal(journal.entries);
    // A recovery that lost its Goal to another one has ended: the same apply answers that end again.
    if (state.abandonedBy !== undefined) return recoveryStatus(plan.destination.path, options.host);
    if (state.abandoned) throw R.abandoned();
    // Superseded by another recovery before anything began: refused, the plan dead (abort ends it).
    if (state.began.size === 0) await checkFresh(plan, options.host);
    try {
      await runSteps(plan, journal, options);
    } catch (e) {
      // Superseded meanwhile, after this one began: it ends here, never `applying` for ever.
      if (!lostRace(e)) throw e;
      await endLostRace(plan, journal, options.host);
    }
    return recoveryStatus(plan.destination.path, options.host);
  });
}

/** `loopx recover abort`: legal only before the first live-owner step began (making the new root is not one); the plan stays as evidence. */
export async function abortAdoption(destination: string, host?: AdoptionHost): Promise<RecoveryStatus> {
  return underLock(destination, async (plan, journal) => {
    const state = foldJournal(journal.entries);
    if (!state.abandoned) {
      // Making the new, empty root changes no live owner; any later step does.
      if ([...state.began].some((action) => action !== 'host:destination'))
        throw R.abortTooLate(operatorPath(plan.destination.path), confirmableDigest(plan, host));
      journal.append({ event: 'abandoned', at: new Date().toISOString() });
    }
    return recoveryStatus(plan.destination.path, host);
  });
}

/** How `resolve` settles a hold: through its owner (ask again), or from the operator's evidence. */
export type HoldSettlement =
  | { readonly kind: 'ask' }
  /** An effect hold: the operator's finding of what happened (only from the exact state it was read in). */
  | { readonly kind: 'outcome'; readonly outcome: 'committed' | 'absent' }
  /** A receiver hold: the receiver will never answer again; `confirm` is the hold's digest as status showed it. */
  | { readonly kind: 'receiver_gone'; readonly confirm: string; readonly reason: string };

const checkReason = (reason: string): void => {
  if (reason.length === 0 || reason.length > MAX_REASON_CHARS || /[\u0000-\u001f\u007f]/.test(reason))
    throw R.settlementInvalid(`the reason is 1 to ${MAX_REASON_CHARS} characters of text on one line`);
};

/** The settlement `recover resolve` was asked for, from its flags, checked before anything is read. */
export function settlementFrom(o: {
  readonly outcome?: string;
  readonly receiverGone?: boolean;
  readonly confirm?: string;
  readonly reason?: string;
}): HoldSettlement {
  if (o.receiverGone === true) {
    if (o.outcome !== undefined)
      throw R.settlementInvalid('--receiver-gone and --outcome settle different holds; give one');
    if (o.confirm === undefined || o.reason === undefined)
      throw R.settlementInvalid(
        '--receiver-gone needs --confirm with the hold digest status shows and --reason saying how you know',
      );
    checkReason(o.reason.trim());
    return { kind: 'receiver_gone', confirm: o.confirm, reason: o.reason.trim() };
  }
  if (o.confirm !== undefined || o.reason !== undefined)
    throw R.settlementInvalid('--confirm and --reason go with --receiver-gone');
  if (o.outcome === undefined) return { kind: 'ask' };
  if (o.outcome !== 'committed' && o.outcome !== 'absent') throw R.outcomeInvalid();
  return { kind: 'outcome', outcome: o.outcome };
}

/** Receiver holds an operator may settle as gone: it stopped answering (not one that follows another lifetime). */
const GONE_SETTLEABLE: ReadonlySet<string> = new Set(['receiver_unreachable', 'receiver_fence_unconfirmed']);

/**
 * `loopx recover resolve --hold H`: one hold settled through its owner. An effect hold is asked of
 * its external system again under its original operation id (or, with an outcome, settled from the
 * operator's evidence, only from the exact state it was read in); a receiver hold re-runs the
 * effect owner's reconciliation, which asks the receiver again — or, on the operator's evidence
 * that it will never answer again (`--receiver-gone`, confirmed by the hold's digest), the effect
 * owner retires that receiver for the Goal: its unknown effects abandoned, never sent, and later
 * deliveries to it refused. The journal records the settlement with the operator's reason.
 */
export async function resolveHold(
  destination: string,
  holdId: string,
  options: AdoptionRunOptions & { settlement: HoldSettlement },
): Promise<RecoveryStatus> {
  return underLock(destination, (plan, journal) => resolveUnderLock(plan, journal, holdId, options));
}

/** `resolve` under the lock: the hold found in the status read back, settled the way `settlement` asks, then the status again. */
async function resolveUnderLock(
  plan: AdoptionPlan,
  journal: JournalWriter,
  holdId: string,
  options: AdoptionRunOptions & { settlement: HoldSettlement },
): Promise<RecoveryStatus> {
  const root = plan.destination.path;
  const before = await recoveryStatus(root, options.host);
  if (before.state === 'adoption_prepared' || before.state === 'abandoned')
    throw R.notApplied(operatorPath(root), confirmableDigest(plan, options.host));
  const hold = before.holds.find((h) => h.hold_id === holdId);
  if (!hold) throw R.holdNotFound(holdId, operatorPath(root));
  const settlement = options.settlement;
  if (settlement.kind === 'receiver_gone') await settleReceiverGone(plan, journal, hold, settlement);
  else if (holdId.startsWith('effect:')) await settleEffectHold(plan, journal, holdId, settlement, options);
  else await askReceiverAgain(plan, journal, options);
  return recoveryStatus(root, options.host);
}

/** `--receiver-gone`: the confirmed receiver hold's target retired through the effect owner, the settlement journaled with the operator's reason. */
async function settleReceiverGone(
  plan: AdoptionPlan,
  journal: JournalWriter,
  hold: RecoveryHold,
  settlement: Extract<HoldSettlement, { kind: 'receiver_gone' }>,
): Promise<void> {
  const root = plan.destination.path;
  const holdId = hold.hold_id;
  if (!holdId.startsWith('receiver:') || !GONE_SETTLEABLE.has(hold.code))
    throw R.holdNotReceiverGone(holdId, hold.code, operatorPath(root));
  if (!digestEqual(settlement.confirm, hold.digest)) throw R.holdConfirmMismatch(holdId, operatorPath(root));
  checkReason(settlement.reason);
  const effects = effect.openRootEffectJournal(root);
  try {
    const { abandoned } = await effect.retireTarget(effects, {
      goal_id: plan.goal.goal_id,
      target: hold.subject,
      reason: settlement.reason,
      evidence: { recovery_id: plan.recovery_id, hold_id: holdId, hold_digest: hold.digest },
    });
    faultPoint('recover.resolve.receiver-gone.before-journal');
    journal.append({
      event: 'resolved',
      hold_id: holdId,
      receipt: {
        owner: 'effect',
        outcome: 'receiver_gone',
        resolved_by: 'operator',
        reason: settlement.reason,
        hold_digest: hold.digest,
        abandoned: [...abandoned].sort(),
      },
      at: new Date().toISOString(),
    });
  } finally {
    effects.close();
  }
}

/** An effect hold: settled from the operator's outcome, or asked of its external system again; journaled once it is no longer unknown. */
async function settleEffectHold(
  plan: AdoptionPlan,
  journal: JournalWriter,
  holdId: string,
  settlement: HoldSettlement,
  options: AdoptionRunOptions,
): Promise<void> {
  const effects = effect.openRootEffectJournal(plan.destination.path);
  try {
    const id = holdId.slice('effect:'.length);
    const e = await effects.get(id);
    const r =
      settlement.kind === 'outcome'
        ? (
            await effects.resolve(id, { outcome: e!.outcome, attempt: e!.attempt }, settlement.outcome, {
              resolved_by: 'operator',
              recovery_id: plan.recovery_id,
            })
          ).effect
        : (await effects.reconcile(id, effect.webhookOperationQuery(options))).effect;
    if (r.outcome !== 'unknown')
      journal.append({
        event: 'resolved',
        hold_id: holdId,
        receipt: { owner: 'effect', outcome: r.outcome },
        at: new Date().toISOString(),
      });
  } finally {
    effects.close();
  }
}

/** A receiver hold asked again: the effect owner's reconciliation step re-run from the staged workspace, its receipt journaled. */
async function askReceiverAgain(
  plan: AdoptionPlan,
  journal: JournalWriter,
  options: AdoptionRunOptions,
): Promise<void> {
  const step = plan.steps.find((s) => s.action === 'effect:reconcile')!;
  const staged = stageWorkspace(plan, [step]);
  const scratch = mkdtempSync(join(tmpdir(), 'loopx-recover-'));
  try {
    const receipt = await stepOf(step.action)!.apply(contextFor(plan, step, scratch, options, staged));
    faultPoint('recover.resolve.ask-again.before-journal');
    journal.append({
      event: 'done',
      action: step.action,
      idempotency_key: step.idempotency_key,
      receipt,
      at: new Date().toISOString(),
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    staged.close();
  }
}

/** Digests compared in constant time (a confirmation is a capability the operator read). */
const digestEqual = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};
