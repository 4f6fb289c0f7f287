/**
 * The drill's main journey, as an operator runs it after losing the source: verify the backup,
 * plan, confirm, resolve any hold, then continue the unfinished Todo in the new root — timed per
 * phase to the first admitted turn (the RTO) — and accept the result independently: the owners
 * read back in the new root (which of the source's work transactions it holds: the RPO), the
 * receiver's ledger of every attempt. The human actions are the commands the operator issued to
 * recover, as issued (the continuation is the Goal's ordinary work after it; the drill's own
 * readbacks are no one's action). Then the old source comes back and each of its writers tries,
 * and must be refused.
 */
import { join } from 'node:path';
import type { Doc, Operator } from './cli.js';
import { drillStepFailed, expectOk } from './cli.js';
import { defectInjected, dropImportedTransaction } from './defects.js';
import { GOAL } from './definition.js';
import { heldIn } from './recovery-point.js';
import type { DrillContext, DrillSource } from './source.js';

export interface Phase {
  readonly phase: 'verify' | 'plan' | 'apply' | 'resolve' | 'first_turn';
  readonly elapsed_ms: number;
}

export interface JourneyOutcome {
  readonly workspace: string;
  readonly destination: string;
  readonly state: string;
  readonly phases: readonly Phase[];
  /** From "backup and manifest supplied" to the first admitted turn in the new root. */
  readonly rto_ms: number;
  readonly human_actions: readonly string[];
  readonly holds: readonly { hold_id: string; owner: string; code: string; continuation: string; resolved: boolean }[];
  readonly preview_lost_or_unknown: readonly string[];
  readonly recovered: {
    readonly new_goal_instance_id: string;
    readonly imported_transactions: number;
    readonly todos_at_adoption: Readonly<Record<string, number>>;
    readonly effects: Readonly<Record<string, number>>;
    readonly committed_after_capture: number;
    /** The cursors of the source's work transactions the new root holds, by owner readback. */
    readonly source_transactions_held: readonly number[];
  };
  readonly lineage_id: string;
  readonly fence: number;
  readonly continued: { readonly run_status: string; readonly todo_done_in_new_lifetime: boolean };
}

const receiptOf = (status: Doc, action: string): Doc =>
  (status.receipts as { action: string; readback: Doc }[]).find((r) => r.action === action)?.readback ?? {};

/** The first admitted turn of `runId` in `root`: its TurnStarted event's time. */
export async function firstTurnAt(ctx: DrillContext, user: string, root: string, runId: string): Promise<number> {
  const events = await ctx.cli.run(user, ['run', 'events', runId, '--root', root]);
  if (events.status !== 0) throw drillStepFailed('run events', events.code ?? `exit ${events.status}`);
  for (const line of events.stdout.split('\n')) {
    if (line.trim() === '') continue;
    const event = JSON.parse(line) as { type: string; at: string };
    if (event.type === 'TurnStarted') return Date.parse(event.at);
  }
  throw drillStepFailed('run events', 'the continuation has no admitted turn');
}

/** Runs one phase of the journey, recording its elapsed time in `phases` whether it succeeds or not. */
type PhaseTimer = <T>(phase: Phase['phase'], fn: () => Promise<T>) => Promise<T>;

/** A timer that appends each phase it runs, with its elapsed time, to `phases`. */
const phaseTimer =
  (phases: Phase[]): PhaseTimer =>
  async (phase, fn) => {
    const t = performance.now();
    try {
      return await fn();
    } finally {
      phases.push({ phase, elapsed_ms: Math.round(performance.now() - t) });
    }
  };

/**
 * The holds the apply reported, each asked again through `recover resolve` (one timed phase, only
 * when there is one); the last status a resolve answered, and which holds it no longer shows.
 */
async function resolveHolds(
  operator: Operator,
  destination: string,
  applied: Doc,
  timed: PhaseTimer,
): Promise<{ status: Doc; holds: JourneyOutcome['holds'] }> {
  let status = applied;
  const holds = (status.holds as { hold_id: string; owner: string; code: string; continuation: string }[]).map((h) => ({
    ...h,
    resolved: false,
  }));
  if (holds.length > 0) {
    status = await timed('resolve', async () => {
      let last = status;
      for (const h of holds) {
        const r = await operator.run(['recover', 'resolve', '--destination', destination, '--hold', h.hold_id]);
        if (r.status === 0) last = r.doc;
      }
      return last;
    });
    const open = new Set((status.holds as { hold_id: string }[]).map((h) => h.hold_id));
    for (const h of holds) h.resolved = !open.has(h.hold_id);
  }
  return { status, holds };
}

/** What the new root holds, by the owners' receipts in the final status and the source transactions read back there. */
function recoveredOf(status: Doc, held: readonly number[]): JourneyOutcome['recovered'] {
  const goal = receiptOf(status, 'goal:rebind');
  const work = receiptOf(status, 'work:import_inert');
  const adopted = receiptOf(status, 'work:rebind');
  const effects = receiptOf(status, 'effect:reconcile');
  return {
    new_goal_instance_id: goal.goal_instance_id as string,
    imported_transactions: work.imported_transactions as number,
    todos_at_adoption: adopted.todos_by_status as Record<string, number>,
    effects: effects.by_outcome as Record<string, number>,
    committed_after_capture: (effects.committed_after_capture as unknown[]).length,
    source_transactions_held: held,
  };
}

/** verify → plan → apply (→ resolve) → continue, as the operator. */
export async function recoverAndContinue(ctx: DrillContext, source: DrillSource): Promise<JourneyOutcome> {
  const user = source.user;
  const operator = ctx.cli.operator(user);
  const workspace = join(ctx.dir, 'workspace');
  const destination = join(ctx.dir, 'recovered');
  const phases: Phase[] = [];
  const timed = phaseTimer(phases);
  const supplied = Date.now();
  ctx.progress('recovery: verify the backup into a workspace');
  await timed('verify', async () =>
    expectOk(
      await operator.run([
        'backup-state',
        'verify',
        '--archive',
        source.archive,
        '--manifest',
        source.manifest,
        '--destination',
        workspace,
        '--execute',
      ]),
    ),
  );
  ctx.progress('recovery: plan (preview) into a new root');
  const plan = await timed('plan', async () =>
    expectOk(
      await operator.run(['recover', 'plan', '--from', workspace, '--goal', GOAL, '--destination', destination]),
    ),
  );
  ctx.progress('recovery: confirm and apply');
  const applied = await timed('apply', async () =>
    expectOk(
      await operator.run(['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest as string]),
    ),
  );
  const { status, holds } = await resolveHolds(operator, destination, applied, timed);
  if (status.state !== 'complete') throw drillStepFailed('recover apply', `the recovery ended ${status.state}`);
  if (defectInjected('drop-captured-transaction')) dropImportedTransaction(destination, source.capture.work_cursor);
  if (defectInjected('extra-operator-command'))
    expectOk(await operator.run(['recover', 'status', '--destination', destination]));
  const humanActions = [...operator.issued];
  ctx.progress('recovery: continue the unfinished Todo in the new root');
  const run = await timed('first_turn', async () =>
    expectOk(
      await ctx.cli.run(user, ['work', 'run', '--goal', GOAL, '--agent', ctx.agents.cont, '--root', destination]),
    ),
  );
  const firstTurn = await firstTurnAt(ctx, user, destination, run.run_id as string);
  const shown = expectOk(await ctx.cli.run(user, ['goal', 'show', GOAL, '--root', destination]));
  const todos = expectOk(await ctx.cli.run(user, ['todo', 'list', '--goal', GOAL, '--root', destination])).todos as {
    todo_id: string;
    status: string;
  }[];
  const goal = receiptOf(status, 'goal:rebind');
  const held = await heldIn(destination, source.history_at_loss);
  return {
    workspace,
    destination,
    state: status.state as string,
    phases,
    rto_ms: Math.max(0, firstTurn - supplied),
    human_actions: humanActions,
    holds,
    preview_lost_or_unknown: plan.preview.lost_or_unknown as string[],
    recovered: recoveredOf(status, held),
    lineage_id: goal.lineage_id as string,
    fence: receiptOf(status, 'host:supersede').fence as number,
    continued: {
      run_status: run.status as string,
      todo_done_in_new_lifetime:
        shown.goal_instance_id === goal.goal_instance_id &&
        todos.some((t) => t.todo_id === 't3' && t.status === 'done'),
    },
  };
}
