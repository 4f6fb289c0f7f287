/**
 * What the recovery must refuse, each as its own synthetic user where the run authority matters:
 * a missing and a corrupt workspace component, a component of a newer store version, a digest
 * that is not the plan's, a plan whose destination changed, a second recovery of a lifetime
 * already recovered, and an interrupted adoption — abandoned while nothing live was touched,
 * finished by its printed next action once something was.
 */
import { appendFileSync, cpSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LAYOUT, work } from '../../owners/index.js';
import { expectOk, type CliOutcome } from './cli.js';
import { GOAL, INTERRUPT_AFTER_LIVE, INTERRUPT_BEFORE_LIVE } from './definition.js';
import { newSourceRoot, withOwnReceiver, type DrillContext, type DrillSource } from './source.js';

export interface DrillCase {
  readonly case: string;
  readonly expected: string;
  readonly observed: string;
  readonly met: boolean;
}

const observed = (o: CliOutcome): string =>
  o.status === 0
    ? ((o.doc?.state as string | undefined) ?? 'accepted')
    : (o.code ?? (o.signal ? `killed_${o.signal}` : `exit_${o.status}`));
const caseOf = (name: string, expected: string, o: CliOutcome | string): DrillCase => {
  const seen = typeof o === 'string' ? o : observed(o);
  return { case: name, expected, observed: seen, met: seen === expected };
};

/** The argv of the `loopx …` command in a next action, as printed ('…' quoting only). */
export function commandOf(nextAction: string): string[] {
  const at = nextAction.indexOf('loopx ');
  const words = nextAction.slice(at + 'loopx '.length).match(/'[^']*'|\S+/g) ?? [];
  return words.map((w) => (w.startsWith("'") ? w.slice(1, -1) : w));
}

/** A copy of the workspace with one member removed or altered. */
async function damagedWorkspace(
  ctx: DrillContext,
  user: string,
  workspace: string,
  how: 'missing' | 'corrupt',
): Promise<DrillCase> {
  const copy = join(ctx.dir, `workspace-${how}`);
  cpSync(workspace, copy, { recursive: true });
  const member = join(copy, 'workspace', 'runtime-root', LAYOUT.workDb(GOAL));
  if (how === 'missing') rmSync(member);
  else appendFileSync(member, Buffer.from([0]));
  const o = await ctx.cli.run(user, [
    'recover',
    'plan',
    '--from',
    copy,
    '--goal',
    GOAL,
    '--destination',
    join(ctx.dir, `refused-${how}`),
  ]);
  return caseOf(`${how} component in the workspace`, 'recover_workspace_changed', o);
}

/** A source whose Goal work store is of a newer version than this loopx reads: verified as unsupported, never adopted. */
async function newerStore(ctx: DrillContext): Promise<DrillCase> {
  const user = ctx.user('newer-version');
  const root = join(ctx.dir, 'source-newer');
  await newSourceRoot(ctx, root, user);
  // As a newer loopx would have left it: a schema version this one does not know.
  const changed = work.markWorkStoreNewer(root, GOAL);
  const out = join(ctx.dir, 'backups-newer');
  const b = expectOk(
    await ctx.cli.run(user, ['backup-state', '--execute', '--output-dir', out, '--backup-id', 'newer', '--root', root]),
  );
  const workspace = join(ctx.dir, 'workspace-newer');
  const v = expectOk(
    await ctx.cli.run(user, [
      'backup-state',
      'verify',
      '--archive',
      join(out, b.archive.name),
      '--manifest',
      join(out, b.manifest.name),
      '--destination',
      workspace,
      '--execute',
    ]),
  );
  // The backup producer cannot read a store of a version it does not know: the component is held, never guessed.
  const held =
    (v.findings as { code: string; owner: string }[]).find((f) => f.owner === changed.owner)?.code ?? 'not held';
  const o = await ctx.cli.run(user, [
    'recover',
    'plan',
    '--from',
    workspace,
    '--goal',
    GOAL,
    '--destination',
    join(ctx.dir, 'refused-newer'),
  ]);
  return caseOf(
    'work store of a newer version',
    'capture_component_unreadable, then recover_audit_not_eligible',
    `${held}, then ${observed(o)}`,
  );
}

/** Plan into a fresh destination as `user`; the apply arguments. */
async function planned(
  ctx: DrillContext,
  user: string,
  workspace: string,
  name: string,
): Promise<{ destination: string; apply: string[] }> {
  const destination = join(ctx.dir, name);
  const plan = expectOk(
    await ctx.cli.run(user, ['recover', 'plan', '--from', workspace, '--goal', GOAL, '--destination', destination]),
  );
  return {
    destination,
    apply: ['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest as string],
  };
}

async function interrupted(ctx: DrillContext, workspace: string): Promise<DrillCase[]> {
  const early = ctx.user('interrupted-early');
  const a = await planned(ctx, early, workspace, 'interrupted-early');
  await ctx.cli.run(early, a.apply, { fault: INTERRUPT_BEFORE_LIVE });
  const aborted = await ctx.cli.run(early, ['recover', 'abort', '--destination', a.destination]);
  const again = await ctx.cli.run(early, a.apply);
  const late = ctx.user('interrupted-late');
  const b = await planned(ctx, late, workspace, 'interrupted-late');
  await ctx.cli.run(late, b.apply, { fault: INTERRUPT_AFTER_LIVE });
  const earlyWriter = await ctx.cli.run(late, [
    'todo',
    'add',
    '--goal',
    GOAL,
    '--title',
    'too early',
    '--root',
    b.destination,
  ]);
  const refused = await ctx.cli.run(late, ['recover', 'abort', '--destination', b.destination]);
  const next = refused.doc?.error?.next_action as string | undefined;
  const finished = next === undefined ? undefined : await ctx.cli.run(late, commandOf(next));
  return [
    caseOf('adoption interrupted before any live change, then abort', 'abandoned', aborted),
    caseOf('apply of an abandoned recovery', 'recover_abandoned', again),
    caseOf('a writer in the half-adopted root', 'recover_adoption_incomplete', earlyWriter),
    caseOf('adoption interrupted after a live change, then abort', 'recover_abort_too_late', refused),
    caseOf('its next action, run as printed', 'complete', finished ?? 'no next action'),
  ];
}

export async function refusals(ctx: DrillContext, source: DrillSource, workspace: string): Promise<DrillCase[]> {
  ctx.progress('refusals: damaged workspace, newer store version, stale plan and identity, interrupted adoption');
  const user = ctx.user('refusals');
  const cases = [
    await damagedWorkspace(ctx, user, workspace, 'missing'),
    await damagedWorkspace(ctx, user, workspace, 'corrupt'),
    await newerStore(ctx),
  ];
  const wrong = await planned(ctx, user, workspace, 'refused-digest');
  cases.push(
    caseOf(
      'confirm with a digest that is not the plan’s',
      'recover_confirm_mismatch',
      await ctx.cli.run(user, [...wrong.apply.slice(0, -1), '0'.repeat(64)]),
    ),
  );
  writeFileSync(join(wrong.destination, 'intruder'), 'changed after the plan', { mode: 0o600 });
  cases.push(caseOf('destination changed after the plan', 'recover_plan_stale', await ctx.cli.run(user, wrong.apply)));
  const second = await planned(ctx, source.user, workspace, 'second-recovery');
  cases.push(
    caseOf(
      'a second recovery of the lifetime already recovered',
      'recover_lifetime_superseded_elsewhere',
      await ctx.cli.run(source.user, second.apply),
    ),
  );
  cases.push(...(await withOwnReceiver(ctx, 'interrupted', () => interrupted(ctx, workspace))));
  return cases;
}
