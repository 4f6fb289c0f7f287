/** `loopx goal create|list|show` — Goals through the goal owner. */
import type { Command } from 'commander';
import { goalDetail } from '../../engine/index.js';
import { goal as goalOwner, work as workOwner } from '../../owners/index.js';
import { emit, type GlobalOptions } from '../context.js';
import { withOwners } from './owners-context.js';

const view = (g: goalOwner.GoalRecord) => ({
  goal_id: g.goal_id,
  goal_instance_id: g.goal_instance_id,
  title: g.title,
  lifecycle: g.lifecycle,
  docs: g.docs.map((d) => ({ name: d.name, sha256: d.sha256, bytes: d.bytes })),
});

export function register(program: Command, globals: () => GlobalOptions): void {
  const goal = program.command('goal').description('Goals: identity (goal_id, goal_instance_id) and lifecycle');
  goal
    .command('create <goal-id>')
    .description('create a Goal (a fresh lifetime) and register its route')
    .requiredOption('--title <title>', 'what the Goal is about')
    .option('--doc <name=text...>', 'attach a Goal document (kind=goal_doc); repeatable')
    .action(async (goalId: string, o: { title: string; doc?: string[] }) => {
      const g = globals();
      const docs = (o.doc ?? []).map((d) => {
        const eq = d.indexOf('=');
        // Names are checked before anything is created, so a bad --doc leaves no half-made Goal.
        return { name: goalOwner.assertDocName(eq > 0 ? d.slice(0, eq) : d), content: eq > 0 ? d.slice(eq + 1) : '' };
      });
      const record = await withOwners(g, (owners, root) => {
        const created = owners.goals.create(goalId, o.title);
        for (const d of docs) owners.goals.addDoc(goalId, d.name, d.content);
        workOwner.openGoalWork({ root, goal_id: goalId }).close();
        return owners.goals.get(goalId) ?? created;
      });
      emit(g, view(record), (v, out) => out.line(`created Goal ${v.goal_id} (${v.goal_instance_id}): ${v.title}`));
    });
  for (const [verb, from, help] of [
    ['pause', 'active', 'pause a Goal (it takes no new work until resumed)'],
    ['resume', 'paused', 'resume a paused Goal'],
    ['retire', null, 'retire a Goal: its lifetime ends; a later create mints a new goal_instance_id'],
  ] as const) {
    goal
      .command(`${verb} <goal-id>`)
      .description(help)
      .action(async (goalId: string) => {
        const g = globals();
        const record = await withOwners(g, (owners) => {
          const current = owners.goals.get(goalId);
          if (!current) throw goalOwner.goalNotFound(goalId);
          const ref = { goal_id: current.goal_id, goal_instance_id: current.goal_instance_id };
          const expected = from ?? current.lifecycle;
          return verb === 'pause' ? owners.goals.pause(ref, expected) : verb === 'resume' ? owners.goals.resume(ref, expected) : owners.goals.retire(ref, expected);
        });
        emit(g, view(record), (v, out) => out.line(`Goal ${v.goal_id} is ${v.lifecycle}`));
      });
  }
  goal
    .command('list')
    .description('list the Goals of this root')
    .action(async () => {
      const g = globals();
      const goals = await withOwners(g, (owners) => owners.goals.list());
      emit(g, { goals: goals.map(view) }, (d, out) => {
        if (d.goals.length === 0) out.line('no Goals');
        for (const v of d.goals) out.line(`${v.goal_id}  ${v.lifecycle.padEnd(7)}  ${v.goal_instance_id}  ${v.title}`);
      });
    });
  goal
    .command('show <goal-id>')
    .description('show a Goal with its Todo counts')
    .action(async (goalId: string) => {
      const g = globals();
      const doc = await withOwners(g, (owners, root) => {
        const d = goalDetail(owners, root, goalId);
        return { ...view(d.record), todos: d.counts, committed_transactions: d.committed_transactions, handoff_mode: d.handoff_mode };
      });
      emit(g, doc, (d, out) => {
        out.line(`Goal ${d.goal_id} (${d.goal_instance_id}) ${d.lifecycle}: ${d.title}`);
        out.line(`  todos: ${Object.entries(d.todos).map(([k, n]) => `${n} ${k}`).join(', ')}; ${d.committed_transactions} committed transactions; ${d.handoff_mode}`);
        for (const doc of d.docs) out.line(`  doc ${doc.name} (${doc.bytes} bytes, sha256 ${doc.sha256.slice(0, 16)}…)`);
      });
    });
}
