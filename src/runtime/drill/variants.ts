/**
 * Variants of the recovery beside the main journey, each as its own synthetic user:
 * - the receiver is down while the effects are reconciled: the apply ends `reconciliation_held`
 *   with each hold naming its owner and continuation; once the receiver is back, the operator's
 *   `recover resolve` settles each hold through its owner and the recovery completes;
 * - the online capture profile: a capture of a quiet source is adopted at exactly its captured
 *   checkpoint; a capture while a writer commits to the Goal moved, is no point in time, and the
 *   recovery refuses to adopt it (its audit says to back up quiescently).
 */
import { join } from 'node:path';
import { RECOVERY_POINT_OWNER } from '../../owners/index.js';
import { expectOk } from './cli.js';
import { GOAL } from './definition.js';
import type { DrillCase } from './cases.js';
import { newSourceRoot, whileReceiverDown, type DrillContext } from './source.js';
import { updateTodo } from '../todos.js';

export interface HeldVariant extends DrillCase {
  readonly holds: readonly {
    readonly hold_id: string;
    readonly owner: string;
    readonly code: string;
    readonly continuation: string;
    readonly resolved: boolean;
  }[];
  readonly human_actions: number;
}

/** Apply with the receiver down, then resolve each hold once it is back. Runs alone: it stops the drill's receiver. */
export async function receiverDown(ctx: DrillContext, workspace: string): Promise<HeldVariant> {
  ctx.progress('variant: the receiver is down during the apply (holds), then back (resolve)');
  // Its operator's commands, as issued: plan, confirm and one resolve per hold (the verified workspace is shared).
  const operator = ctx.cli.operator(ctx.user('receiver-down'));
  const destination = join(ctx.dir, 'held');
  const plan = expectOk(
    await operator.run(['recover', 'plan', '--from', workspace, '--goal', GOAL, '--destination', destination]),
  );
  const held = await whileReceiverDown(ctx, async () =>
    expectOk(
      await operator.run(['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest as string]),
    ),
  );
  const holds = held.holds as { hold_id: string; owner: string; code: string; continuation: string }[];
  let last = held;
  for (const h of holds) {
    const r = await operator.run(['recover', 'resolve', '--destination', destination, '--hold', h.hold_id]);
    if (r.status === 0) last = r.doc;
  }
  const open = new Set((last.holds as { hold_id: string }[]).map((h) => h.hold_id));
  const observed = `${held.state as string} with ${holds.length} hold(s), then ${last.state as string}`;
  return {
    case: 'receiver down during the apply, then resolved',
    expected: 'reconciliation_held with holds, then complete',
    observed,
    met: held.state === 'reconciliation_held' && holds.length > 0 && last.state === 'complete',
    holds: holds.map((h) => ({
      hold_id: h.hold_id,
      owner: h.owner,
      code: h.code,
      continuation: h.continuation,
      resolved: !open.has(h.hold_id),
    })),
    human_actions: operator.issued.length,
  };
}

/** The writer stops by itself after this many commits, whatever the capture does. */
const MAX_MOVING_WRITES = 2_000;

export interface OnlineCaptures {
  /** An online capture of a quiet source: adopted, exactly at its captured checkpoint. */
  readonly quiet: DrillCase & { readonly captured_cursor: number; readonly recovered_cursor: number };
  /** An online capture while a writer commits: it moved, so it is no point in time and is never adopted. */
  readonly moving: DrillCase & { readonly moved: boolean };
}

/** Capture `root` online as `user` into `name`, verify it; the backup's and the workspace's documents. */
async function captureOnline(ctx: DrillContext, user: string, root: string, name: string) {
  const out = join(ctx.dir, `backups-${name}`);
  const b = expectOk(
    await ctx.cli.run(user, [
      'backup-state',
      '--execute',
      '--profile',
      'online',
      '--output-dir',
      out,
      '--backup-id',
      name,
      '--root',
      root,
    ]),
  );
  const workspace = join(ctx.dir, `workspace-${name}`);
  expectOk(
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
  return { backup: b, workspace };
}

/** Commit Todo notes to `root` from this process until `during` settles; how many. */
async function writeDuring<T>(root: string, during: () => Promise<T>): Promise<T> {
  let writing = true;
  let written = 0;
  const writer = (async () => {
    while (writing && written < MAX_MOVING_WRITES) {
      await updateTodo(root, GOAL, {
        operation_id: `drill-moving-${written}`,
        todo_id: 't2',
        note: `moving ${written}`,
        lease_owner: 'operator:drill',
      });
      written += 1;
      // A turn of the event loop between commits, so the capture child's exit is noticed.
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  try {
    return await during();
  } finally {
    writing = false;
    await writer;
  }
}

/** The online profile: a quiet source's capture is adopted at its checkpoint; a moving one is refused. */
export async function onlineCaptures(ctx: DrillContext): Promise<OnlineCaptures> {
  ctx.progress('variant: online captures — of a quiet source, and while a writer commits (capture movement)');
  const user = ctx.user('online');
  const root = join(ctx.dir, 'source-online');
  await newSourceRoot(ctx, root, user);
  const quiet = await captureOnline(ctx, user, root, 'online-quiet');
  const destination = join(ctx.dir, 'recovered-online');
  const plan = expectOk(
    await ctx.cli.run(user, [
      'recover',
      'plan',
      '--from',
      quiet.workspace,
      '--goal',
      GOAL,
      '--destination',
      destination,
    ]),
  );
  const captured =
    (plan.components as { owner: string; cursor: number }[]).find((c) => c.owner === RECOVERY_POINT_OWNER)?.cursor ??
    -1;
  const status = expectOk(
    await ctx.cli.run(user, [
      'recover',
      'apply',
      '--destination',
      destination,
      '--confirm',
      plan.plan_digest as string,
    ]),
  );
  const imported =
    (status.receipts as { action: string; readback: { imported_transactions?: number } }[]).find(
      (r) => r.action === 'work:import_inert',
    )?.readback.imported_transactions ?? -1;
  const moving = await writeDuring(join(ctx.dir, 'source-online'), () =>
    captureOnline(ctx, user, root, 'online-moving'),
  );
  const moved = (moving.backup.capture.skew_inventory as { component_id: string; moved: boolean }[]).some(
    (c) => c.component_id.startsWith('work-') && c.moved,
  );
  const refused = await ctx.cli.run(user, [
    'recover',
    'plan',
    '--from',
    moving.workspace,
    '--goal',
    GOAL,
    '--destination',
    join(ctx.dir, 'refused-moving'),
  ]);
  const refusedAs = refused.status === 0 ? 'planned' : (refused.code ?? `exit_${refused.status}`);
  return {
    quiet: {
      case: 'online capture of a quiet source',
      expected: 'complete at exactly the captured checkpoint',
      observed: `${status.state as string}: ${imported} transactions imported (captured ${captured})`,
      met: status.state === 'complete' && imported === captured,
      captured_cursor: captured,
      recovered_cursor: imported,
    },
    moving: {
      case: 'online capture while a writer commits (the capture moved)',
      expected: 'moved, then recover_audit_not_eligible',
      observed: `${moved ? 'moved' : 'did not move'}, then ${refusedAs}`,
      met: moved && refusedAs === 'recover_audit_not_eligible',
      moved,
    },
  };
}
