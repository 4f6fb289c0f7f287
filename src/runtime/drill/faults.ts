/**
 * A SIGKILL at every owner commit point of `loopx recover apply` (the short drill: one before and
 * one after the first live-owner write), each followed by a retry of the same apply that must
 * converge — accepted only by owner readback in the destination, never by what the coordinator
 * says: one lineage imported, one adopted state, every effect once under its original id and
 * settled, nothing in the outbox, and nothing sent to the receiver. Each case recovers the same
 * verified workspace as its own synthetic user against a receiver of its own, so the cases are
 * independent; they run one at a time (their receivers share the port the backup names).
 */
import { join } from 'node:path';
import { LAYOUT, effect as effectOwner, work as workOwner } from '../../owners/index.js';
import { expectOk } from './cli.js';
import { GOAL } from './definition.js';
import { withOwnReceiver, type DrillContext } from './source.js';

export interface CrashCase {
  readonly point: string;
  /** The apply died at the point (SIGKILL), as injected. */
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
    workOk = (await work.lineage()).length === 1 && history.transactions.filter((t) => t.receipt.operation === 'adopt_recovered_state').length === 1;
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

async function crashAndRetry(ctx: DrillContext, workspace: string, point: string, index: number): Promise<CrashCase> {
  const user = ctx.user(`crash-${index}`);
  const destination = join(ctx.dir, `crash-${index}`);
  const plan = expectOk(await ctx.cli.run(user, ['recover', 'plan', '--from', workspace, '--goal', GOAL, '--destination', destination]));
  const apply = ['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest as string];
  const crashed = await ctx.cli.run(user, apply, { fault: point });
  const mid = expectOk(await ctx.cli.run(user, ['recover', 'status', '--destination', destination]));
  const retried = await ctx.cli.run(user, apply);
  const after = retried.status === 0 ? (retried.doc.state as string) : (retried.code ?? `exit_${retried.status}`);
  const fenced = retried.status === 0 && retried.doc.fences?.source_established === true && retried.doc.fences?.destination_established === true;
  const owners = after === 'complete' && fenced && (await ownersConverged(destination));
  const killed = crashed.signal === 'SIGKILL';
  return { point, killed, state_after_crash: mid.state as string, state_after_retry: after, owners_converged: owners, converged: killed && owners };
}

/** Every point in turn, each against a receiver of its own; no receiver may see an attempt from any of them. */
export async function crashEveryCommitPoint(ctx: DrillContext, workspace: string, points: readonly string[]): Promise<{ cases: CrashCase[]; deliveries_sent: number }> {
  ctx.progress(`fault injection: a crash at ${points.length} owner commit points of the apply, each retried`);
  const cases: CrashCase[] = [];
  let sent = 0;
  for (const [i, point] of points.entries()) {
    cases.push(
      await withOwnReceiver(ctx, `crash-${i}`, async () => {
        const before = ctx.sink.attempts().attempts.length;
        const c = await crashAndRetry(ctx, workspace, point, i);
        sent += ctx.sink.attempts().attempts.length - before;
        return c;
      }),
    );
  }
  return { cases, deliveries_sent: sent };
}
