/** `loopx work run --goal G --agent A [--turns N] [--sink URL]` — a Goal work run. */
import type { Command } from 'commander';
import { rejected } from '../../core/index.js';
import { emit, existingRoot, runtime, withEngine, type GlobalOptions } from '../context.js';
import { parsePositive } from '../parse.js';
import { withModelCallsShown } from '../progress.js';
import { drivenSummary, exitIfFailed, finalAnswerOf, printRun } from './run-view.js';

export function register(program: Command, globals: () => GlobalOptions): void {
  const work = program.command('work').description('agent runs that do Goal work through the owners');
  work
    .command('run')
    .description('open a session on the Goal and drive an agent run whose tools act on its Todos and external effects')
    .requiredOption('--goal <goal-id>', 'the Goal')
    .requiredOption('--agent <file>', 'agent definition (JSON), using tool plan loopx.goal-work.v1')
    .option('--turns <n>', 'suspend after N turns', parsePositive)
    .option('--sink <url>', 'deliveries endpoint of the external system (stored in machine configuration)')
    .option('--input <text>', 'the user message the run starts with')
    .action(async (o: { goal: string; agent: string; turns?: number; sink?: string; input?: string }) => {
      const g = globals();
      const { GOAL_WORK_TOOL_PLAN, loadAgentFile, runGoalWork } = await runtime();
      const agent = loadAgentFile(o.agent);
      if (agent.toolPlan !== GOAL_WORK_TOOL_PLAN) {
        throw rejected(
          'agent_not_goal_work',
          `Agent ${agent.id}@${agent.version} uses tool plan ${agent.toolPlan}; Goal work runs need ${GOAL_WORK_TOOL_PLAN}.`,
          {
            nextAction: 'use an agent whose tool_plan is loopx.goal-work.v1 (see examples/agents/goal-worker.json)',
          },
        );
      }
      const root = await existingRoot(g);
      const { result, answer } = await withEngine(g, async (engine) => {
        const result = await withModelCallsShown(() =>
          runGoalWork({
            root,
            goalId: o.goal,
            agent,
            engine,
            ...(o.turns !== undefined ? { turns: o.turns } : {}),
            ...(o.sink !== undefined ? { webhookUrl: o.sink } : {}),
            ...(o.input !== undefined ? { input: o.input } : {}),
          }),
        );
        return { result, answer: await finalAnswerOf(engine, result.run) };
      });
      emit(
        g,
        { ...(await drivenSummary(result.run, answer)), goal: result.goal, session: result.session },
        (d, out) => {
          out.line(
            `Goal ${d.goal.goal_id}, session ${d.session.session_id} (execution generation ${d.session.execution_generation})`,
          );
          printRun(result.run, out, answer);
        },
      );
      exitIfFailed(result.run);
    });
}
