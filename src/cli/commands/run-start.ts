/** `loopx run start --agent <file> [--input TEXT] [--suspend-after-turns N]` */
import type { Command } from 'commander';
import { emit, runtime, withEngine, type GlobalOptions } from '../context.js';
import { parseCount } from '../parse.js';
import { withModelCallsShown } from '../progress.js';
import { drivenSummary, exitIfFailed, finalAnswerOf, printRun } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('start')
    .description(
      'start a run of an agent and drive it until it suspends, finishes or waits; print its final answer when it completes',
    )
    .requiredOption('--agent <file>', 'agent definition (JSON)')
    .option('--input <text>', 'the user message the run starts with')
    .option('--suspend-after-turns <n>', 'suspend at the boundary after N completed turns', parseCount)
    .action(async (o: { agent: string; input?: string; suspendAfterTurns?: number }) => {
      const g = globals();
      const { loadAgentFile } = await runtime();
      const agent = loadAgentFile(o.agent);
      const { view, answer } = await withEngine(g, async (engine) => {
        const view = await withModelCallsShown(() =>
          engine.start(agent, {
            ...(o.input !== undefined ? { input: o.input } : {}),
            ...(o.suspendAfterTurns !== undefined ? { suspendAfterTurns: o.suspendAfterTurns } : {}),
          }),
        );
        return { view, answer: await finalAnswerOf(engine, view) };
      });
      emit(g, await drivenSummary(view, answer), (_, out) => printRun(view, out, answer));
      exitIfFailed(view);
    });
}
