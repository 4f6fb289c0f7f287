/**
 * The dev receiver: the webhook sink (./webhook-sink.ts) at a fixed loopback port with its journal
 * outside any root, in `$XDG_STATE_HOME/loopx/dev-receiver/` (default `~/.local/state/…`). It stands
 * in for the external system the sample Goal delivers to, so it must outlive the root and every
 * daemon restart, as a real receiver would: a recovered Goal asks it for its original operation
 * ids, and a continued Goal delivers to it again under its new lifetime.
 *
 * `loopx daemon` reopens it on each start (when it seeds the sample, or when this machine's journal
 * exists). A second daemon on the same machine finds it already answering on the port and shares it
 * (`GET /` names the service); a port held by anything else is refused `dev_receiver_port_taken`.
 * Its failure controls (`POST /control`) are off: nothing but deliveries and fences reach it.
 */
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { ensurePrivateDir, usageError, xdgHome } from '../core/index.js';
import { SINK_SERVICE, startWebhookSink } from './webhook-sink.js';

/** The documented default port; `LOOPX_DEV_RECEIVER_PORT` or `loopx daemon --dev-receiver-port` changes it. */
export const DEV_RECEIVER_PORT = 41338;

export interface DevReceiver {
  /** `http://127.0.0.1:<port>/deliveries`: where Goal work delivers. */
  readonly deliveriesUrl: string;
  readonly port: number;
  /** True when another process on this machine already serves it (this one opened nothing). */
  readonly shared: boolean;
  close(): Promise<void>;
}

/** `$XDG_STATE_HOME/loopx/dev-receiver` (an absolute XDG_STATE_HOME only), else `~/.local/state/loopx/dev-receiver`. */
export function devReceiverDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdgHome('state', env), 'loopx', 'dev-receiver');
}

export const devReceiverJournal = (env: NodeJS.ProcessEnv = process.env): string =>
  join(devReceiverDir(env), 'journal.jsonl');

/** Whether this machine's dev receiver has ever stored anything (its journal exists). */
export const devReceiverUsed = (env: NodeJS.ProcessEnv = process.env): boolean => existsSync(devReceiverJournal(env));

/** The port: the one given, else `LOOPX_DEV_RECEIVER_PORT` (0: any free one, for tests), else the default. */
export function devReceiverPort(given?: number, env: NodeJS.ProcessEnv = process.env): number {
  if (given !== undefined) return given;
  const fromEnv = env.LOOPX_DEV_RECEIVER_PORT;
  if (fromEnv === undefined || fromEnv === '') return DEV_RECEIVER_PORT;
  if (!/^\d{1,5}$/.test(fromEnv) || Number(fromEnv) > 65535)
    throw usageError(
      'dev_receiver_port_invalid',
      'LOOPX_DEV_RECEIVER_PORT must be a port from 0 to 65535.',
      'unset LOOPX_DEV_RECEIVER_PORT',
    );
  return Number(fromEnv);
}

/** Opens the dev receiver on `port`, or shares the one this machine already serves there. */
export async function openDevReceiver(port: number, env: NodeJS.ProcessEnv = process.env): Promise<DevReceiver> {
  ensurePrivateDir(devReceiverDir(env));
  try {
    const sink = await startWebhookSink({ port, journalPath: devReceiverJournal(env), control: false });
    return { deliveriesUrl: sink.deliveriesUrl, port: sink.port, shared: false, close: () => sink.close() };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
  }
  if (!(await answersAsSink(port)))
    throw usageError(
      'dev_receiver_port_taken',
      `Port ${port} on 127.0.0.1 is taken by something that is not a loopx dev receiver.`,
      'choose a free port: loopx daemon --dev-receiver-port PORT',
    );
  return { deliveriesUrl: `http://127.0.0.1:${port}/deliveries`, port, shared: true, close: async () => undefined };
}

async function answersAsSink(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(5_000) });
    const body = (await res.json()) as { service?: unknown };
    return res.ok && body.service === SINK_SERVICE;
  } catch {
    return false;
  }
}
