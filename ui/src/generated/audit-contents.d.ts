/* Generated from docs/schemas/daemon-audit-contents.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * `GET /api/audits/:recovery_id/contents`: what the audited backup holds in the operator's terms — per Goal its title, lifecycle, Todos by status, committed history, sessions, runs and effects, each row with the classification, owner and next action of the audit component that holds it — read from the private audit and the workspace's historical readers, for the token's holder only (docs/api.md). Names no path but the workspace's directory relative to the root. Grants no execution authority.
 */
export interface DaemonAuditContents {
  recovery_id: string;
  backup_id: string;
  phase: "audited" | "held";
  operator_state: "restored_inert" | "audit_held";
  /**
   * When the verification wrote the audit (ISO 8601).
   */
  verified_at: string;
  source: Source;
  workspace: {
    /**
     * The inert workspace, relative to the daemon's root.
     */
    directory: string;
    /**
     * How to read it back without changing it, as a next action (`in the root's directory: loopx …`).
     */
    read_only: string;
    command: string;
  };
  goals: Goal[];
  /**
   * What belongs to no Goal of the workspace: runs no Goal's session bound, effects of a run's own scope.
   */
  other: {
    rows: Row[];
    runs: Run[];
    effects: Effect[];
  };
  components: {
    component_id: string;
    /**
     * The component by owner and what it belongs to (`Goal <id>: work`, `whole root: session`).
     */
    name: string;
    owner_kind: string;
    /**
     * What its owner decides.
     */
    what: string;
    goal_id: string | null;
  }[];
  holds: {
    code: string;
    owner: string;
    component: string | null;
    goal_id: string | null;
    next_action: string;
  }[];
  /**
   * The audit in numbers the page leads with: whether a Goal can be recovered from it, how many, and its holds split into those a recovery settles by itself and those that need the operator (errors apart).
   */
  verdict: {
    recoverable: boolean;
    goals: number;
    eligible_goals: number;
    holds_settled_by_recovery: number;
    holds_for_operator: number;
    errors: number;
  };
  runs_readable: boolean;
  execution_authority_granted: false;
}
export interface Source {
  /**
   * `root_backup`: a backup in this root's `backups/` verified in place; `user_backup`: a backup in the user's backups folder (`$XDG_DATA_HOME/loopx/backups`) verified in place; `upload`: a pair uploaded to the daemon; `repository`: a backup repository's backup, fetched and verified (`repository_id` names it); `unknown`: verified before the daemon recorded sources.
   */
  kind: "root_backup" | "user_backup" | "upload" | "repository" | "unknown";
  /**
   * kind `repository` only: the repository's id (never its URL).
   */
  repository_id?: string;
  /**
   * kind `repository` only, from the audit: whether the backup was stored encrypted in the repository (false: labelled NOT encrypted).
   */
  encrypted?: boolean;
  backup_id: string;
  /**
   * When the backup itself was made (its manifest's `created_at`).
   */
  backup_created_at: string;
}
export interface Goal {
  /**
   * The Goal's alias: 1–64 of a–z 0–9 . _ -, starting with a letter or digit.
   */
  goal_id: string;
  goal_instance_id: string | null;
  /**
   * null when the audit names the Goal but the workspace holds no readable goal.json for it.
   */
  title: string | null;
  lifecycle: ("active" | "paused" | "retired") | null;
  logical_scope: string;
  activation_eligible: boolean;
  read_command: string;
  rows: Row[];
  runs: Run[];
  effects: Effect[];
}
export interface Row {
  item: "goal" | "todos" | "history" | "sessions" | "runs" | "effects";
  count: number;
  by_status: Counts;
  owner: string;
  component_id: string | null;
  /**
   * recovered and readable / historical only / unknown or unrecoverable (docs/backup-guide.md).
   */
  classification: "recovered_readable" | "historical_only" | "unknown_unrecoverable";
  verification: "verified" | "invalid" | "missing" | "ambiguous" | "unsupported" | "unknown";
  holds: {
    code: string;
    owner: string;
    next_action: string;
  }[];
  next_action: string;
}
export interface Counts {
  [k: string]: number;
}
export interface Run {
  run_id: string;
  lifecycle: string;
  last_sequence: number;
  completed_turns: number;
  definition_id: string;
}
export interface Effect {
  operation_id: string;
  kind: string;
  target: string;
  outcome: "committed" | "absent" | "unknown" | "rejected" | "superseded" | "pending";
  hold: string | null;
  attempt: number;
}
