/** `loopx run show <id>` */
import type { Command } from 'commander';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { printRun } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('show <id>')
    .description('show one run: status, turns, what it waits for')
    .action(async (id: string) => {
      const g = globals();
      const view = await withEngine(g, (engine) => engine.show(id), { readOnly: true });
      emit(g, view, printRun);
    });
}
