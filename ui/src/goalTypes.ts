/** The daemon's Goal answers as the Goal pages read them (GET /api/goals, /api/goals/:id and its activity, history and progress). */
export const STATUSES = ['open', 'done', 'blocked', 'deferred'] as const;
export type TodoStatus = (typeof STATUSES)[number];

export interface GoalItem {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly title: string;
  readonly lifecycle: string;
  readonly counts: Readonly<Record<string, number>>;
  readonly committed_transactions: number;
  readonly handoff_mode: string;
  readonly last_activity: string | null;
  readonly lineage: {
    readonly lineage_id: string;
    readonly generation: number;
    readonly supersedes: { readonly goal_instance_id: string; readonly recovery_id: string } | null;
  } | null;
}

export interface TodoItem {
  readonly todo_id: string;
  readonly title: string;
  readonly status: string;
  readonly note: string | null;
  readonly lease_owner: string | null;
  readonly lease_expires_at?: string | null;
}

export interface GoalDetailDoc extends GoalItem {
  readonly todos: readonly TodoItem[];
  /** The daemon's recovery that minted this lifetime (null: none of this daemon's). */
  readonly recovery: {
    readonly recovery_id: string;
    readonly backup_id: string;
    readonly captured_at_end: string | null;
    readonly achieved_profile: string;
    readonly state: string;
    readonly lost_or_unknown: readonly string[];
  } | null;
}

export interface GoalActivityDoc {
  readonly sessions: readonly { session_id: string; status: string; session_mode: string; run_id: string | null; created_at: string }[];
  readonly runs: readonly { run_id: string; session_id: string; status: string | null; completed_turns: number | null; waiting_for: string | null; failure: string | null }[];
  readonly effects: readonly {
    operation_id: string;
    kind: string;
    target: string;
    outcome: string;
    attempt: number;
    hold: string | null;
    created_at: string;
    settled_at: string | null;
    run_id: string | null;
    call_id: string | null;
  }[];
  readonly holds: readonly { subject: string; owner: string; reason: string; next_action: string; run_id: string | null }[];
}

export interface HistoryPageDoc {
  readonly head: number;
  readonly after: number;
  readonly older: number | null;
  readonly newer: number | null;
  readonly transactions: readonly {
    cursor: number;
    committed_at: string;
    operation: string;
    operation_id: string;
    todo_id: string | null;
    todo_title: string | null;
    todo_status: string | null;
  }[];
}

export interface ProgressDoc {
  readonly head: number;
  readonly points: readonly { cursor: number; at: string; counts: Readonly<Record<TodoStatus, number>> }[];
  readonly last_receipts: Readonly<Record<string, { cursor: number; operation: string; committed_at: string }>>;
}

/** A time as the operator reads it: date and time in their locale. */
export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');

/** Todo counts in one line: `1 open, 2 done, 0 blocked, 0 deferred`. */
export const countsText = (counts: Readonly<Record<string, number>>): string => STATUSES.map((s) => `${counts[s] ?? 0} ${s}`).join(', ');
