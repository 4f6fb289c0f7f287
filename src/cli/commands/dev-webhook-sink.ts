/**
 * `loopx dev webhook-sink --port P` — a loopback stand-in for an external system (tests, demos):
 * deliveries stored once by idempotency key, old writers fenced by Goal lineage, every attempt
 * counted. The protocol is in src/dev/webhook-sink.ts.
 */
import type { Command } from 'commander';
import { emit, runtime, type GlobalOptions } from '../context.js';
import { parseCount } from '../parse.js';
import { onStopSignal } from '../signals.js';

export function register(program: Command, globals: () => GlobalOptions): void {
  const dev = program.command('dev').description('development helpers');
  dev
    .command('webhook-sink')
    .description(
      'serve a loopback deliveries endpoint that stores deliveries by idempotency key and fences old writers (Ctrl-C stops it)',
    )
    .option('--port <port>', 'port on 127.0.0.1 (0: any free port)', parseCount, 0)
    .option('--journal <file>', 'keep deliveries, fences and attempts in this JSONL file across restarts')
    .action(async (o: { port: number; journal?: string }) => {
      const g = globals();
      const { startWebhookSink } = await runtime();
      // Before the address is printed: a signal sent the moment it appears must close the sink
      // (and its journal), not meet the default action.
      const stop = onStopSignal();
      try {
        const sink = await startWebhookSink({ port: o.port, ...(o.journal ? { journalPath: o.journal } : {}) });
        try {
          emit(g, { url: sink.url, deliveries_url: sink.deliveriesUrl, port: sink.port }, (d, out) =>
            out.line(`webhook sink listening: ${d.deliveries_url}`),
          );
          await stop.stopped;
        } finally {
          await sink.close();
        }
      } finally {
        stop.dispose();
      }
    });
}
