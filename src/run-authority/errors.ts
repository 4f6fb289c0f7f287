/**
 * Refusals of the run authority that more than one module raises (the engine too), each built
 * only here: one kind, one message shape, one next action.
 */
import { conflict, internal, rejected, type LoopxError } from '../core/index.js';

/** A call on a closed authority (after shutdown): a caller's bug. */
export const authorityClosed = (): LoopxError => internal('authority_closed', 'The run authority is closed.');

/** The authority directory does not exist and this command does not create it. */
export const authorityMissing = (): LoopxError =>
  rejected('authority_missing', 'The run authority directory does not exist.', {
    nextAction: 'create it: loopx authority init',
  });

export const runIdInvalid = (): LoopxError =>
  rejected('run_id_invalid', 'Run ids are 1–128 characters of A–Z, a–z, 0–9, _ and -.');

/** A run's authority record is written only under that run's live lease: a caller's bug. */
export const leaseRequired = (runId: string): LoopxError =>
  internal('authority_lease_required', `Writing the authority record of run ${runId} needs its live run lease.`);

/** A secret of the authority directory (scope or key) that is not what it must be. */
export const authorityCorrupt = (what: string): LoopxError =>
  internal('authority_corrupt', `The authority's ${what} is malformed.`, {
    nextAction: 'restore the authority directory from a backup',
  });

/** A run record that does not decode: the authority directory was changed outside loopx. */
export const recordCorrupt = (runId: string, why: string): LoopxError =>
  internal('authority_record_corrupt', `The authority record of run ${runId} is ${why}.`);

/**
 * A writer of a Goal lifetime that the authority records as superseded (a recovery replaced it
 * with a new lifetime in another root): it may no longer commit, dispatch or deliver for the Goal.
 * Built here, once; every Goal-work writer that checks `lifetimeSupersession` raises this one.
 */
export const goalLifetimeSuperseded = (goalId: string, recoveredRoot?: string): LoopxError =>
  conflict(
    'goal_lifetime_superseded',
    `Goal ${goalId}'s lifetime was replaced by a recovery into another root; this root may no longer write or deliver for it.`,
    {
      // `recoveredRoot`: the root the recovery made, as the operator types it from here, when the authority still finds it.
      nextAction:
        recoveredRoot !== undefined
          ? `continue the Goal in the root it was recovered into: loopx goal show ${goalId} --root ${recoveredRoot}`
          : `see where this Goal's lifetime went (this root keeps it as history): loopx goal show ${goalId}`,
      details: { goal_id: goalId },
    },
  );

/**
 * A writer under another run authority than the one the root records (another HOME, an empty or
 * substituted `--authority-dir`), or a root with committed work that this authority never bound.
 */
export const rootAuthorityMismatch = (why: 'other' | 'never_bound'): LoopxError =>
  rejected(
    'root_authority_mismatch',
    why === 'other'
      ? 'This root belongs to another run authority than the one this command uses; no writer of it is admitted under this one.'
      : 'This root has committed work but this run authority never bound it; no writer of it is admitted under this one.',
    {
      nextAction:
        'use the authority directory this root belongs to (--authority-dir), or, if the root really moved to this one: loopx authority bind-root --adopt',
    },
  );
