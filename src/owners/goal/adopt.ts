/**
 * The goal owner's adoption step (`rebind`): the recovered Goal becomes a NEW lifetime in the
 * destination root — a new `goal_instance_id` under the same alias, its title, lifecycle and
 * documents (each checked against the digest the recovered goal.json records), its lineage one
 * generation on and the superseded lifetime named. The registry route is written by this owner
 * as it always is. The receipt reports the lifetime so the coordinator can record the
 * supersession outside the root. What it reads is the apply's staged, verified copy of the Goal's
 * files, and the lifetime it supersedes is the one the audit verified.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rejected, sha256Hex } from '../../core/index.js';
import { stepReceipt, type AdoptionContext, type OwnerAdoptionStep } from '../adoption-contract.js';
import { LAYOUT } from '../layout.js';
import { openFileRegistry } from '../registry/index.js';
import { lineageOf } from './codec.js';
import { openFileGoalStore } from './file.js';
import { readHistoricalCopy } from './historical.js';

const recoveredGoalUnreadable = (goalId: string, why: string) =>
  rejected('recovery_goal_unreadable', `The recovered Goal ${goalId} cannot be adopted: ${why}.`, {
    nextAction: 'verify the backup again into a new workspace and plan the recovery from it',
  });

/**
 * The recovered Goal and its documents, read from the context's staged copy (never the workspace
 * itself). Its lifetime must be the one the audit verified for the component (`source_identity`):
 * the lifetime this step supersedes is never taken from bytes alone.
 */
function recovered(ctx: AdoptionContext) {
  const record = readHistoricalCopy(ctx.workspace_root).goals.find((g) => g.goal_id === ctx.goal_id);
  if (!record) throw recoveredGoalUnreadable(ctx.goal_id, 'the workspace holds no readable goal.json for it');
  if (ctx.components.some((c) => c.source_identity !== null && c.source_identity !== record.goal_instance_id))
    throw recoveredGoalUnreadable(ctx.goal_id, 'its goal.json names another lifetime than the audit verified');
  const docs = record.docs.map((d) => {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(ctx.workspace_root, LAYOUT.goalDocsDir(ctx.goal_id), d.name));
    } catch {
      throw recoveredGoalUnreadable(ctx.goal_id, `its document ${d.name} is missing`);
    }
    if (bytes.byteLength !== d.bytes || sha256Hex(bytes) !== d.sha256)
      throw recoveredGoalUnreadable(ctx.goal_id, `its document ${d.name} differs from its recorded digest`);
    return { name: d.name, bytes: new Uint8Array(bytes) };
  });
  return { record, docs };
}

const rebind: OwnerAdoptionStep = {
  action: 'goal:rebind',
  disposition: 'rebind',
  mintsLifetime: true,
  describes:
    'a new lifetime of the Goal (new instance id, same alias, title and documents); the recovered lifetime is superseded',
  async apply(ctx) {
    const { record, docs } = recovered(ctx);
    const registry = openFileRegistry(ctx.destination);
    const goals = openFileGoalStore(ctx.destination, { registry });
    ctx.fault(`recover.${rebind.action}.before`);
    const { replayed } = goals.adoptLifetime({
      goal_id: ctx.goal_id,
      title: record.title,
      lifecycle: record.lifecycle,
      docs,
      recovery_id: ctx.recovery_id,
      supersedes: record,
    });
    ctx.fault(`recover.${rebind.action}.after`);
    // Readback: the lifetime as the owner now has it, and the registry's route to it.
    const goal = goals.get(ctx.goal_id);
    const route = registry.read().value.goals.find((g) => g.goal_id === ctx.goal_id);
    if (
      !goal ||
      goal.lineage?.supersedes?.recovery_id !== ctx.recovery_id ||
      route?.goal_instance_id !== goal.goal_instance_id
    ) {
      throw recoveredGoalUnreadable(ctx.goal_id, 'the destination does not read back the lifetime it was given');
    }
    const lineage = lineageOf(goal);
    return stepReceipt(
      rebind,
      'goal',
      ctx,
      replayed ? 'already' : 'applied',
      {
        goal_instance_id: goal.goal_instance_id,
        superseded_instance_id: record.goal_instance_id,
        lineage_id: lineage.lineage_id,
        generation: lineage.generation,
        lifecycle: goal.lifecycle,
        docs: goal.docs.length,
      },
      {
        lifetime: {
          goal_id: ctx.goal_id,
          superseded: record.goal_instance_id,
          successor: goal.goal_instance_id,
          lineage_id: lineage.lineage_id,
          generation: lineage.generation,
        },
      },
    );
  },
};

export const adoptionSteps: readonly OwnerAdoptionStep[] = [rebind];
