/* Generated from docs/schemas/daemon-goal-history.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * GET /api/goals/:id/history: One page of a Goal's committed history, ascending by cursor; without `after`, the newest page. `older` and `newer` are the neighbouring pages' `after`, or null at either end.
 */
export interface DaemonGoalHistory {
  head: number;
  after: number;
  older: number | null;
  newer: number | null;
  /**
   * @maxItems 200
   */
  transactions: {
    cursor: number;
    committed_at: string;
    operation: string;
    operation_id: string;
    todo_id: string | null;
    todo_title: string | null;
    todo_status: string | null;
    /**
     * Only for a transaction that changed several Todos as one operation (`update_todos`, `loopx todo update t1 t2 …`): each of them, in the order the operation named them, with its status after it; `todo_id`, `todo_title` and `todo_status` are then null.
     *
     * @minItems 1
     */
    todos?: {
      todo_id: string;
      todo_title: string;
      todo_status: string;
    }[];
  }[];
}
