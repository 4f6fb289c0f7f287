/** The daemon's Goal answers as the Goal pages read them, generated from their schemas (`npm run schemas:types`). */
import type { DaemonGoal, GoalItem as GeneratedGoalItem } from './generated/goal';
import type { DaemonGoalActivity } from './generated/goal-activity';
import type { DaemonGoalHistory } from './generated/goal-history';
import type { DaemonGoalProgress } from './generated/goal-progress';

export const STATUSES = ['open', 'done', 'blocked', 'deferred'] as const;
export type TodoStatus = (typeof STATUSES)[number];

/** One Goal of `GET /api/goals` (daemon-goal). */
export type GoalItem = GeneratedGoalItem;
/** `GET /api/goals/:id`: the Goal with its Todos and the recovery that minted its lifetime (daemon-goal). */
export type GoalDetailDoc = Extract<DaemonGoal, { todos: unknown }>;
export type TodoItem = GoalDetailDoc['todos'][number];
/** Where a recovery took a superseded lifetime: the new lifetime and the root it continues in (`root`: the name the daemon serves it under, or null). */
export type SupersededBy = NonNullable<GoalDetailDoc['superseded_by']>;

/** Why a superseded lifetime's controls are disabled (null: it is live). */
export const supersededWhy = (goal: Pick<GoalDetailDoc, 'superseded_by'>): string | null =>
  goal.superseded_by
    ? `A recovery superseded this lifetime: it takes no new work here. Continue the Goal in ${goal.superseded_by.root ?? 'the root it was recovered into'}.`
    : null;
/** `GET /api/goals/:id/activity` (daemon-goal-activity). */
export type GoalActivityDoc = DaemonGoalActivity;
/** `GET /api/goals/:id/history` (daemon-goal-history). */
export type HistoryPageDoc = DaemonGoalHistory;
/** `GET /api/goals/:id/progress` (daemon-goal-progress). */
export type ProgressDoc = DaemonGoalProgress;

/** A time as the operator reads it: date and time in their locale. */
export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');

/** Todo counts in one line: `1 open, 2 done, 0 blocked, 0 deferred`. */
export const countsText = (counts: Readonly<Record<TodoStatus, number>>): string =>
  STATUSES.map((s) => `${counts[s]} ${s}`).join(', ');
