/** `loopx run events <id> [--after SEQ] [--follow] [--cluster env:NAME]` — one JSON object per line with --json. */
import type { Command } from 'commander';
import type { EventsOptions, RunEvent } from '../../runtime/index.js';
import { runtime, withEngine, type GlobalOptions } from '../context.js';
import { onStopSignal } from '../signals.js';
import { parseCount } from '../parse.js';
import { optionalClusterAccess, withOptionalCluster, type OptionalClusterFlags } from './cluster.js';

async function print(events: AsyncIterable<RunEvent>, json: boolean): Promise<void> {
  for await (const e of events) {
    if (json)
      process.stdout.write(
        `${JSON.stringify({ run_id: e.runId, sequence: e.sequence, type: e.type, at: e.at, data: e.data })}\n`,
      );
    else
      process.stdout.write(
        `${String(e.sequence).padStart(6)}  ${e.at}  ${e.type.padEnd(20)} ${JSON.stringify(e.data)}\n`,
      );
  }
}

export function register(run: Command, globals: () => GlobalOptions): void {
  withOptionalCluster(
    run
      .command('events <id>')
      .description(
        "print the run's events after a cursor, in order (with --json: one JSON object per line); --follow waits for more while the run is active",
      )
      .option('--after <seq>', 'print events with a sequence greater than SEQ', parseCount, 0)
      .option('--follow', 'keep printing new events until the run stops or waits'),
  ).action(async (id: string, o: OptionalClusterFlags & { after: number; follow?: boolean }) => {
    const g = globals();
    const cluster = optionalClusterAccess(o, 'run events');
    const { clusterRunEvents } = await runtime();
    const stop = onStopSignal(['SIGINT']);
    const options: EventsOptions = { after: o.after, follow: o.follow ? 'while-active' : false, signal: stop.signal };
    try {
      if (cluster) await print(clusterRunEvents(cluster, id, options), !!g.json);
      else await withEngine(g, (engine) => print(engine.events(id, options), !!g.json), { readOnly: true });
    } finally {
      stop.dispose();
    }
  });
}
