/* Generated from docs/schemas/daemon-goal.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * GET /api/goals/:id (and each item of GET /api/goals): A Goal as the Capability Center's Goal pages read it: its lifetime and lineage, Todo counts, history size, lease mode and last activity; on its own page its Todos with lease holder and expiry, and — for a lifetime one of this daemon's recoveries minted — the backup it came from and what was lost or unknown; for a lifetime a recovery superseded, where the Goal continues (`superseded_by`). Either answer may be of a root a recovery made (`?root=<name>`). No path.
 */
export type DaemonGoal =
  | {
      goals: GoalItem[];
    }
  | {
      goal_id: string;
      goal_instance_id: string;
      title: string;
      lifecycle: "active" | "paused" | "retired";
      docs: {
        name: string;
        sha256: string;
        bytes: number;
      }[];
      lineage: null | {
        lineage_id: string;
        generation: number;
        supersedes: null | {
          goal_instance_id: string;
          recovery_id: string;
        };
      };
      counts: Counts;
      committed_transactions: number;
      handoff_mode: string;
      /**
       * Where the Goal's canonical work lives: its SQLite work.db in the root, or a PostgreSQL schema (the root's, or the Goal's own from `goal create --work-provider`).
       */
      work_provider: "sqlite" | "postgresql";
      last_activity: null | string;
      todos: Todo[];
      recovery: null | {
        recovery_id: string;
        backup_id: string;
        captured_at_end: null | string;
        achieved_profile: string;
        state: string;
        lost_or_unknown: string[];
      };
      superseded_by: SupersededBy;
    };
/**
 * null, or — when the run authority records that a recovery superseded this lifetime — the lifetime that replaced it and the root it continues in. No path: `root` is the name this daemon serves that root under (`?root=<name>`, a root one of its recoveries made), or null when it does not serve it.
 */
export type SupersededBy = null | {
  goal_instance_id: string;
  root_id: string;
  root: null | string;
  recovery_id: string;
  recorded_at: string;
};

export interface GoalItem {
  goal_id: string;
  goal_instance_id: string;
  title: string;
  lifecycle: "active" | "paused" | "retired";
  docs: {
    name: string;
    sha256: string;
    bytes: number;
  }[];
  lineage: null | {
    lineage_id: string;
    generation: number;
    supersedes: null | {
      goal_instance_id: string;
      recovery_id: string;
    };
  };
  counts: Counts;
  committed_transactions: number;
  handoff_mode: string;
  /**
   * Where the Goal's canonical work lives: its SQLite work.db in the root, or a PostgreSQL schema (the root's, or the Goal's own from `goal create --work-provider`).
   */
  work_provider: "sqlite" | "postgresql";
  last_activity: null | string;
  superseded_by: SupersededBy;
}
export interface Counts {
  open: number;
  done: number;
  blocked: number;
  deferred: number;
}
export interface Todo {
  todo_id: string;
  title: string;
  status: "open" | "done" | "blocked" | "deferred";
  note: string | null;
  todo_revision: number;
  lease_owner: string | null;
  lease_expires_at: null | string;
}
