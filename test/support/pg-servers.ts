/**
 * PostgreSQL servers of a test's own, for the physical-restore and failover tests: the machine's
 * server binaries run as the `postgres` OS user on data directories under a temporary directory,
 * each on a free loopback port — a primary that archives its WAL, a base backup of it
 * (`pg_basebackup`), a server started from that backup (as it is, to a recovery target replayed
 * from the archive, or as a streaming standby), promotion, an immediate stop (a crash) and a start
 * again. Settings go into each data directory's `postgresql.auto.conf`, so a copy never archives
 * into its original's archive. Everything made here is stopped and removed after the file's tests.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll } from 'vitest';
import { IS_ROOT, binDir, freePort } from './hosts.js';

const servers: PgServer[] = [];
const addresses: ServiceAddress[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const a of addresses.splice(0)) a.close();
  for (const s of servers.splice(0).reverse()) s.stopQuietly();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Whether this machine can run servers of a test's own (the binaries, and a `postgres` user when run as root). */
export const canRunServers = (): boolean => {
  try {
    binDir();
    return !IS_ROOT || spawnSync('id', ['-u', 'postgres']).status === 0;
  } catch {
    return false;
  }
};

const owner = (): { uid: number; gid: number } => ({
  uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
  gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
});

/** A directory the server user owns (removed after the file's tests). */
function serverDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  if (IS_ROOT) {
    const { uid, gid } = owner();
    chownSync(dir, uid, gid);
  }
  return dir;
}

/** A server binary run as the server user; its stdout. */
function asPostgres(cmd: string, args: readonly string[], input?: string): string {
  const bin = join(binDir(), cmd);
  const r = IS_ROOT
    ? spawnSync('runuser', ['-u', 'postgres', '--', bin, ...args], { encoding: 'utf8', input })
    : spawnSync(bin, args, { encoding: 'utf8', input });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** Settings as `postgresql.auto.conf` lines (written as the server user would). */
function configure(data: string, settings: Readonly<Record<string, string>>): void {
  const lines = Object.entries(settings).map(([k, v]) => `${k} = '${v.replace(/'/g, "''")}'\n`);
  appendFileSync(join(data, 'postgresql.auto.conf'), lines.join(''));
  if (IS_ROOT) {
    const { uid, gid } = owner();
    chownSync(join(data, 'postgresql.auto.conf'), uid, gid);
  }
}

export interface RecoveryTarget {
  /** The server whose WAL archive is replayed. */
  readonly archiveOf: PgServer;
  readonly lsn?: string;
  readonly time?: string;
}

export class PgServer {
  private running = false;
  private constructor(
    /** The directory holding the data directory, the socket and the log. */
    readonly dir: string,
    readonly port: number,
    /** Where this server archives its WAL (null: it does not). */
    readonly archive: string | null,
  ) {
    servers.push(this);
  }

  get data(): string {
    return join(this.dir, 'data');
  }

  /** A new cluster (`initdb`), started; `archive` archives every WAL segment into a directory of its own. */
  static async fresh(options: { readonly archive?: boolean } = {}): Promise<PgServer> {
    const dir = serverDir('loopx-pgsrv-');
    const archive = options.archive === true ? join(dir, 'archive') : null;
    asPostgres('initdb', ['-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions']);
    const server = new PgServer(dir, await freePort(), archive);
    configure(server.data, {
      fsync: 'off',
      max_connections: '60',
      wal_level: 'replica',
      ...(archive === null
        ? {}
        : { archive_mode: 'on', archive_command: `test ! -f ${archive}/%f && cp %p ${archive}/%f` }),
    });
    if (archive !== null) {
      mkdirSync(archive);
      if (IS_ROOT) chownSync(archive, owner().uid, owner().gid);
    }
    server.start();
    return server;
  }

  /**
   * A server started from `backup` (a directory `baseBackup` made) on a port of its own: as the
   * backup is (crash recovery, the same timeline), replaying the archive to `recovery` and promoting
   * (a new timeline), or as a streaming standby when the backup was taken with `standby`.
   */
  static async fromBackup(backup: string, options: { readonly recovery?: RecoveryTarget } = {}): Promise<PgServer> {
    const dir = serverDir('loopx-pgcopy-');
    execFileSync('mv', [backup, join(dir, 'data')]);
    const server = new PgServer(dir, await freePort(), null);
    const recovery = options.recovery;
    configure(server.data, {
      archive_mode: 'off',
      ...(recovery === undefined
        ? {}
        : {
            restore_command: `cp ${recovery.archiveOf.archive!}/%f %p`,
            recovery_target_action: 'promote',
            ...(recovery.lsn === undefined ? {} : { recovery_target_lsn: recovery.lsn }),
            ...(recovery.time === undefined ? {} : { recovery_target_time: recovery.time }),
          }),
    });
    if (recovery !== undefined) writeFileSync(join(server.data, 'recovery.signal'), '');
    if (IS_ROOT && recovery !== undefined) {
      const { uid, gid } = owner();
      chownSync(join(server.data, 'recovery.signal'), uid, gid);
    }
    server.start();
    return server;
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** A base backup (`pg_basebackup`, WAL streamed with it; `standby`: `-R`, a standby of this server). */
  baseBackup(options: { readonly standby?: boolean } = {}): string {
    const target = join(serverDir('loopx-pgbase-'), 'backup');
    asPostgres('pg_basebackup', [
      '-D',
      target,
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      '-U',
      'postgres',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
      ...(options.standby === true ? ['-R'] : []),
    ]);
    return target;
  }

  /** One statement through psql as the server user; its output, trimmed. */
  sql(text: string, database = 'postgres'): string {
    return asPostgres('psql', [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.port),
      '-U',
      'postgres',
      '-d',
      database,
      '-tAqc',
      text,
    ]).trim();
  }

  /** Polls `text` until it answers `expected` (generous: a slow machine waits, a fast one does not). */
  async until(text: string, expected: string, database = 'postgres'): Promise<void> {
    for (let i = 0; i < 1200; i++) {
      try {
        if (this.sql(text, database) === expected) return;
      } catch {
        // starting up
      }
      await sleep(50);
    }
    throw new Error(`${text} never answered ${expected} on port ${this.port}`);
  }

  /** The current WAL segment switched and archived (so a recovery can replay up to here). */
  async archiveNow(): Promise<void> {
    const segment = this.sql('SELECT pg_walfile_name(pg_current_wal_lsn())');
    this.sql('SELECT pg_switch_wal()');
    for (let i = 0; i < 1200 && !existsSync(join(this.archive!, segment)); i++) await sleep(50);
    if (!existsSync(join(this.archive!, segment))) throw new Error(`segment ${segment} was never archived`);
  }

  private ctl(action: string, extra: readonly string[] = []): void {
    asPostgres('pg_ctl', ['-D', this.data, '-w', '-t', '120', '-l', join(this.dir, 'log'), ...extra, action]);
  }

  start(): void {
    this.ctl('start', ['-o', `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1`]);
    this.running = true;
  }

  /** `immediate`: the server dies as in a crash (no checkpoint, connections cut). */
  stop(mode: 'fast' | 'immediate' = 'fast'): void {
    this.ctl('stop', ['-m', mode]);
    this.running = false;
  }

  /** A standby promoted to a primary (a new timeline). */
  promote(): void {
    this.ctl('promote');
  }

  stopQuietly(): void {
    if (!this.running) return;
    try {
      this.stop('immediate');
    } catch {
      // already gone
    }
  }
}

/**
 * A service address in front of the servers a failover moves between (what a virtual IP or a DNS
 * name is to an operator): one port on loopback and on `address` (the hosts' link), forwarding to
 * the server it points at on loopback. `point` moves it and cuts every connection it carried.
 */
export class ServiceAddress {
  private readonly servers: Server[] = [];
  private readonly sockets = new Set<Socket>();
  private constructor(
    readonly port: number,
    private target: number,
  ) {}

  static async start(target: PgServer, address = '127.0.0.1'): Promise<ServiceAddress> {
    const s = new ServiceAddress(await freePort(), target.port);
    for (const host of new Set(['127.0.0.1', address])) {
      const server = createServer((client) => s.carry(client));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(s.port, host, () => resolve());
      });
      s.servers.push(server);
    }
    addresses.push(s);
    return s;
  }

  private carry(client: Socket): void {
    const upstream = connect(this.target, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream).pipe(client);
  }

  url(address = '127.0.0.1', database = 'postgres'): string {
    return `postgres://postgres@${address}:${this.port}/${database}`;
  }

  /** The address moved to `server`: every connection it carried is cut, new ones reach `server`. */
  point(server: PgServer): void {
    this.target = server.port;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
    for (const server of this.servers) server.close();
  }
}
