/**
 * `loopx daemon --json …` as a real process, as an operator starts it: resolves with the child and
 * the one JSON document it prints once it listens (rejects with its stderr if it exits first);
 * and a loopback port free right now, for the ports a test must choose itself.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { CLI } from './cli.js';

export interface DaemonStarted {
  readonly url: string;
  readonly login_url: string;
  readonly port: number;
  readonly dev_receiver_url?: string;
}

export function spawnDaemon(
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; cwd: string },
): Promise<{ child: ChildProcessWithoutNullStreams; doc: DaemonStarted }> {
  const child = spawn(process.execPath, [...CLI, 'daemon', '--json', ...args], { cwd: options.cwd, env: options.env });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString('utf8');
      try {
        resolve({ child, doc: JSON.parse(out) as DaemonStarted });
      } catch {
        // not complete yet
      }
    });
    child.stderr.on('data', (b: Buffer) => (err += b.toString('utf8')));
    child.on('exit', (code) => reject(new Error(`loopx daemon exited ${code}: ${err}`)));
  });
}

/** SIGTERM, then the exit code once it has drained. */
export const stopDaemonProcess = (c: ChildProcessWithoutNullStreams): Promise<number | null> =>
  new Promise((r, reject) => {
    // Already gone (it exited on its own): nothing to wait for — an 'exit' listener added now would never fire.
    if (c.exitCode !== null || c.signalCode !== null) return r(c.exitCode);
    let stderr = '';
    c.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    const late = setTimeout(
      () => reject(new Error(`the daemon did not exit within 45 s of SIGTERM; its stderr ended:\n${stderr}`)),
      45_000,
    );
    c.on('exit', (code) => {
      clearTimeout(late);
      r(code);
    });
    c.kill('SIGTERM');
  });

/** A loopback port free right now (bound and released). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}
