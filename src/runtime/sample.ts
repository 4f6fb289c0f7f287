/**
 * The sample `npm start` shows: when a root holds no Goal yet, create Goal `sample` with three
 * Todos and let the shipped scripted agent (examples/agents/goal-worker.json) work them through the
 * owners, delivering its one external effect to the receiver the caller names (`loopx daemon` names
 * its dev receiver, which outlives the root: ../dev/dev-receiver.ts).
 * Everything goes through the same library calls as `loopx goal create`, `todo add` and `work run`,
 * under one admission ticket (admission.ts): refused as a whole while a backup holds the root closed.
 */
import { join } from 'node:path';
import { ensurePrivateDir, PACKAGE_ROOT } from '../core/index.js';
import { loadAgentFile } from '../engine/index.js';
import { openRootOwners, work as workOwner } from '../owners/index.js';
import { withAdmission } from './admission.js';
import { runGoalWork } from './goal-work.js';
import { withRootEngine } from './root.js';

export interface SampleOptions {
  /** Where the sample's delivery goes: a receiver that outlives this call. */
  readonly webhookUrl: string;
  readonly authorityDir?: string;
}

export async function seedSample(root: string, options: SampleOptions): Promise<{ seeded: boolean }> {
  ensurePrivateDir(root);
  return withAdmission(root, 'sample seeding', () => seed(root, options));
}

async function seed(root: string, options: SampleOptions): Promise<{ seeded: boolean }> {
  const access = { root, ...(options.authorityDir !== undefined ? { authorityDir: options.authorityDir } : {}) };
  const owners = openRootOwners(root);
  try {
    if (owners.goals.list().length > 0) return { seeded: false };
    // The root is bound to its authority before it holds any work (a root with work that its authority never bound is refused).
    await withRootEngine(access, (engine) => engine.rootId());
    owners.goals.create('sample', 'Ship the launch post', {});
  } finally {
    owners.close();
  }
  const work = await workOwner.openGoalWork({ root, goal_id: 'sample', create: true });
  try {
    const titles = ['Draft the outline', 'Review with design', 'Publish the post'];
    for (const [i, title] of titles.entries())
      await work.addTodo({ operation_id: `seed-${i}`, todo_id: `t${i + 1}`, title });
  } finally {
    work.close();
  }
  const agent = loadAgentFile(join(PACKAGE_ROOT ?? '.', 'examples', 'agents', 'goal-worker.json'));
  await withRootEngine(access, (engine) =>
    runGoalWork({ root, goalId: 'sample', agent, engine, webhookUrl: options.webhookUrl }),
  );
  return { seeded: true };
}
