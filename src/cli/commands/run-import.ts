/** `loopx run import <file> [--agent <file>]` — take a signed snapshot into this root. */
import type { Command } from 'commander';
import { emit, runtime, withEngine, type GlobalOptions } from '../context.js';
import { readSnapshotFile } from './snapshot-file.js';
import { printRun } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('import <file>')
    .description('import a signed snapshot whose owner is gone into this root (resume it afterwards)')
    .option('--agent <file>', 'the agent definition, when this root does not know it (scripted agents)')
    .action(async (file: string, o: { agent?: string }) => {
      const g = globals();
      const bytes = await readSnapshotFile(file);
      const { loadAgentFile } = await runtime();
      const agent = o.agent !== undefined ? loadAgentFile(o.agent) : undefined;
      const view = await withEngine(g, (engine) => engine.importSnapshot(bytes, agent ? { agent } : {}));
      emit(g, { run_id: view.run_id, status: view.status, last_sequence: view.last_sequence }, (_, out) => {
        printRun(view, out);
        out.hint(`  continue it: loopx run resume ${view.run_id}`);
      });
    });
}
