/* Generated from docs/schemas/backup-workspace-ls.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * stdout of `loopx backup-state workspace ls <destination> --json`: what a verified recovery workspace holds, read through the owners' historical readers. Read only; grants no execution authority.
 */
export interface LoopxBackupStateWorkspaceLs {
  recovery_id: string;
  backup_id: string;
  operator_state: "restored_inert" | "audit_held";
  execution_authority_granted: false;
  goals: {
    /**
     * The Goal's alias: 1–64 of a–z 0–9 . _ -, starting with a letter or digit.
     */
    goal_id: string;
    /**
     * One lifetime of the Goal: `ginst_` + 32 lowercase hex, minted by `goal create`.
     */
    goal_instance_id: string;
    title: string;
    lifecycle: "active" | "paused" | "retired";
    work_readable: boolean;
    todos_by_status: Counts;
    committed_transactions: number;
  }[];
  runs_readable: boolean;
  runs: Run[];
  sessions: number;
  effects_by_outcome: Counts;
  findings: Finding[];
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
export interface Finding {
  code: string;
  severity: string;
  subject: string;
  next_action: string;
}
