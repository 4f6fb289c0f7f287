/**
 * What a Goal's page shows beside its Todos, read through the owners and the engine (never their
 * files): its sessions and the runs bound to them, the effects it made with their outcomes, its
 * holds — each with the owner that holds it and its one next action — its committed history in
 * pages, and its progress over time (Todo counts after each committed transaction, thinned to a
 * bounded number of points) with each Todo's last receipt. Read only: nothing here writes.
 */
import { callOfOperation, deliveryOfEffect, isDelivery, type Engine, type RunView } from '../engine/index.js';
import { effect as effectOwner, goal as goalOwner, work as workOwner, type RootOwners } from '../owners/index.js';
import { withRootEngine, withRootOwners, type RootAccess } from './root.js';

export interface GoalRunItem {
  readonly run_id: string;
  readonly session_id: string;
  /** null: the run was bound but never started (or its record is gone). */
  readonly status: RunView['status'] | null;
  readonly completed_turns: number | null;
  readonly waiting_for: 'interaction' | 'resolution' | null;
  readonly failure: string | null;
}

export interface GoalEffectItem {
  readonly operation_id: string;
  readonly kind: string;
  readonly target: string;
  readonly outcome: effectOwner.EffectRecord['outcome'];
  readonly attempt: number;
  readonly hold: string | null;
  readonly created_at: string;
  readonly settled_at: string | null;
  /** The run and call that made it (null: not made by a run call, e.g. adopted in a recovery). */
  readonly run_id: string | null;
  readonly call_id: string | null;
  /** What the receiver did with a committed delivery, from its receipt (see `deliveryOf`); null: not a delivery, not committed, or not known. */
  readonly delivery_result: 'stored' | 'replayed' | 'not_sent' | null;
  /** The operation that delivered a `not_sent` delivery; otherwise null. */
  readonly duplicate_of: string | null;
}

export interface GoalHold {
  /** What is held: an effect's operation id, or a run id. */
  readonly subject: string;
  readonly owner: 'effect' | 'engine';
  readonly reason: string;
  readonly next_action: string;
  /** The run whose page settles it, when there is one. */
  readonly run_id: string | null;
}

export interface GoalActivity {
  readonly sessions: readonly {
    session_id: string;
    status: string;
    session_mode: string;
    run_id: string | null;
    created_at: string;
    updated_at: string;
  }[];
  readonly runs: readonly GoalRunItem[];
  readonly effects: readonly GoalEffectItem[];
  readonly holds: readonly GoalHold[];
}

const runItem = (sessionId: string, runId: string, v: RunView | undefined): GoalRunItem => ({
  run_id: runId,
  session_id: sessionId,
  status: v?.status ?? null,
  completed_turns: v?.completed_turns ?? null,
  waiting_for: v?.waiting_for?.kind ?? null,
  failure: v?.failure ? String((v.failure as { code?: unknown }).code ?? 'failed') : null,
});

async function showOrUndefined(engine: Engine | undefined, runId: string): Promise<RunView | undefined> {
  if (!engine) return undefined;
  try {
    return await engine.show(runId);
  } catch {
    return undefined; // a run bound to a session but never started
  }
}

/**
 * What a committed webhook delivery's receiver did with it, read from the effect's receipt exactly
 * as the engine reads it for the run's `ToolResulted` (src/engine/deliveries.ts, which the engine's
 * public API does not carry): `stored` / `replayed` from the receiver's `replayed: false|true`,
 * `not_sent` from `{sent: false, duplicate_of}`. Any other receipt (a reconciliation's, an
 * operator's, a digest) says nothing: null, never a guess.
 */
/** What the receiver did with a committed delivery (the engine reads receipts one way for events and pages alike). */
const deliveryOf = (e: effectOwner.EffectRecord): Pick<GoalEffectItem, 'delivery_result' | 'duplicate_of'> =>
  isDelivery(e) ? deliveryOfEffect(e) : { delivery_result: null, duplicate_of: null };

/** The holds of a Goal: uncertain effects (the effect owner's) and runs waiting for the operator (the engine's). */
function holdsOf(
  effects: readonly GoalEffectItem[],
  uncertain: ReadonlySet<string>,
  runs: readonly (GoalRunItem & { view?: RunView })[],
): GoalHold[] {
  const holds: GoalHold[] = [];
  const here = new Set(runs.map((r) => r.run_id));
  // A run of this root says itself which of its calls wait for a resolution (a call in flight under a live driver does not).
  const waiting = new Set(
    runs.flatMap((r) => (r.view?.waiting_for?.kind === 'resolution' ? r.view.waiting_for.call_ids : [])),
  );
  for (const e of effects) {
    const held = e.run_id !== null && here.has(e.run_id) ? waiting.has(e.call_id!) : uncertain.has(e.operation_id);
    if (!held) continue;
    // A run of this root settles its own call; an effect a recovery adopted is settled through that recovery's holds.
    const run = e.run_id !== null && here.has(e.run_id) ? e.run_id : null;
    holds.push({
      subject: e.operation_id,
      owner: 'effect',
      reason: e.hold ?? (e.outcome === 'unknown' ? 'outcome_unknown' : 'dispatched_not_settled'),
      next_action: run
        ? `settle it once ${e.target} says whether it took effect: loopx run resolve ${run} ${e.call_id} (--committed RESULT | --absent | --abandon)`
        : `settle it through the recovery that adopted it: loopx recover status --destination ROOT`,
      run_id: run,
    });
  }
  for (const r of runs) {
    const w = r.view?.waiting_for;
    if (w?.kind === 'interaction') {
      holds.push({
        subject: r.run_id,
        owner: 'engine',
        reason: 'waiting_for_answer',
        next_action: `answer it: loopx run answer ${r.run_id} ${w.interaction_id} "<your answer>"`,
        run_id: r.run_id,
      });
    }
  }
  return holds;
}

/** A Goal's sessions, runs, effects and holds (`GET /api/goals/:id/activity`). */
export async function goalActivity(access: RootAccess, goalId: string): Promise<GoalActivity> {
  const { sessions, effects } = await withRootOwners(access.root, async (owners: RootOwners) => {
    if (!owners.goals.get(goalId)) throw goalOwner.goalNotFound(goalId);
    return {
      sessions: await owners.sessions.listSessions(goalId),
      effects: await owners.effects.list({ goal_id: goalId }),
    };
  });
  const bound = sessions.filter((s) => s.run_id !== null);
  const views =
    bound.length === 0
      ? []
      : await withRootEngine(access, (engine) => Promise.all(bound.map((s) => showOrUndefined(engine, s.run_id!))), {
          readOnly: true,
        });
  const runs = bound.map((s, i) => ({ ...runItem(s.session_id, s.run_id!, views[i]), view: views[i] }));
  const effectItems: GoalEffectItem[] = effects.map((e) => {
    const call = callOfOperation(e.operation_id);
    return {
      operation_id: e.operation_id,
      kind: e.kind,
      target: e.target,
      outcome: e.outcome,
      attempt: e.attempt,
      hold: e.hold,
      created_at: e.created_at,
      settled_at: e.settled_at,
      run_id: call?.run_id ?? null,
      call_id: call?.call_id ?? null,
      ...deliveryOf(e),
    };
  });
  return {
    sessions: sessions.map((s) => ({
      session_id: s.session_id,
      status: s.status,
      session_mode: s.session_mode,
      run_id: s.run_id,
      created_at: s.created_at,
      updated_at: s.updated_at,
    })),
    runs: runs.map(({ view: _view, ...r }) => r),
    effects: effectItems,
    holds: holdsOf(effectItems, new Set(effects.filter(effectOwner.isUncertain).map((e) => e.operation_id)), runs),
  };
}

export interface HistoryItem {
  readonly cursor: number;
  readonly committed_at: string;
  readonly operation: string;
  readonly operation_id: string;
  readonly todo_id: string | null;
  /** The Todo's title and status after the transaction, when it changed one. */
  readonly todo_title: string | null;
  readonly todo_status: string | null;
  /** A batch (`update_todos`): each Todo it changed, in the order it named them (the three fields above are then null). */
  readonly todos?: ReadonlyArray<{
    readonly todo_id: string;
    readonly todo_title: string;
    readonly todo_status: string;
  }>;
}

export interface HistoryPage {
  readonly head: number;
  /** The page holds cursors after..after+limit (ascending); `older`/`newer` are the neighbours' `after`, or null at either end. */
  readonly after: number;
  readonly transactions: readonly HistoryItem[];
  readonly older: number | null;
  readonly newer: number | null;
}

export const HISTORY_PAGE_MAX = 200;

/** One page of a Goal's committed history; without `after`, the newest page. */
export async function goalHistory(
  root: string,
  goalId: string,
  options: { after?: number; limit: number },
): Promise<HistoryPage> {
  return withGoalWorkRead(root, goalId, async (work) => {
    const head = await work.transactionCount();
    const limit = Math.min(Math.max(1, options.limit), HISTORY_PAGE_MAX);
    const after = Math.min(options.after ?? Math.max(0, head - limit), head);
    const page = await work.history(after, limit);
    return {
      head,
      after,
      transactions: page.transactions.map((t) => ({
        cursor: t.cursor,
        committed_at: t.receipt.committed_at,
        operation: t.receipt.operation,
        operation_id: t.operation_id,
        todo_id: t.receipt.todo_id,
        todo_title: t.receipt.todo?.title ?? null,
        todo_status: t.receipt.todo?.status ?? null,
        ...(t.receipt.todos
          ? {
              todos: t.receipt.todos.map((td) => ({
                todo_id: td.todo_id,
                todo_title: td.title,
                todo_status: td.status,
              })),
            }
          : {}),
      })),
      older: after > 0 ? Math.max(0, after - limit) : null,
      newer: after + limit < head ? after + limit : null,
    };
  });
}

export interface ProgressPoint {
  readonly cursor: number;
  readonly at: string;
  readonly counts: Readonly<Record<workOwner.TodoStatus, number>>;
}

export interface GoalProgress {
  readonly head: number;
  /** At most PROGRESS_POINTS points, the first and last transactions always among them. */
  readonly points: readonly ProgressPoint[];
  /** Each Todo's last committed receipt. */
  readonly last_receipts: Readonly<Record<string, { cursor: number; operation: string; committed_at: string }>>;
}

export const PROGRESS_POINTS = 120;

/** A Goal's progress over its whole committed history (streamed in pages, never truncated), thinned for a chart. */
export async function goalProgress(root: string, goalId: string): Promise<GoalProgress> {
  return withGoalWorkRead(root, goalId, async (work) => {
    const head = await work.transactionCount();
    const stride = Math.max(1, Math.ceil(head / PROGRESS_POINTS));
    const status = new Map<string, workOwner.TodoStatus>();
    const last: Record<string, { cursor: number; operation: string; committed_at: string }> = {};
    const points: ProgressPoint[] = [];
    for await (const t of work.iterateHistory(0, 500)) {
      for (const ev of t.events) {
        if (ev.type === 'todo_added' || ev.type === 'todo_changed') status.set(ev.todo.todo_id, ev.todo.status);
        else if (ev.type === 'state_adopted') for (const td of ev.todos) status.set(td.todo_id, td.status);
      }
      const receipted =
        t.receipt.todos?.map((td) => td.todo_id) ?? (t.receipt.todo_id === null ? [] : [t.receipt.todo_id]);
      for (const id of receipted)
        last[id] = { cursor: t.cursor, operation: t.receipt.operation, committed_at: t.receipt.committed_at };
      if (t.cursor === 1 || t.cursor === head || t.cursor % stride === 0) {
        const counts = { open: 0, done: 0, blocked: 0, deferred: 0 };
        for (const s of status.values()) counts[s] += 1;
        points.push({ cursor: t.cursor, at: t.receipt.committed_at, counts });
      }
    }
    return { head, points, last_receipts: last };
  });
}

async function withGoalWorkRead<T>(
  root: string,
  goalId: string,
  fn: (work: workOwner.WorkOwner) => Promise<T>,
): Promise<T> {
  return withRootOwners(root, async (owners) => {
    if (!owners.goals.get(goalId)) throw goalOwner.goalNotFound(goalId);
    const work = await workOwner.openGoalWork({ root, goal_id: goalId });
    try {
      return await fn(work);
    } finally {
      work.close();
    }
  });
}
