/** `loopx run resume <id> [--turns N]` */
import type { Command } from 'commander';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { parsePositive } from '../parse.js';
import { withModelCallsShown } from '../progress.js';
import { drivenSummary, exitIfFailed, finalAnswerOf, printRun } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('resume <id>')
    .description(
      'resume a suspended run (or continue an interrupted one) and drive it; print its final answer when it completes',
    )
    .option('--turns <n>', 'suspend again after N more turns', parsePositive)
    .action(async (id: string, o: { turns?: number }) => {
      const g = globals();
      const { view, answer } = await withEngine(g, async (engine) => {
        const view = await withModelCallsShown(() =>
          engine.resume(id, o.turns !== undefined ? { turns: o.turns } : {}),
        );
        return { view, answer: await finalAnswerOf(engine, view) };
      });
      emit(g, await drivenSummary(view, answer), (_, out) => printRun(view, out, answer));
      exitIfFailed(view);
    });
}
