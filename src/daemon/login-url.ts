/**
 * Asking a running daemon for another one-time login address (`loopx daemon login-url`). Kept
 * apart from the server (server.ts) so that asking loads core only — never Fastify, the app or the
 * runtime: the daemon's own files under the root and one loopback request are all it reads.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { internal, notFound, readRegularFileOnce, tryLockExclusive } from '../core/index.js';

export const LOOPBACK = '127.0.0.1';
/** `<root>/daemon/endpoint.json`: the running daemon's port (written by server.ts). */
export const ENDPOINT_FILE = 'endpoint.json';

const notRunning = () =>
  notFound('daemon_not_running', 'No loopx daemon serves this root.', { nextAction: 'start it: loopx daemon' });

/**
 * A new one-time login address from the daemon serving `root` (it must be running: its lock is
 * held). Reads the port and the IPC token from the root's private daemon directory and asks the
 * daemon over loopback; throws `daemon_not_running` (not found) when no daemon answers there.
 */
export async function requestLoginUrl(rootDir: string): Promise<string> {
  const root = resolve(rootDir);
  if (!existsSync(join(root, 'locks'))) throw notRunning();
  const probe = tryLockExclusive(join(root, 'locks', 'daemon.lock'));
  if (probe) {
    probe.release();
    throw notRunning();
  }
  const read = (name: string): string | null => {
    const bytes = readRegularFileOnce(join(root, 'daemon', name), 4096);
    return bytes === null ? null : Buffer.from(bytes).toString('utf8').trim();
  };
  let token: string | null;
  let port: number;
  try {
    token = read('token');
    const endpoint = read(ENDPOINT_FILE);
    port = endpoint === null ? NaN : Number((JSON.parse(endpoint) as { port?: unknown }).port);
  } catch {
    throw notRunning(); // a daemon still starting, or files not its own: no address to ask
  }
  if (token === null || !Number.isInteger(port) || port <= 0 || port > 65535) throw notRunning();
  let res: Response;
  try {
    res = await fetch(`http://${LOOPBACK}:${port}/api/session/login-urls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
  } catch {
    throw notRunning();
  }
  const body = (await res.json().catch(() => null)) as { login_url?: unknown; error?: { code?: unknown } } | null;
  if (res.status !== 201 || typeof body?.login_url !== 'string') {
    throw internal(
      'daemon_login_url_refused',
      `The daemon refused a new login address (${typeof body?.error?.code === 'string' ? body.error.code : `HTTP ${res.status}`}).`,
      {
        nextAction: 'restart the daemon: stop it, then loopx daemon',
      },
    );
  }
  return body.login_url;
}
