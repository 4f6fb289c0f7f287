/* Generated from docs/schemas/recover-drill.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * stdout of `loopx recover drill --json` (loopx_recovery_drill_v0): the receipt of a recovery drill on disposable synthetic state — each measured figure beside its target, frozen in the drill's targets file (its digest in targets_sha256) before it ran, and whether it was met. Public: ids, counts, codes and times only, never a path, a payload or session text. The command exits 0 when every target is met and 3 when one is missed (the receipt is printed either way).
 */
export interface LoopxRecoverDrill {
  schema_version: "loopx_recovery_drill_v0";
  drill_id: string;
  /**
   * short: two crash points of the apply and one of the resolve; full: every owner commit point of the apply and every crash point of the resolve
   */
  mode: "short" | "full";
  /**
   * same-host: the recovery runs as the source's own operator on this machine; cross-host: it also ran on another host — its own home, state and run authority that never saw the source — from an encrypted repository, and the old host came back (cross_host)
   */
  variant: "same-host" | "cross-host";
  started_at: string;
  finished_at: string;
  result: "targets_met" | "targets_missed";
  /**
   * what was missed; empty when every target was met
   */
  missed: (
    | "rto"
    | "rpo"
    | "human_actions"
    | "protected_duplicates"
    | "old_writers"
    | "fault_injection"
    | "cases"
    | "continuation"
    | "cross_host"
  )[];
  /**
   * the targets as the drill's targets file froze them
   */
  targets: {
    rto_seconds: number;
    rpo: "last_captured_checkpoint";
    /**
     * the RPO is at most the drill's interval from the end of the capture to the loss of the source
     */
    rpo_seconds_at_most: "capture_to_loss_interval";
    /**
     * the work transactions the drill deliberately commits after the capture
     */
    rpo_work_items_lost_at_most: number;
    human_actions_base: number;
    human_actions_per_hold: number;
    protected_duplicates: number;
    old_writers_rejected_percent: number;
  };
  /**
   * SHA-256 of the canonical JSON (RFC 8785) of the targets file the drill judged by
   */
  targets_sha256: string;
  /**
   * the source's last captured checkpoint
   */
  captured: {
    profile: string;
    captured_at_end: string;
    work_cursor: number;
    todos: Counts;
    deliveries: number;
  };
  recovered: {
    state: string;
    new_goal_instance_id: string;
    /**
     * as the recovery's import step reported it
     */
    imported_transactions: number;
    todos_at_adoption: Counts;
    effects: Counts1;
    /**
     * deliveries the receiver holds that the capture did not
     */
    committed_after_capture: number;
    /**
     * the source's work transactions the new root holds under their original operation id and revision, read back from its work owner
     */
    source_transactions_held: number;
  };
  lost_or_unknown: {
    /**
     * the source's work transactions the new root does not hold
     */
    work_items_lost_locally: number;
    committed_after_capture: number;
    /**
     * holds still open at the end of the main journey
     */
    unknown: number;
    /**
     * what the plan's preview said would be lost or unknown
     */
    preview: string[];
  };
  phases: {
    phase: "verify" | "plan" | "apply" | "resolve" | "first_turn";
    elapsed_ms: number;
  }[];
  /**
   * from backup and manifest supplied to the first admitted turn in the new root, verify included
   */
  rto: {
    seconds: number;
    target_seconds: number;
    met: boolean;
  };
  /**
   * the recovery point, by owner readback of the new root against the source's work history at the loss; met when every bound holds
   */
  rpo: {
    checkpoint: {
      captured_at_end: string;
      work_cursor: number;
      profile: string;
    };
    /**
     * the RPO: from the oldest source work transaction the new root does not hold to the loss of the source (0 when it holds every one)
     */
    seconds: number;
    /**
     * from the end of the capture to the loss of the source: the bound of seconds
     */
    capture_to_loss_seconds: number;
    /**
     * work transactions the source committed after the capture
     */
    written_after_capture: number;
    /**
     * the source's work transactions the new root does not hold
     */
    work_items_lost_locally: number;
    /**
     * the bound of work_items_lost_locally, from the targets
     */
    work_items_lost_at_most: number;
    committed_after_capture: number;
    /**
     * source work transactions after the captured checkpoint the new root holds: 0 when the target is met
     */
    claimed_beyond_checkpoint: number;
    bounds: {
      nothing_claimed_beyond_checkpoint: boolean;
      /**
       * seconds ≤ capture_to_loss_seconds
       */
      within_capture_to_loss: boolean;
      /**
       * work_items_lost_locally ≤ work_items_lost_at_most
       */
      within_work_items: boolean;
    };
    target: "last_captured_checkpoint";
    met: boolean;
  };
  human_actions: {
    count: number;
    visible_holds: number;
    /**
     * the base plus one per visible hold
     */
    limit: number;
    met: boolean;
    /**
     * the commands the operator issued to recover, as issued (`loopx <command> <subcommand>`); count is their number
     */
    actions: string[];
  };
  holds: {
    hold_id: string;
    owner: string;
    code: string;
    continuation: string;
    resolved: boolean;
    where: "main" | "receiver_down";
  }[];
  /**
   * re-sends the receiver saw of an operation it already held (it records every attempt)
   */
  protected_duplicates: {
    count: number;
    target: number;
    attempts: Counts2;
    each_logical_operation_stored_once: boolean;
    met: boolean;
  };
  old_writers: {
    attempted: number;
    rejected: number;
    percent: number;
    target_percent: number;
    nothing_changed: boolean;
    met: boolean;
    attempts: {
      writer: string;
      expected: string;
      observed: string;
      rejected: boolean;
    }[];
  };
  /**
   * a SIGKILL at owner commit points of the apply and inside the resolve of a receiver hold, each followed by the same command again, accepted by owner readback
   */
  fault_injection: {
    points: number;
    apply_points: number;
    resolve_points: number;
    converged: number;
    deliveries_sent: number;
    met: boolean;
    cases: {
      command: "apply" | "resolve";
      point: string;
      killed: boolean;
      state_after_crash: string;
      state_after_retry: string;
      owners_converged: boolean;
      converged: boolean;
    }[];
  };
  /**
   * refusals and variants: what was expected, what was observed
   */
  cases: {
    case: string;
    expected: string;
    observed: string;
    met: boolean;
  }[];
  continued: {
    run_status: string;
    todo_done_in_new_lifetime: boolean;
    met: boolean;
  };
  /**
   * the cross-host variant (only with --cross-host): host B, with its own home, state and run authority and only the repository's key, verifies from an encrypted directory repository, recovers and continues the Goal; then the old host A starts a work run and must be refused before it sends anything
   */
  cross_host?: {
    case: string;
    expected: string;
    observed: string;
    repository: {
      kind: "directory";
      encrypted: true;
    };
    phases: {
      phase: "verify" | "plan" | "apply" | "resolve" | "first_turn";
      elapsed_ms: number;
    }[];
    rto: {
      seconds: number;
      target_seconds: number;
      met: boolean;
    };
    old_host: {
      /**
       * the refusal code of the old host's work run (goal_lifetime_superseded when it asked the receiver first), null when it was admitted
       */
      code: string | null;
      /**
       * deliveries the receiver saw attempted by the old host after the recovery (0: it sent nothing)
       */
      attempts_after_recovery: number;
    };
    continued: {
      run_status: string;
      todo_done: boolean;
    };
    met: boolean;
  };
  execution_authority_granted: false;
}
export interface Counts {
  [k: string]: number;
}
/**
 * recovered effects by outcome
 */
export interface Counts1 {
  [k: string]: number;
}
/**
 * every attempt at the receiver by result
 */
export interface Counts2 {
  [k: string]: number;
}
