/** `loopx goal create|pause|resume|retire|list|show` — Goals through the runtime's goal operations. */
import { relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { operatorPath } from '../../core/index.js';
import type { showGoal } from '../../runtime/index.js';
import {
  carryGlobals,
  emit,
  resolveRoot,
  runtime,
  withGoalWriter,
  type GlobalOptions,
  type Runtime,
} from '../context.js';
import { parseStoreChoice } from '../parse.js';
import { registerMoveWork } from './goal-move.js';

type Supersession = NonNullable<Awaited<ReturnType<typeof showGoal>>['superseded_by']>;

/**
 * `goal show`'s `superseded_by`: the new lifetime and the root it continues in — by id, and as the
 * operator reaches it from here (relative to the working directory; null when the run authority no
 * longer finds it) — with the one next action, the same as a writer's `goal_lifetime_superseded`.
 */
function supersededBy(goalId: string, s: Supersession, g: GlobalOptions, { goalLifetimeSuperseded }: Runtime) {
  const nextAction =
    s.directory === undefined
      ? `continue the Goal in the root it was recovered into (root id ${s.root_id}): loopx goal show ${goalId} --root <recovered-root>`
      : goalLifetimeSuperseded(goalId, operatorPath(s.directory)).nextAction!;
  return {
    goal_instance_id: s.goal_instance_id,
    root_id: s.root_id,
    root: s.directory === undefined ? null : relative(process.cwd(), s.directory) || '.',
    recovery_id: s.recovery_id,
    recorded_at: s.recorded_at,
    next_action: carryGlobals(nextAction, g),
  };
}

/** `--doc name=text` (a name alone is an empty document). */
const parseDoc = (d: string) => {
  const eq = d.indexOf('=');
  return { name: eq > 0 ? d.slice(0, eq) : d, content: eq > 0 ? d.slice(eq + 1) : '' };
};

export function register(program: Command, globals: () => GlobalOptions): void {
  const goal = program.command('goal').description('Goals: identity (goal_id, goal_instance_id) and lifecycle');
  goal
    .command('create <goal-id>')
    .description('create a Goal (a fresh lifetime) and register its route')
    .requiredOption('--title <title>', 'what the Goal is about')
    .option('--doc <name=text...>', 'attach a Goal document (kind=goal_doc); repeatable')
    .option(
      '--work-provider <provider>',
      "where this Goal's work (Todos, history) lives: sqlite or postgresql (default: where the root keeps Goal state)",
    )
    .option(
      '--database-url <reference>',
      'with --work-provider postgresql: env:NAME, the environment variable holding the URL (default: the root’s)',
    )
    .option(
      '--pg-schema <name>',
      "with --work-provider postgresql: the schema (default: the root's, else a new loopx_<hex>)",
    )
    .action(
      async (
        goalId: string,
        o: { title: string; doc?: string[]; workProvider?: string; databaseUrl?: string; pgSchema?: string },
      ) => {
        const g = globals();
        const choice = parseStoreChoice('--work-provider', 'goal create', o.workProvider, o, false);
        const { createGoal, goalView } = await runtime();
        const workProvider =
          choice.provider === undefined
            ? undefined
            : {
                provider: choice.provider,
                ...(choice.databaseUrl !== undefined ? { database_url: choice.databaseUrl } : {}),
                ...(choice.schema !== undefined ? { schema: choice.schema } : {}),
              };
        const record = await withGoalWriter(g, (guard) =>
          createGoal(resolveRoot(g), goalId, o.title, (o.doc ?? []).map(parseDoc), {
            guard,
            ...(workProvider ? { workProvider } : {}),
          }),
        );
        emit(g, goalView(record), (v, out) =>
          out.line(`created Goal ${v.goal_id} (${v.goal_instance_id}): ${v.title}`),
        );
      },
    );
  for (const [verb, help] of [
    ['pause', 'pause a Goal (it takes no new work until resumed)'],
    ['resume', 'resume a paused Goal'],
    ['retire', 'retire a Goal: its lifetime ends; a later create mints a new goal_instance_id'],
  ] as const) {
    goal
      .command(`${verb} <goal-id>`)
      .description(help)
      .action(async (goalId: string) => {
        const g = globals();
        const { transitionGoal, goalView } = await runtime();
        const record = await withGoalWriter(g, (guard) => transitionGoal(resolveRoot(g), goalId, verb, guard));
        emit(g, goalView(record), (v, out) => out.line(`Goal ${v.goal_id} is ${v.lifecycle}`));
      });
  }
  goal
    .command('list')
    .description('list the Goals of this root')
    .action(async () => {
      const g = globals();
      const { listGoals, goalView } = await runtime();
      const goals = await listGoals(resolveRoot(g));
      emit(g, { goals: goals.map(goalView) }, (d, out) => {
        if (d.goals.length === 0) out.line('no Goals');
        for (const v of d.goals) out.line(`${v.goal_id}  ${v.lifecycle.padEnd(7)}  ${v.goal_instance_id}  ${v.title}`);
      });
    });
  registerShow(goal, globals);
  registerMoveWork(goal, globals);
}

/** `goal show <goal-id>`: the Goal with its Todo counts, and — for a lifetime a recovery superseded — where it continues. */
function registerShow(goal: Command, globals: () => GlobalOptions): void {
  goal
    .command('show <goal-id>')
    .description('show a Goal with its Todo counts, and where a recovery took its lifetime')
    .action(async (goalId: string) => {
      const g = globals();
      const authority = g.authorityDir !== undefined ? { authorityDir: resolve(g.authorityDir) } : {};
      const rt = await runtime();
      const d = await rt.showGoal(resolveRoot(g), goalId, { authority });
      const doc = {
        ...rt.goalView(d.record),
        todos: d.counts,
        committed_transactions: d.committed_transactions,
        handoff_mode: d.handoff_mode,
        work_provider: d.work_provider,
        superseded_by: d.superseded_by ? supersededBy(goalId, d.superseded_by, g, rt) : null,
      };
      emit(g, doc, (d, out) => {
        const s = d.superseded_by;
        out.line(
          `Goal ${d.goal_id} (${d.goal_instance_id}) ${s ? `superseded (was ${d.lifecycle})` : d.lifecycle}: ${d.title}`,
        );
        if (s) {
          const where =
            s.root === null
              ? `another root (root id ${s.root_id}), which the run authority no longer finds`
              : operatorPath(resolve(s.root));
          out.line(
            `  superseded by the recovery into ${where}: the Goal continues there as lifetime ${s.goal_instance_id} (recorded ${s.recorded_at});`,
          );
          out.line('  this root keeps this lifetime as history and takes no more work for it');
          // The JSON's next action, as the human hint prints one: the globals carried once.
          out.line(`  ${s.next_action}`);
        }
        out.line(
          `  todos: ${Object.entries(d.todos)
            .map(([k, n]) => `${n} ${k}`)
            .join(
              ', ',
            )}; ${d.committed_transactions} committed transactions; ${d.handoff_mode}; work in ${d.work_provider}`,
        );
        for (const doc of d.docs)
          out.line(`  doc ${doc.name} (${doc.bytes} bytes, sha256 ${doc.sha256.slice(0, 16)}…)`);
      });
    });
}
