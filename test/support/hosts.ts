/**
 * "Hosts" for the multi-daemon tests, and a PostgreSQL server of the test's own.
 *
 * - As root, each host is a network namespace the test makes (`ip netns`), joined to this one by a
 *   veth pair on a private /30 with a default route back: a daemon in it reaches the services only
 *   over that link, as a process on another machine would, and nothing leaves the box. Without
 *   root, hosts are plain processes on loopback (the fallback); `isolated` says which.
 * - The server is the machine's PostgreSQL binaries run by the `postgres` user on a fresh data
 *   directory and a free port, listening on loopback and on the services address — so a test can
 *   restart it (or kill it) without touching the shared server every other test uses.
 * Everything made here is removed after the file's tests.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups.splice(0).reverse()) {
    try {
      c();
    } catch {
      // best effort: a namespace or a server already gone
    }
  }
});

export const IS_ROOT = process.getuid?.() === 0;

export interface Host {
  /** The command prefix that runs a program on this host (`ip netns exec <ns>`, or nothing). */
  readonly prefix: readonly string[];
  readonly name: string;
}

export interface Hosts {
  readonly isolated: boolean;
  /** Where the services (database, receiver) listen, as every host reaches them. */
  readonly servicesAddress: string;
  readonly hosts: readonly Host[];
}

const run = (cmd: string, args: readonly string[]): void => {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
};

/** `n` hosts (see the header); their services address is this namespace's end of the first link. */
export function makeHosts(n: number): Hosts {
  if (!IS_ROOT)
    return {
      isolated: false,
      servicesAddress: '127.0.0.1',
      hosts: Array.from({ length: n }, (_, i) => ({ prefix: [], name: `process-${i + 1}` })),
    };
  const tag = randomInt(0x10000).toString(16).padStart(4, '0');
  const net = `10.${200 + randomInt(50)}.${randomInt(200)}`;
  const hosts: Host[] = [];
  for (let i = 1; i <= n; i++) {
    const ns = `lx${tag}h${i}`;
    const outside = `lx${tag}o${i}`;
    const inside = `lx${tag}i${i}`;
    const base = (i - 1) * 4;
    run('ip', ['netns', 'add', ns]);
    cleanups.push(() => run('ip', ['netns', 'del', ns]));
    run('ip', ['link', 'add', outside, 'type', 'veth', 'peer', 'name', inside]);
    cleanups.push(() => run('ip', ['link', 'del', outside]));
    run('ip', ['link', 'set', inside, 'netns', ns]);
    run('ip', ['addr', 'add', `${net}.${base + 1}/30`, 'dev', outside]);
    run('ip', ['link', 'set', outside, 'up']);
    run('ip', ['netns', 'exec', ns, 'ip', 'addr', 'add', `${net}.${base + 2}/30`, 'dev', inside]);
    run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', inside, 'up']);
    run('ip', ['netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
    run('ip', ['netns', 'exec', ns, 'ip', 'route', 'add', 'default', 'via', `${net}.${base + 1}`]);
    hosts.push({ prefix: ['ip', 'netns', 'exec', ns], name: ns });
  }
  return { isolated: true, servicesAddress: `${net}.1`, hosts };
}

export interface PrivatePostgres {
  readonly port: number;
  /** A URL of the server's `postgres` database at `address` (default loopback). */
  url(address?: string): string;
  /** A fast restart: every connection is cut, the server comes back on the same port. */
  restart(): void;
}

/** A free loopback port (for a server this test starts). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** The machine's PostgreSQL server binaries (the newest major version installed). */
export function binDir(): string {
  const versions = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions)
    if (existsSync(join('/usr/lib/postgresql', v, 'bin', 'initdb'))) return join('/usr/lib/postgresql', v, 'bin');
  throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
}

/** A server of the test's own (see the header), listening on loopback and `address`. */
export async function privatePostgres(address = '127.0.0.1'): Promise<PrivatePostgres> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'loopx-pg-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  const port = await freePort();
  const asPostgres = (cmd: string, args: readonly string[]): void => {
    const r = IS_ROOT
      ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args], { encoding: 'utf8' })
      : spawnSync(join(bin, cmd), args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  };
  if (IS_ROOT)
    chownSync(
      dir,
      Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
      Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
    );
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
  const listen = address === '127.0.0.1' ? '127.0.0.1' : `127.0.0.1,${address}`;
  const options = `-p ${port} -k ${dir} -c listen_addresses=${listen} -c fsync=off -c max_connections=60`;
  const ctl = (action: string, extra: readonly string[] = []) =>
    asPostgres('pg_ctl', ['-D', data, '-w', '-t', '60', '-l', join(dir, 'log'), ...extra, action]);
  // Trust over the test's private link too (the server listens there only for the hosts).
  if (address !== '127.0.0.1') appendFileSync(join(data, 'pg_hba.conf'), 'host all all 0.0.0.0/0 trust\n');
  ctl('start', ['-o', options]);
  cleanups.push(() => {
    ctl('stop', ['-m', 'immediate']);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    port,
    url: (at = '127.0.0.1') => `postgres://postgres@${at}:${port}/postgres`,
    restart: () => ctl('restart', ['-m', 'fast', '-o', options]),
  };
}
