/** `loopx run resume <id> [--turns N]` */
import type { Command } from 'commander';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { parsePositive } from '../parse.js';
import { exitIfFailed, printRun, runSummary } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('resume <id>')
    .description('resume a suspended run (or continue an interrupted one) and drive it')
    .option('--turns <n>', 'suspend again after N more turns', parsePositive)
    .action(async (id: string, o: { turns?: number }) => {
      const g = globals();
      const view = await withEngine(g, (engine) => engine.resume(id, o.turns !== undefined ? { turns: o.turns } : {}));
      emit(g, runSummary(view), (_, out) => printRun(view, out));
      exitIfFailed(view);
    });
}
