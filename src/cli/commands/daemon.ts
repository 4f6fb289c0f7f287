/**
 * `loopx daemon [--port P] [--host 127.0.0.1] [--seed-sample]` — serve the root's API and the
 * Capability Center UI on loopback until Ctrl-C or SIGTERM, then drain and exit. It prints the UI
 * address with a one-time login token (and never an absolute path). `--seed-sample` first fills
 * an empty root with a sample Goal worked by a scripted agent (what `npm start` shows), delivering
 * to the dev receiver: a stand-in external system at a fixed loopback port whose journal outlives
 * the root (src/dev/dev-receiver.ts). The daemon reopens it on every start once this machine's
 * journal exists, so a Goal recovered from a lost root can ask it again and continue delivering.
 */
import { resolve } from 'node:path';
import type { DevReceiver } from '../../runtime/index.js';
import { usageError } from '../../core/index.js';
import { emit, resolveRoot, runtime, type GlobalOptions } from '../context.js';
import { InvalidArgumentError, type Command } from 'commander';
import { onStopSignal } from '../signals.js';

/** A TCP port, 0–65535 (0: a free one); anything else is a usage error (exit 2) before anything starts. */
function parsePort(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535)
    throw new InvalidArgumentError('expected a port from 0 to 65535');
  return Number(value);
}

/** `--cluster` and the flags that go with it, as the daemon's cluster membership takes them. */
const clusterOptions = (o: {
  cluster: string;
  clusterSchema?: string;
  receiver?: string;
  leaseMs?: number;
  maxRuns?: number;
}) => ({
  cluster: o.cluster,
  ...(o.clusterSchema !== undefined ? { schema: o.clusterSchema } : {}),
  ...(o.receiver !== undefined ? { receiverUrl: o.receiver } : {}),
  ...(o.leaseMs !== undefined ? { leaseMs: o.leaseMs } : {}),
  ...(o.maxRuns !== undefined ? { maxRuns: o.maxRuns } : {}),
});

/** A whole number ≥ 1 (a length in ms, a count); anything else is a usage error (exit 2). */
function positiveInt(value: string): number {
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new InvalidArgumentError('expected a whole number ≥ 1');
  return Number(value);
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const daemonCommand = program
    .command('daemon')
    .description('serve this root over loopback HTTP: the API (docs/api.md) and the Capability Center UI')
    .option('--port <port>', 'TCP port on 127.0.0.1, 0–65535 (default: a free one)', parsePort)
    .option('--host <address>', 'listen address; only 127.0.0.1 is accepted')
    .option(
      '--seed-sample',
      'create the runtime root if needed and, when it has no Goal, a sample Goal worked by a scripted agent',
    )
    .option(
      '--dev-receiver-port <port>',
      "the dev receiver's port on 127.0.0.1 (default $LOOPX_DEV_RECEIVER_PORT, else 41338)",
      parsePort,
    )
    .option('--no-dev-receiver', 'do not open the dev receiver (the sample cannot be seeded without it)')
    .option(
      '--agents <dir>',
      'the directory of Goal work agent files the Capability Center offers (default: the shipped examples)',
    )
    .option(
      '--cluster <env:NAME>',
      'join the cluster whose database URL this environment variable holds, and drive its runs (docs/cluster.md)',
    )
    .option('--cluster-schema <name>', "the cluster's schema (default loopx_cluster)")
    .option('--receiver <url>', 'where receiver.deliver posts in the cluster (an external system)')
    .option('--lease-ms <ms>', 'run lease length on the database clock (default 15000)', positiveInt)
    .option('--max-runs <n>', 'runs this daemon drives at once (default 4)', positiveInt)
    .action(async (o: DaemonOptions) => {
      const g = globals();
      const root = resolveRoot(g);
      const authorityDir = g.authorityDir !== undefined ? resolve(g.authorityDir) : undefined;
      if (o.seedSample && !o.devReceiver)
        throw usageError(
          'daemon_sample_needs_receiver',
          'The sample Goal delivers to the dev receiver, which --no-dev-receiver turns off.',
          'leave the dev receiver on: loopx daemon --seed-sample',
        );
      const { devReceiverPort, devReceiverUsed, initRoot, openDevReceiver, seedSample } = await runtime();
      // The receiver first: the sample delivers to it, and it stays open for as long as the daemon runs.
      const receiver =
        o.devReceiver && (o.seedSample || devReceiverUsed())
          ? await openDevReceiver(devReceiverPort(o.devReceiverPort))
          : undefined;
      try {
        if (o.seedSample) {
          initRoot(root);
          const s = await seedSample(root, {
            webhookUrl: receiver!.deliveriesUrl,
            ...(authorityDir !== undefined ? { authorityDir } : {}),
          });
          if (s.seeded && !g.json)
            process.stdout.write(
              'seeded Goal "sample": three Todos worked by the scripted agent examples/agents/goal-worker.json\n',
            );
        }
        await serve(g, o, root, authorityDir, receiver);
      } finally {
        await receiver?.close();
      }
    });
  daemonCommand.enablePositionalOptions();
  daemonCommand
    .command('login-url')
    .description(
      'print a new one-time login address of the daemon serving this root (each address signs in one browser tab once)',
    )
    .action(async () => {
      const g = globals();
      const { requestLoginUrl } = await import('../../daemon/index.js');
      const loginUrl = await requestLoginUrl(resolveRoot(g));
      emit(g, { login_url: loginUrl }, (v, out) => out.line(v.login_url));
    });
}

interface DaemonOptions {
  port?: number;
  host?: string;
  seedSample?: boolean;
  devReceiver: boolean;
  devReceiverPort?: number;
  agents?: string;
  cluster?: string;
  clusterSchema?: string;
  receiver?: string;
  leaseMs?: number;
  maxRuns?: number;
}

/** Serves `root` until Ctrl-C or SIGTERM, then drains. */
async function serve(
  g: GlobalOptions,
  o: DaemonOptions,
  root: string,
  authorityDir: string | undefined,
  receiver: DevReceiver | undefined,
): Promise<void> {
  // Loaded here, not at the top: Fastify and the UI server cost every other command ~20 MiB.
  const { startDaemon } = await import('../../daemon/index.js');
  // Before anything is announced: a SIGTERM sent the moment the address is printed (or during
  // start-up) must drain, not leave the token file behind.
  const stop = onStopSignal();
  try {
    const d = await startDaemon({
      root,
      ...(o.port !== undefined ? { port: o.port } : {}),
      ...(o.host !== undefined ? { host: o.host } : {}),
      ...(authorityDir !== undefined ? { authorityDir } : {}),
      ...(o.agents !== undefined ? { agentsDir: resolve(o.agents) } : {}),
      // A UI built elsewhere (development and the browser tests); by default the package's dist/ui.
      ...(process.env.LOOPX_UI_DIR ? { uiDir: resolve(process.env.LOOPX_UI_DIR) } : {}),
      ...(o.cluster !== undefined ? { cluster: clusterOptions({ ...o, cluster: o.cluster }) } : {}),
      logger: g.json ? false : { level: 'warn' },
    });
    try {
      const started = {
        url: d.url,
        login_url: d.loginUrl,
        port: d.port,
        ...(d.cluster ? { cluster_instance: d.cluster.instanceId } : {}),
        ...(receiver ? { dev_receiver_url: receiver.deliveriesUrl } : {}),
      };
      emit(g, started, (v, out) => {
        out.line(`loopx daemon on ${v.url} (loopback only; Ctrl-C stops it)`);
        out.line(`open the Capability Center (one-time login): ${v.login_url}`);
        if (v.cluster_instance) out.line(`joined the cluster as ${v.cluster_instance}`);
        if (v.dev_receiver_url)
          out.line(
            `dev receiver (stands in for an external system; it keeps what it received across restarts): ${v.dev_receiver_url}`,
          );
      });
      await stop.stopped;
    } finally {
      await d.close();
    }
  } finally {
    stop.dispose();
  }
}
