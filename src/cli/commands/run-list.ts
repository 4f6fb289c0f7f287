/** `loopx run list` */
import type { Command } from 'commander';
import { emit, runtime, withEngine, type GlobalOptions } from '../context.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('list')
    .description('list the runs of this root')
    .action(async () => {
      const g = globals();
      const runs = await withEngine(g, (engine) => engine.list(), { readOnly: true });
      const { runSummary } = await runtime();
      emit(
        g,
        { runs: runs.map((r) => ({ ...runSummary(r), definition: r.definition, turn_limit: r.turn_limit })) },
        (_, out) => {
          if (runs.length === 0) out.line('no runs');
          for (const r of runs)
            out.line(
              `${r.run_id}  ${r.status.padEnd(9)}  turns ${r.completed_turns}/${r.turn_limit}  seq ${r.last_sequence}  ${r.definition.id}@${r.definition.version}`,
            );
        },
      );
    });
}
