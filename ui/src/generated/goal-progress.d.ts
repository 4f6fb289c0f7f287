/* Generated from docs/schemas/daemon-goal-progress.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * GET /api/goals/:id/progress: A Goal's progress over its whole committed history: Todo counts by status after committed transactions (at most 120 points, the first and last always among them), and each Todo's last receipt.
 */
export interface DaemonGoalProgress {
  head: number;
  /**
   * @maxItems 122
   */
  points: {
    cursor: number;
    at: string;
    counts: Counts;
  }[];
  last_receipts: {
    [k: string]: {
      cursor: number;
      operation: string;
      committed_at: string;
    };
  };
}
export interface Counts {
  open: number;
  done: number;
  blocked: number;
  deferred: number;
}
