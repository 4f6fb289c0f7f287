/**
 * A SIGKILL at every owner commit point of `loopx recover apply` (the short drill: one before and
 * one after the first live-owner write), and inside `loopx recover resolve` of a receiver hold —
 * between two effects of the reconciliation it runs again, before the receiver's fence moves, and
 * after the owner settled but before the journal knows (the short drill: the last) — each
 * followed by the same command again, which must converge: accepted only by owner readback in the
 * destination, never by what the coordinator says: one lineage imported, one adopted state, every
 * effect once under its original id and settled, nothing in the outbox, and nothing sent to the
 * receiver. Each case recovers the same verified workspace as its own synthetic user against a
 * receiver of its own, so the cases are independent; they run one at a time (their receivers
 * share the port the backup names).
 */
import { join } from 'node:path';
import { LAYOUT, effect as effectOwner, work as workOwner } from '../../owners/index.js';
import { drillStepFailed, expectOk } from './cli.js';
import { GOAL } from './definition.js';
import { whileReceiverDown, withOwnReceiver, type DrillContext } from './source.js';

export interface CrashCase {
  /** The command the crash ended: `recover apply`, or `recover resolve` of the hold a receiver down during the apply left. */
  readonly command: 'apply' | 'resolve';
  readonly point: string;
  /** The command died at the point (SIGKILL), as injected. */
  readonly killed: boolean;
  /** The state `recover status` showed between the crash and the retry. */
  readonly state_after_crash: string;
  readonly state_after_retry: string;
  /** Both writer fences established, and owner readback: one lineage, one adopted state, each effect once and settled, an empty outbox. */
  readonly owners_converged: boolean;
  readonly converged: boolean;
}

async function ownersConverged(destination: string): Promise<boolean> {
  const work = await workOwner.openGoalWork({ root: destination, goal_id: GOAL });
  let workOk: boolean;
  try {
    const history = await work.history(0, 10);
    workOk =
      (await work.lineage()).length === 1 &&
      history.transactions.filter((t) => t.receipt.operation === 'adopt_recovered_state').length === 1;
  } finally {
    work.close();
  }
  const effects = effectOwner.openSqliteEffectJournal(join(destination, LAYOUT.effectsDb));
  try {
    const list = await effects.list({ goal_id: GOAL });
    const unique = new Set(list.map((e) => e.operation_id)).size === list.length;
    return workOk && unique && list.every((e) => e.outcome === 'committed') && (await effects.outbox()).length === 0;
  } finally {
    effects.close();
  }
}

/** `args` as `user`, SIGKILLed at `point`; then `recover status`; then `args` again, which must converge. */
async function crashAndRetry(
  ctx: DrillContext,
  user: string,
  destination: string,
  command: CrashCase['command'],
  point: string,
  args: readonly string[],
): Promise<CrashCase> {
  const crashed = await ctx.cli.run(user, args, { fault: point });
  const mid = expectOk(await ctx.cli.run(user, ['recover', 'status', '--destination', destination]));
  const retried = await ctx.cli.run(user, args);
  const after = retried.status === 0 ? (retried.doc.state as string) : (retried.code ?? `exit_${retried.status}`);
  const fenced =
    retried.status === 0 &&
    retried.doc.fences?.source_established === true &&
    retried.doc.fences?.destination_established === true;
  const owners = after === 'complete' && fenced && (await ownersConverged(destination));
  const killed = crashed.signal === 'SIGKILL';
  return {
    command,
    point,
    killed,
    state_after_crash: mid.state as string,
    state_after_retry: after,
    owners_converged: owners,
    converged: killed && owners,
  };
}

/** Plan into a fresh destination as a user of its own; its user, destination and apply arguments. */
async function planned(ctx: DrillContext, workspace: string, name: string) {
  const user = ctx.user(name);
  const destination = join(ctx.dir, name);
  const plan = expectOk(
    await ctx.cli.run(user, ['recover', 'plan', '--from', workspace, '--goal', GOAL, '--destination', destination]),
  );
  return {
    user,
    destination,
    apply: ['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest as string],
  };
}

async function applyCrash(ctx: DrillContext, workspace: string, point: string, index: number): Promise<CrashCase> {
  const p = await planned(ctx, workspace, `crash-${index}`);
  return crashAndRetry(ctx, p.user, p.destination, 'apply', point, p.apply);
}

/** The apply runs while the receiver is down and ends held on it; with the receiver back, its resolve crashes at `point`. */
async function resolveCrash(ctx: DrillContext, workspace: string, point: string, index: number): Promise<CrashCase> {
  const p = await planned(ctx, workspace, `crash-resolve-${index}`);
  const held = await whileReceiverDown(ctx, async () => expectOk(await ctx.cli.run(p.user, p.apply)));
  const hold = (held.holds as { hold_id: string }[]).find((h) => h.hold_id.startsWith('receiver:'));
  if (hold === undefined)
    throw drillStepFailed(
      'recover apply with the receiver down',
      `it ended ${held.state as string} without a receiver hold`,
    );
  return crashAndRetry(ctx, p.user, p.destination, 'resolve', point, [
    'recover',
    'resolve',
    '--destination',
    p.destination,
    '--hold',
    hold.hold_id,
  ]);
}

/** Every point in turn, each against a receiver of its own; no receiver may see an attempt from any of them. */
export async function crashEveryCommitPoint(
  ctx: DrillContext,
  workspace: string,
  points: { readonly apply: readonly string[]; readonly resolve: readonly string[] },
): Promise<{ cases: CrashCase[]; deliveries_sent: number }> {
  ctx.progress(
    `fault injection: a crash at ${points.apply.length} owner commit points of the apply and ${points.resolve.length} of the resolve, each retried`,
  );
  const cases: CrashCase[] = [];
  let sent = 0;
  const runs: [string, () => Promise<CrashCase>][] = [
    ...points.apply.map((point, i): [string, () => Promise<CrashCase>] => [
      `crash-${i}`,
      () => applyCrash(ctx, workspace, point, i),
    ]),
    ...points.resolve.map((point, i): [string, () => Promise<CrashCase>] => [
      `crash-resolve-${i}`,
      () => resolveCrash(ctx, workspace, point, i),
    ]),
  ];
  for (const [name, run] of runs) {
    cases.push(
      await withOwnReceiver(ctx, name, async () => {
        const before = ctx.sink.attempts().attempts.length;
        const c = await run();
        sent += ctx.sink.attempts().attempts.length - before;
        return c;
      }),
    );
  }
  return { cases, deliveries_sent: sent };
}
