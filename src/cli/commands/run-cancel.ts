/** `loopx run cancel <id>` */
import type { Command } from 'commander';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { printRun, runSummary } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('cancel <id>')
    .description('cancel an active or suspended run (terminal)')
    .action(async (id: string) => {
      const g = globals();
      const view = await withEngine(g, (engine) => engine.cancel(id));
      emit(g, runSummary(view), (_, out) => printRun(view, out));
    });
}
