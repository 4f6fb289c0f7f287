/** `loopx run answer <id> <interaction-id> <text>` */
import type { Command } from 'commander';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { printRun, runSummary } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('answer <id> <interaction-id> <text>')
    .description('answer the interaction a run waits for, and continue it')
    .action(async (id: string, interactionId: string, text: string) => {
      const g = globals();
      const view = await withEngine(g, (engine) => engine.answer(id, interactionId, text));
      emit(g, await runSummary(view), (_, out) => printRun(view, out));
    });
}
