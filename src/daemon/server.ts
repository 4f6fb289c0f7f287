/**
 * Running the daemon: one per root (an advisory lock on `<root>/locks/daemon.lock`, released by
 * process death), bound to 127.0.0.1 only, with a fresh random IPC token written owner-only to
 * `<root>/daemon/token` and a one-time login token for the UI address it prints. Stopping drains:
 * running verify jobs are aborted (their destinations removed), open requests finish, the token
 * file is removed and the lock released. While it runs, `<root>/daemon/endpoint.json` (0600) names
 * its port, so `loopx daemon login-url` can ask it for another one-time login address.
 */
import { rmSync } from 'node:fs';
import {
  conflict,
  usageError,
  tryLockExclusive,
  ensurePrivateDir,
  writeFileDurable,
  PACKAGE_ROOT,
  type HeldLock,
} from '../core/index.js';
import { join, resolve } from 'node:path';
import { assertRuntimeRoot, closeRootPools, ClusterNode, type ClusterNodeOptions } from '../runtime/index.js';
import { buildApp, type DaemonApp } from './app.js';
import type { DaemonTimeouts } from './body.js';
import { ENDPOINT_FILE, LOOPBACK } from './login-url.js';
import { LoginTokens, newToken } from './security.js';

export interface DaemonOptions {
  readonly root: string;
  readonly port?: number;
  readonly host?: string;
  readonly authorityDir?: string;
  /** The built UI; default `<package>/dist/ui`. */
  readonly uiDir?: string;
  /** The Goal work agents the UI offers (`loopx daemon --agents DIR`; default the package's examples/agents). */
  readonly agentsDir?: string;
  /** Where "Back up now" publishes by default and whose backups are listed (default: `$XDG_DATA_HOME/loopx/backups`). */
  readonly userBackupsDir?: string;
  readonly logger?: boolean | Record<string, unknown>;
  /** Header, request and body-pause limits (default DEFAULT_TIMEOUTS). */
  readonly timeouts?: Partial<DaemonTimeouts>;
  /** Join a cluster (`--cluster env:NAME`): drive its runs beside the others, one owner at a time (runtime/cluster.ts). */
  readonly cluster?: Omit<ClusterNodeOptions, 'keysDir' | 'log'>;
}

export interface RunningDaemon {
  readonly port: number;
  readonly url: string;
  /** `url` + `#login=<one-time token>`. */
  readonly loginUrl: string;
  readonly token: string;
  readonly daemon: DaemonApp;
  /** This daemon's membership of a cluster (`--cluster`), if it joined one. */
  readonly cluster: ClusterNode | undefined;
  /** Issue another one-time login address. */
  newLoginUrl(): string;
  close(): Promise<void>;
}

export { LOOPBACK, requestLoginUrl } from './login-url.js';

/** The highest TCP port; 0 asks for a free one. */
export const MAX_PORT = 65535;

export const isValidPort = (p: number): boolean => Number.isInteger(p) && p >= 0 && p <= MAX_PORT;

const portInvalid = () =>
  usageError(
    'daemon_port_invalid',
    `The port must be a whole number from 0 to ${MAX_PORT} (0: a free one).`,
    'run the same command without --port (a free port is taken)',
  );

/** The port is taken by another process (a conflict: exit 4), named so the operator can find it. */
const portInUse = (port: number) =>
  conflict('daemon_port_in_use', `Port ${port} on ${LOOPBACK} is already in use.`, {
    nextAction: 'run the same command without --port (a free port is taken), or stop what listens there',
    details: { port },
  });

/** Refuse an address the daemon never listens on: another host than loopback, or no valid port. */
function assertListenOptions(o: DaemonOptions): void {
  if (o.host !== undefined && o.host !== LOOPBACK) {
    throw usageError(
      'daemon_host_refused',
      'The daemon listens on 127.0.0.1 only.',
      'drop --host, or pass --host 127.0.0.1',
    );
  }
  if (o.port !== undefined && !isValidPort(o.port)) throw portInvalid();
}

/** The runtime root resolved and checked, with its daemon lock held — refused while another daemon serves it. */
function lockRoot(dir: string): { root: string; lock: HeldLock } {
  const root = resolve(dir);
  assertRuntimeRoot(root);
  ensurePrivateDir(join(root, 'locks'));
  const lock = tryLockExclusive(join(root, 'locks', 'daemon.lock'));
  if (!lock)
    throw conflict('daemon_already_running', 'Another loopx daemon already serves this root.', {
      nextAction: 'use the running daemon, or stop it first',
    });
  return { root, lock };
}

/** Listen on loopback at `port` (0: a free one) and return the port bound; a taken port is a conflict. */
async function listenOnLoopback(daemon: DaemonApp, port: number): Promise<number> {
  try {
    await daemon.app.listen({ host: LOOPBACK, port });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE') throw portInUse(port);
    throw e;
  }
  const address = daemon.app.server.address();
  return typeof address === 'object' && address !== null ? address.port : port;
}

/** Join the cluster `--cluster` names, if any, logging what this member does with its runs. */
async function joinCluster(o: DaemonOptions): Promise<ClusterNode | undefined> {
  // What a member of a cluster does with its runs (handoffs, takeovers, holds) is the operator's to see: one line each on stderr.
  const log = (msg: string, fields: Record<string, unknown>) =>
    void process.stderr.write(`loopx cluster: ${msg} ${JSON.stringify(fields)}\n`);
  return o.cluster
    ? await ClusterNode.join({
        ...o.cluster,
        ...(o.authorityDir !== undefined ? { keysDir: o.authorityDir } : {}),
        log,
      })
    : undefined;
}

/** Stop a daemon that served: hand off the cluster's runs, drain the jobs and requests, then remove its token and endpoint and release the lock. */
async function drainDaemon(member: ClusterNode | undefined, d: DaemonApp, root: string, lock: HeldLock): Promise<void> {
  try {
    // A member hands its runs off first (each suspends at its next turn boundary), then the rest drains.
    await member?.close();
    await d.backups.close();
    await d.adoptions.close();
    await d.drives.close();
    await d.app.close();
    await closeRootPools(); // the PostgreSQL connections of a root on PostgreSQL
  } finally {
    rmSync(join(root, 'daemon', 'token'), { force: true });
    rmSync(join(root, 'daemon', ENDPOINT_FILE), { force: true });
    lock.release();
  }
}

export async function startDaemon(o: DaemonOptions): Promise<RunningDaemon> {
  assertListenOptions(o);
  const { root, lock } = lockRoot(o.root);
  let daemon: DaemonApp | undefined;
  let node: ClusterNode | undefined;
  try {
    // A daemon killed hard leaves its endpoint file: gone before the new token exists, so
    // `login-url` never pairs the new token with an old port.
    rmSync(join(root, 'daemon', ENDPOINT_FILE), { force: true });
    const token = newToken();
    ensurePrivateDir(join(root, 'daemon'));
    writeFileDurable(join(root, 'daemon', 'token'), `${token}\n`, { mode: 0o600 });
    const loginTokens = new LoginTokens();
    let port = o.port ?? 0;
    daemon = await buildApp({
      root,
      token,
      loginTokens,
      port: () => port,
      ...(o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {}),
      uiDir: o.uiDir ?? (PACKAGE_ROOT ? join(PACKAGE_ROOT, 'dist', 'ui') : undefined),
      ...(o.agentsDir !== undefined ? { agentsDir: o.agentsDir } : {}),
      ...(o.userBackupsDir !== undefined ? { userBackupsDir: o.userBackupsDir } : {}),
      ...(o.logger !== undefined ? { logger: o.logger } : {}),
      ...(o.timeouts !== undefined ? { timeouts: o.timeouts } : {}),
    });
    port = await listenOnLoopback(daemon, port);
    const url = `http://${LOOPBACK}:${port}/`;
    writeFileDurable(join(root, 'daemon', ENDPOINT_FILE), `${JSON.stringify({ port })}\n`, { mode: 0o600 });
    const d = daemon;
    node = await joinCluster(o);
    const member = node;
    let closed = false;
    return {
      port,
      url,
      loginUrl: `${url}#login=${loginTokens.issue()}`,
      token,
      daemon: d,
      cluster: member,
      newLoginUrl: () => `${url}#login=${loginTokens.issue()}`,
      async close() {
        if (closed) return;
        closed = true;
        await drainDaemon(member, d, root, lock);
      },
    };
  } catch (e) {
    await node?.close().catch(() => undefined);
    await daemon?.app.close().catch(() => undefined);
    // A daemon that never served leaves no token behind for `login-url` to find.
    rmSync(join(root, 'daemon', 'token'), { force: true });
    lock.release();
    throw e;
  }
}
