/* Generated from docs/schemas/daemon-goal-activity.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * GET /api/goals/:id/activity: A Goal's sessions, the runs bound to them, the effects it made with their outcomes, and its holds — each with the owner that holds it and its one next action. Public-safe: labels, ids, outcomes and times; never an effect's intent or receipt.
 */
export interface DaemonGoalActivity {
  sessions: {
    session_id: string;
    status: "active" | "retired";
    session_mode: string;
    run_id: string | null;
    created_at: string;
    updated_at: string;
  }[];
  runs: {
    run_id: string;
    session_id: string;
    status: null | ("active" | "suspended" | "completed" | "failed" | "cancelled");
    completed_turns: number | null;
    waiting_for: null | "interaction" | "resolution";
    failure: string | null;
  }[];
  effects: {
    operation_id: string;
    kind: string;
    target: string;
    outcome: string;
    attempt: number;
    hold: string | null;
    created_at: string;
    settled_at: null | string;
    run_id: string | null;
    call_id: string | null;
  }[];
  holds: {
    subject: string;
    owner: "effect" | "engine";
    reason: string;
    next_action: string;
    run_id: string | null;
  }[];
}
