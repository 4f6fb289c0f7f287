/** `loopx run suspend <id>` — at the next completed turn boundary (now, if idle at one). */
import type { Command } from 'commander';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { printRun, runSummary } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('suspend <id>')
    .description('suspend a run at its next completed turn boundary')
    .action(async (id: string) => {
      const g = globals();
      const view = await withEngine(g, (engine) => engine.suspend(id));
      emit(g, await runSummary(view), (_, out) => printRun(view, out));
    });
}
