/* Generated from docs/schemas/daemon-goal-activity.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * GET /api/goals/:id/activity: A Goal's sessions, the runs bound to them, the effects it made with their outcomes, and its holds — each with the owner that holds it and its one next action. Public-safe: labels, ids, outcomes and times; never an effect's intent or receipt (a delivery's `delivery_result` is read from its receipt, not the receipt itself).
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
    /**
     * What the receiver did with a committed webhook delivery, read from the effect's receipt: `stored` (it answered `replayed: false`), `replayed` (`replayed: true`: it already held the idempotency key and stored nothing again) or `not_sent` (nothing was sent: the effect owner already held the logical operation committed). null: not a webhook delivery, not committed, or not known (reconciled, settled by the operator, adopted in a recovery, or the receiver said neither).
     */
    delivery_result: "stored" | "replayed" | "not_sent" | null;
    /**
     * The operation id of the delivery that delivered a `not_sent` one; null otherwise.
     */
    duplicate_of: string | null;
  }[];
  holds: {
    subject: string;
    owner: "effect" | "engine";
    reason: string;
    next_action: string;
    run_id: string | null;
  }[];
}
