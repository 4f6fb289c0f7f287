/* Generated from docs/schemas/daemon-run.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * GET /api/runs/:id (and the `run` event of a live event stream): A run as the Capability Center's run page reads it: `loopx run show --json`, with each uncertain call's evidence — what the run and the effect owner hold about it, public-safe: labels, digests, counts and times, never the call's arguments, the effect's intent or a receipt.
 */
export interface DaemonRun {
  run_id: string;
  status: "active" | "suspended" | "completed" | "failed" | "cancelled";
  definition: {
    id: string;
    version: string;
  };
  completed_turns: number;
  turn_limit: number;
  last_sequence: number;
  /**
   * What an active run waits for before it can go on: an answer to its question, or the resolution of its uncertain calls; null otherwise.
   */
  waiting_for:
    | null
    | {
        kind: "interaction";
        interaction_id: string;
        prompt: string;
      }
    | {
        kind: "resolution";
        /**
         * @minItems 1
         */
        call_ids: string[];
        effects: UncertainCall[];
      };
  suspend_requested: boolean;
  /**
   * Why a failed run failed; null for every other status.
   */
  failure: null | {
    code: string;
    message: string;
    /**
     * What the operator can do about it (provider failures, budgets).
     */
    next_action?: string;
  };
  /**
   * Model tokens the run has used, as its providers reported them; `estimated` when any part was estimated (a provider that reports none, or the history of a run imported from a snapshot). Absent before the run's first model response.
   */
  usage?: {
    input_tokens: number;
    output_tokens: number;
    estimated: boolean;
  };
}
export interface UncertainCall {
  call_id: string;
  operation_id: string;
  /**
   * the effect owner's outcome (pending: dispatched, never settled), or null for a call recorded before the effect journal
   */
  outcome: "pending" | "unknown" | null;
  evidence: null | Evidence;
}
export interface Evidence {
  call_id: string;
  tool: string;
  turn: number;
  /**
   * the arguments the model sent, by the SHA-256 of their canonical JSON, their size and their top-level field names — never their values
   */
  arguments: {
    sha256: string;
    bytes: number;
    fields: string[];
  };
  /**
   * the effect owner's record of the call (null for a call recorded before the effect journal): what the receiver was asked, how often, when
   */
  effect: null | {
    kind: string;
    /**
     * a public-safe label of the receiver
     */
    target: string;
    intent_digest: string;
    /**
     * the key the receiver was asked under
     */
    idempotency_key: string;
    /**
     * dispatches under the original operation id
     */
    attempts: number;
    recorded_at: string;
    dispatched_at: string | null;
    /**
     * why reconciliation left it held (a code)
     */
    hold: string | null;
    reconcile_attempts: number;
    history: {
      event: "intent" | "dispatch" | "settle" | "hold" | "reissue";
      outcome: "pending" | "committed" | "absent" | "unknown" | "rejected" | "superseded";
      at: string;
      reason: string | null;
    }[];
  };
}
