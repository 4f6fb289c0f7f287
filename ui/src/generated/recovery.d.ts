/* Generated from docs/schemas/daemon-recovery.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * `GET /api/recoveries/:id` (and the answers of its apply, resolve and abort routes): a recovery the daemon started: one Goal of an audit recovered into a new root beside the daemon's own, named by its directory name, never by a path. `status` is the recovery's state read back from its plan, its journal and the owners (as `loopx recover status --json`), with its next actions given as routes.
 */
export interface DaemonRecovery {
  recovery_id: string;
  /**
   * the recovery_id of the audit whose workspace it recovers from
   */
  audit_id: string;
  goal_id: string;
  /**
   * the new root's directory, beside the daemon's root
   */
  destination_name: string;
  created_at: string;
  /**
   * an apply is running in this daemon now
   */
  applying_now: boolean;
  /**
   * the last apply's failure in this daemon's lifetime; the state says what was done
   */
  last_apply_error: null | {
    code: string;
    message: string;
    next_action: string | null;
  };
  status: LoopxRecoverStatusApplyResolveAbort;
}
/**
 * stdout of `loopx recover status|apply|resolve|abort --json`: a recovery's state read back from its plan, its phase journal and the owners (loopx_recovery_status_v0). Receipts never grant execution authority; the owners admit new work afterwards.
 */
export interface LoopxRecoverStatusApplyResolveAbort {
  schema_version: "loopx_recovery_status_v0";
  recovery_id: string;
  backup_id: string;
  audit_recovery_id: string;
  plan_digest: string;
  state:
    | "verifying"
    | "restored_inert"
    | "audit_held"
    | "adoption_prepared"
    | "applying"
    | "reconciliation_held"
    | "complete"
    | "abandoned";
  goal: {
    goal_id: string;
    recovered_instance_id: string;
    new_instance_id: string | null;
  };
  capture: {
    requested_profile: string | null;
    achieved_profile: string;
    captured_at_end: string | null;
  };
  components: {
    required: number;
    optional: number;
    by_owner: {
      [k: string]: number;
    };
  };
  /**
   * the plan's components by verification status (the six counts every recovery status shows); other: every component not verified
   */
  verification: {
    verified: number;
    invalid: number;
    missing: number;
    ambiguous: number;
    unsupported: number;
    unknown: number;
    other: number;
  };
  assets: {
    recovered_readable: number;
    historical_only: number;
    unknown_unrecoverable: number;
  };
  phase: {
    completed_steps: number;
    total_steps: number;
    current: string | null;
  };
  last_durable_receipt: {
    action: string;
    owner: string;
    result: string;
    at: string;
  } | null;
  retryable: boolean;
  fences: {
    source_established: boolean;
    destination_established: boolean;
  };
  holds: {
    hold_id: string;
    owner: string;
    code: string;
    subject: string;
    continuation: string;
    retryable: boolean;
    /**
     * the hold as read now (with, for a receiver, the unknown deliveries settling it as gone would abandon): what `loopx recover resolve --receiver-gone --confirm` takes
     */
    digest: string;
    next_action: string;
  }[];
  /**
   * holds settled through their owner, as the recovery journal recorded them; an operator's settlement carries the operator's reason
   */
  resolved_holds: {
    hold_id: string;
    owner: string;
    /**
     * committed or absent (an effect), or receiver_gone (a receiver the operator retired for this Goal)
     */
    outcome: string;
    resolved_by?: "operator";
    reason?: string;
    hold_digest?: string;
    /**
     * the unknown effects abandoned with the receiver: never sent, their outcome never guessed
     */
    abandoned?: string[];
  }[];
  /**
   * What the operator is shown before confirming.
   */
  preview: {
    recovered_readable: string[];
    historical_only: string[];
    lost_or_unknown: string[];
    expected_holds: string[];
    external_systems: string[];
    human_actions: string[];
  };
  /**
   * The apply's own time apart from the time the recovery then stood held: `apply_ms` from the first step's intent until every step was first done (null before that); `held_ms` from then until the last hold was settled (null when none was), mostly time waiting on an operator.
   */
  timing: {
    apply_ms: number | null;
    held_ms: number | null;
  };
  receipts: {
    action: string;
    owner: string;
    disposition: "retain_historical" | "import_inert" | "rebind" | "reconcile" | "rebuild" | "discard" | "bind";
    result: "applied" | "already";
    /**
     * What the owner's readback showed after the step: ids, counts, revisions — never payloads or paths.
     */
    readback: {
      [k: string]: unknown;
    };
    /**
     * when the step's first intent was recorded
     */
    started_at: string;
    /**
     * when its owner's receipt was recorded
     */
    done_at: string;
  }[];
  next_action: string;
  /**
   * Present when the recovery ended abandoned because another recovery superseded the Goal lifetime first: the winner, and the lifetime this recovery had minted and then retired.
   */
  ended?: {
    reason: "superseded_elsewhere";
    winner_recovery_id: string;
    winner_root: string | null;
    retired_instance_id: string | null;
  };
  execution_authority_granted: false;
}
