/**
 * The refusals of `loopx recover` (plan, apply, status, resolve, abort): each code built once
 * here, with one message and one next action. A refusal leaves the plan, the journal, the
 * workspace and every live owner as they were.
 */
import { conflict, notFound, rejected, usageError, type LoopxError } from '../core/index.js';

/** The longest reason an operator records with a settlement. */
export const MAX_REASON_CHARS = 1000;

/** `cmd`: how the operator names the destination in a next action (relative, quoted when needed). */
export const RECOVER_REFUSALS = {
  auditNotEligible: (why: string): LoopxError =>
    rejected('recover_audit_not_eligible', `This verified backup cannot be adopted: ${why}.`, {
      nextAction: 'make a new backup (then verify it into a new workspace): loopx backup-state --execute',
    }),
  goalNotInAudit: (goalId: string, workspace: string): LoopxError =>
    notFound('recover_goal_not_in_backup', `The verified backup holds no Goal ${goalId} that can be adopted.`, {
      nextAction: `list the workspace's Goals: loopx backup-state workspace ls ${workspace}`,
    }),
  workspaceChanged: (what: string): LoopxError =>
    rejected('recover_workspace_changed', `The recovery workspace no longer matches its audit: ${what}.`, {
      nextAction: 'verify the backup again into a new workspace and plan the recovery from it',
    }),
  destinationNotEmpty: (): LoopxError =>
    conflict('recover_destination_not_empty', 'The destination is not a new, empty directory.', {
      nextAction: 'choose a destination path that does not exist yet',
    }),
  destinationNotPrivate: (): LoopxError =>
    rejected(
      'recover_destination_not_private',
      'The destination is not a private directory (owner-only, not a link).',
      {
        nextAction: 'choose a destination path that does not exist yet',
      },
    ),
  planExists: (): LoopxError =>
    conflict('recover_plan_exists', 'The destination already holds a recovery plan.', {
      nextAction: 'choose a destination path that does not exist yet',
    }),
  planMissing: (destination: string): LoopxError =>
    notFound('recover_plan_missing', 'The destination holds no recovery plan.', {
      nextAction: `plan the recovery first: loopx recover plan --from WORKSPACE --goal GOAL --destination ${destination}`,
    }),
  planElsewhere: (): LoopxError =>
    rejected(
      'recover_plan_elsewhere',
      'This directory is not the destination its recovery plan bound (a copy of it, or a destination that moved); it is no recovery.',
      {
        nextAction: 'use the destination the plan was written into; a copy of it never continues its recovery',
      },
    ),
  planInvalid: (why: string): LoopxError =>
    rejected('recover_plan_invalid', `The recovery plan cannot be used: ${why}.`, {
      nextAction: 'plan the recovery again into a new destination',
    }),
  // The digest to confirm is the one `recover plan` printed: never read back from the plan file, which is only a record.
  confirmMismatch: (destination: string): LoopxError =>
    rejected(
      'recover_confirm_mismatch',
      'The confirmed digest is not the digest of the plan loopx computes for this destination.',
      {
        nextAction: `confirm the digest that loopx recover plan printed (never one read back from the plan file; without it, plan again into a new destination): loopx recover apply --destination ${destination} --confirm PLAN_DIGEST`,
      },
    ),
  planTampered: (why: string): LoopxError =>
    rejected(
      'recover_plan_tampered',
      `The recovery plan file is not the plan loopx computes from its audit, workspace and destination: ${why}. Nothing runs from it.`,
      {
        nextAction: 'keep this destination as evidence and plan the recovery again into a new destination',
      },
    ),
  planStale: (why: string): LoopxError =>
    conflict('recover_plan_stale', `The recovery plan no longer matches what it bound: ${why}.`, {
      nextAction: 'plan the recovery again into a new destination',
    }),
  abandoned: (): LoopxError =>
    conflict('recover_abandoned', 'This recovery was abandoned; it is never applied.', {
      nextAction: 'plan the recovery again into a new destination',
    }),
  abortTooLate: (destination: string, digest: string): LoopxError =>
    conflict(
      'recover_abort_too_late',
      'Adoption has begun changing live owners; it can no longer be abandoned, only completed.',
      {
        nextAction: `finish it: loopx recover apply --destination ${destination} --confirm ${digest}`,
      },
    ),
  journalInvalid: (line: number): LoopxError =>
    rejected('recover_journal_invalid', `The recovery journal is malformed at line ${line}.`, {
      nextAction: 'keep the destination as evidence and plan the recovery again into a new destination',
    }),
  holdNotFound: (holdId: string, destination: string): LoopxError =>
    notFound('recover_hold_not_found', `The recovery has no open hold ${holdId}.`, {
      nextAction: `list the open holds: loopx recover status --destination ${destination}`,
    }),
  notApplied: (destination: string, digest: string): LoopxError =>
    conflict('recover_not_applied', 'The recovery has not been applied yet; holds exist only after apply.', {
      nextAction: `apply it: loopx recover apply --destination ${destination} --confirm ${digest}`,
    }),
  destinationNotApplied: (destination: string): LoopxError =>
    conflict(
      'recover_destination_not_applied',
      'This directory is a planned recovery destination; it becomes a runtime root only when the recovery is applied.',
      {
        nextAction: `see the recovery: loopx recover status --destination ${destination}`,
      },
    ),
  adoptionIncomplete: (destination: string): LoopxError =>
    conflict(
      'recover_adoption_incomplete',
      'A recovery into this root has not finished; the root takes no new work until it has.',
      {
        nextAction: `see what finishes it: loopx recover status --destination ${destination}`,
      },
    ),
  capacityFreeSpace: (destination: string, digest: string, cause: unknown): LoopxError =>
    rejected(
      'recover_capacity_free_space',
      'The recovery ran out of space in its destination (or its database); what it had done is kept.',
      {
        nextAction: `free space, then run the same apply: loopx recover apply --destination ${destination} --confirm ${digest}`,
        cause,
      },
    ),
  busy: (destination: string): LoopxError =>
    conflict('recover_busy', 'Another apply, resolve or abort of this recovery is running now; one runs at a time.', {
      nextAction: `wait for it to end, then see where it stands: loopx recover status --destination ${destination}`,
    }),
  reconciliationHeld: (holds: number, nextAction: string): LoopxError =>
    conflict(
      'recover_reconciliation_held',
      `The recovery into this root is held (${holds} open hold${holds === 1 ? '' : 's'}): the Goal's effects are reconciled before any new work is admitted.`,
      { nextAction },
    ),
  settlementInvalid: (why: string): LoopxError =>
    usageError(
      'recover_settlement_invalid',
      `This settlement cannot be made: ${why}.`,
      'see its options: loopx recover resolve --help',
    ),
  outcomeInvalid: (): LoopxError =>
    usageError(
      'recover_outcome_invalid',
      '--outcome is committed or absent.',
      'pass --outcome committed or --outcome absent',
    ),
  holdConfirmMismatch: (holdId: string, destination: string): LoopxError =>
    rejected(
      'recover_hold_confirm_mismatch',
      `The confirmed digest is not the digest of hold ${holdId} as it stands now.`,
      {
        nextAction: `read the hold's digest again and confirm that one: loopx recover status --destination ${destination}`,
      },
    ),
  holdNotReceiverGone: (holdId: string, code: string, destination: string): LoopxError =>
    rejected(
      'recover_hold_not_receiver',
      `Hold ${holdId} (${code}) is not a receiver that stopped answering; only such a receiver can be settled as gone.`,
      {
        nextAction: `settle it as its own next action says: loopx recover status --destination ${destination}`,
      },
    ),
  supersededElsewhere: (): LoopxError =>
    conflict(
      'recover_lifetime_superseded_elsewhere',
      'The recovered Goal lifetime was already superseded by another recovery; only one recovery may continue it.',
      {
        nextAction: 'continue the Goal in the root that recovery made',
      },
    ),
} as const;
