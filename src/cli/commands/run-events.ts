/** `loopx run events <id> [--after SEQ] [--follow]` — one JSON object per line with --json. */
import type { Command } from 'commander';
import { withEngine, type GlobalOptions } from '../context.js';
import { onStopSignal } from '../signals.js';
import { parseCount } from '../parse.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('events <id>')
    .description("print the run's events after a cursor, in order (with --json: one JSON object per line); --follow waits for more while the run is active")
    .option('--after <seq>', 'print events with a sequence greater than SEQ', parseCount, 0)
    .option('--follow', 'keep printing new events until the run stops or waits')
    .action(async (id: string, o: { after: number; follow?: boolean }) => {
      const g = globals();
      const stop = onStopSignal(['SIGINT']);
      try {
        await withEngine(
          g,
          async (engine) => {
            for await (const e of engine.events(id, { after: o.after, follow: o.follow ? 'while-active' : false, signal: stop.signal })) {
              if (g.json) process.stdout.write(`${JSON.stringify({ run_id: e.runId, sequence: e.sequence, type: e.type, at: e.at, data: e.data })}\n`);
              else process.stdout.write(`${String(e.sequence).padStart(6)}  ${e.at}  ${e.type.padEnd(20)} ${JSON.stringify(e.data)}\n`);
            }
          },
          { readOnly: true },
        );
      } finally {
        stop.dispose();
      }
    });
}
