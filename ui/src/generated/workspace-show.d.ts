/* Generated from docs/schemas/backup-workspace-show.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * stdout of `loopx backup-state workspace show <destination> --goal <goal_id> --json`: one Goal of a verified recovery workspace with its Todos, committed history, sessions, the runs bound to them and its effects. Read only; grants no execution authority.
 */
export interface LoopxBackupStateWorkspaceShow {
  recovery_id: string;
  execution_authority_granted: false;
  goal: {
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
    docs: {
      name: string;
      sha256: string;
      bytes: number;
    }[];
  };
  work: {
    readable: boolean;
    store_identity: string | null;
    head_cursor: number | null;
    committed_transactions: number;
    handoff_mode: string | null;
  };
  todos: {
    todo_id: string;
    title: string;
    status: "open" | "done" | "blocked" | "deferred";
    priority: number;
    note: string | null;
    todo_revision: number;
  }[];
  sessions: {
    session_id: string;
    run_id: string | null;
    status: string;
    session_generation: number;
    execution_generation: number;
  }[];
  runs: Run[];
  effects: {
    operation_id: string;
    kind: string;
    target: string;
    outcome: "committed" | "absent" | "unknown" | "rejected" | "superseded" | "pending";
    hold: string | null;
    attempt: number;
  }[];
  findings: Finding[];
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
