/**
 * Backup repositories, end to end through the built CLI (`node bin/loopx.js …` children, like
 * bench/cold-start.bench.ts), on the root bench/backup.bench.ts builds (its `buildRoot` with real
 * work stores: 4 Goals × 20,000 committed transactions, owner databases, documents, 31 MiB of
 * attachments and transcripts):
 *
 *   1. `backup-state --execute --repo R`, plaintext and `--encrypt --recipient loopx-x25519-pub:…`,
 *      into a directory repository and into s3rver on loopback (test/support/s3.ts
 *      `startS3WithProxy`: s3rver behind the fault proxy, which honours `If-None-Match: *` as S3
 *      does — bare s3rver does not and `repo init` refuses it; both run inside this process, on the
 *      same 2 cores as the child, and the CPU they spend is reported). Same-run baseline: restic
 *      0.14 backing up the same root into a local repository (restic always encrypts; its
 *      repository v2 compresses) after `sqlite3 .backup` of each of the root's SQLite databases into
 *      a staging directory that it backs up too — what an operator runs. Twice: into an empty
 *      repository (`restic init` before each round, not timed: the same work as a loopx backup,
 *      everything read and written) and into the repository initialized once, which holds the
 *      previous round's snapshot (restic's everyday incremental backup). A fifth loopx case,
 *      `--output-dir` (no repository), is the reference each repository case is also set against.
 *   2. `backup-state verify --execute --repo <s3rver> --backup-id B` (fetched into --spool, then
 *      verified) of the last round's plaintext backup into s3rver, beside `backup-state verify
 *      --execute --archive A --manifest M` of the same pair, downloaded once beforehand; and of the
 *      last round's encrypted backup (`--key file:K`), beside the same local pair.
 *
 * Each backup uses a fresh backup id, each verify a fresh destination. Setup is not timed
 * (`repo init`, `repo key new`, `restic init` of the incremental repository, the download of the
 * pair). One warm-up round, then SAMPLES rounds; each round runs every case once, in an order
 * that rotates from round to round, the file system synced before each; medians per case. Wall
 * time from spawn to exit, Node start included. Peak RSS: GNU time's %M — the largest resident set
 * of the child and of the processes it waited for (verify: the larger of the verify process and its
 * owner worker). Targets: none set; the issue asks for the figures beside restic (printed, never
 * asserted).
 *
 * Measured 2026-12-07 at b14f0c6 (2-core shared machine, load average 4–9 from another session's
 * test suite: a sample's wall time moves by ±1–2 s; read the ranges, and the CPU), five runs of
 * 4¼–6 min. Speed against restic's first backup + sqlite3 .backup (2.4–3.7 s; CPU 2.0–2.1 s; peak
 * RSS 100–122 MiB): --output-dir 0.36–0.45×, directory repository 0.34–0.48× plaintext and
 * 0.33–0.45× encrypted, s3rver 0.28–0.46× and 0.30–0.41×; against restic's next backup (1.5–1.8 s,
 * CPU 0.5–1.0 s) 0.13–0.27×. The loopx child: CPU 6.1–7.8 s, peak RSS 216–234 MiB (once 265 MiB,
 * encrypted); s3rver + proxy 0.6–0.8 s CPU per backup. Encrypted against plaintext 0.93–1.09×
 * (directory), 0.87–1.20× (s3rver). Verify from s3rver against the same pair from local files: cost
 * 1.09–1.48× plaintext, 1.27–1.57× encrypted (+0.3–2.0 s; peak RSS 134–164 MiB against 127–133
 * MiB). Where a backup's time goes (timed in-process around `backupToRepository`'s `make` at load
 * 7–9): the create itself, 6.9–11 s (≥ 86 %) — the owners' capture, as in bench/backup.bench.ts —
 * then publication, 0.08–0.09 s into a directory repository plaintext, 0.2–0.5 s encrypted,
 * 0.9–1.5 s into s3rver; an S3 child also loads the AWS SDK (0.25 s CPU). restic does less per
 * byte: no owner capture, integrity check or second snapshot of each database
 * (bench/backup.bench.ts), and zstd where loopx gzips.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { startS3WithProxy, type S3ServerWithProxy } from '../test/support/s3.js';
import { COMMITS_PER_GOAL, GOALS, buildRoot, median, sqliteFiles } from './backup.bench.js';
import type { BenchFigure } from './harness.js';

const MiB = 1024 * 1024;
const SAMPLES = 3;
const WARMUP = 1;
const GNU_TIME = '/usr/bin/time';
const S3_CREDENTIALS_ENV = 'LOOPX_BENCH_S3_CREDENTIALS';
const TARGET = 'reported (no target set)';

/** One timed child. */
interface Sample {
  readonly seconds: number;
  /** KiB (GNU time %M), or null without /usr/bin/time. */
  readonly peakKiB: number | null;
  /** CPU seconds (user + system, GNU time %U + %S) of the child and the processes it waited for, or null. */
  readonly cpu: number | null;
  /** CPU seconds this process spent meanwhile: s3rver and the proxy (nothing else runs in it). */
  readonly serverCpu: number;
  readonly stdout: string;
}

interface Bench {
  readonly base: string;
  /** The checkout: bin/loopx.js, and the children's working directory. */
  readonly cwd: string;
  readonly bin: string;
  readonly env: NodeJS.ProcessEnv;
  readonly root: string;
  /** --root and --authority-dir, private to the benchmark. */
  readonly at: readonly string[];
  readonly databases: readonly string[];
  readonly sqlite3: boolean;
}

/** The checkout: the nearest directory above this module with bin/loopx.js (bench/ from source, dist/bench/ built). */
function checkout(): string {
  for (let d = import.meta.dirname; ; d = dirname(d)) {
    if (existsSync(join(d, 'bin', 'loopx.js')) && existsSync(join(d, 'package.json'))) return d;
    if (dirname(d) === d) throw new Error(`bench repository: no bin/loopx.js above ${import.meta.dirname}`);
  }
}

/** Seconds from spawning `command` to its exit; with `rssFile`, run under GNU time for its peak RSS. */
function spawnTimed(b: Bench, command: string, args: readonly string[], rssFile?: string): Promise<Sample> {
  const [cmd, argv] =
    rssFile === undefined ? [command, args] : [GNU_TIME, ['-f', '%M %U %S', '-o', rssFile, command, ...args]];
  return new Promise((resolve, reject) => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const child = spawn(cmd, argv, { cwd: b.cwd, env: b.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => {
      const seconds = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(c0);
      if (status !== 0)
        return reject(new Error(`${command} ${args.join(' ')} failed (exit ${status}): ${stderr}${stdout}`));
      const serverCpu = (cpu.user + cpu.system) / 1e6;
      if (rssFile === undefined) return resolve({ seconds, peakKiB: null, cpu: null, serverCpu, stdout });
      const [peakKiB, user, system] = readFileSync(rssFile, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
      resolve({ seconds, peakKiB: peakKiB!, cpu: user! + system!, serverCpu, stdout });
    });
  });
}

const rssFileOf = (b: Bench): string | undefined => (existsSync(GNU_TIME) ? join(b.base, 'peak-rss') : undefined);

/** One `loopx …` child, in the benchmark's private environment, with --json. */
const loopx = (b: Bench, args: readonly string[]): Promise<Sample> =>
  spawnTimed(b, process.execPath, [b.bin, ...args, ...b.at, '--json'], rssFileOf(b));

/** `sqlite3 .backup` of every database into a staging directory, then `restic backup` of the root and it. */
async function restic(b: Bench, repository: string): Promise<Sample> {
  const staging = join(b.base, 'restic-staging');
  mkdirSync(staging, { mode: 0o700 });
  try {
    const t0 = performance.now();
    let cpu: number | null = 0;
    if (b.sqlite3)
      for (const [i, file] of b.databases.entries()) {
        const s = await spawnTimed(b, 'sqlite3', [file, `.backup '${join(staging, `db-${i}.db`)}'`], rssFileOf(b));
        cpu = s.cpu === null || cpu === null ? null : cpu + s.cpu;
      }
    const args = ['backup', '--repo', repository, '--quiet', '--host', 'bench', b.root, staging];
    const r = await spawnTimed(b, 'restic', args, rssFileOf(b));
    const both = cpu === null || r.cpu === null ? null : cpu + r.cpu;
    return { ...r, seconds: (performance.now() - t0) / 1000, cpu: both };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const resticInit = (b: Bench, repository: string): Promise<Sample> =>
  spawnTimed(b, 'restic', ['init', '--repo', repository, '--quiet']);

/** Flush dirty pages (untimed) so that no sample pays for the previous one's writeback. */
const settle = (): void => void spawnSync('sync');

type Case<K extends string> = readonly [K, (round: number) => Promise<Sample>];

/** WARMUP + SAMPLES rounds, every case once per round in an order rotating by round; the samples after warm-up. */
async function rounds<K extends string>(cases: readonly Case<K>[]): Promise<Map<K, Sample[]>> {
  const out = new Map<K, Sample[]>(cases.map(([k]) => [k, []]));
  for (let round = 0; round < WARMUP + SAMPLES; round++) {
    for (let k = 0; k < cases.length; k++) {
      const [key, run] = cases[(round + k) % cases.length]!;
      settle();
      const s = await run(round);
      if (round >= WARMUP) out.get(key)!.push(s);
    }
  }
  return out;
}

const secondsOf = (xs: readonly Sample[]): number => median(xs.map((x) => x.seconds));
const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;
const peakOf = (xs: readonly Sample[]): string => {
  const k = xs.map((x) => x.peakKiB).filter((v): v is number => v !== null);
  return k.length === 0 ? 'n/a (no /usr/bin/time)' : `${(Math.max(...k) / 1024).toFixed(0)} MiB`;
};
const serverCpuOf = (xs: readonly Sample[]): string => `${median(xs.map((x) => x.serverCpu)).toFixed(2)} s`;
/** Median CPU seconds of the child, or null without /usr/bin/time. */
const cpuOf = (xs: readonly Sample[]): number | null =>
  xs.some((x) => x.cpu === null) ? null : median(xs.map((x) => x.cpu!));
const cpuText = (xs: readonly Sample[]): string => {
  const c = cpuOf(xs);
  return c === null ? 'n/a' : `${c.toFixed(2)} s`;
};
const signed = (s: number): string => `${s < 0 ? '−' : '+'}${Math.abs(s).toFixed(3)} s`;

interface Repositories {
  readonly dir: string;
  readonly s3: string;
  readonly recipient: string;
  readonly keyFile: string;
  /** restic's repository initialized once (the incremental baseline). */
  readonly resticOnce: string;
}

type BackupKey = 'output-dir' | 'dir' | 'dir-encrypted' | 's3' | 's3-encrypted' | 'restic-first' | 'restic-next';

/** A backup into `url`, its repository entry checked to be encrypted exactly when a recipient is given. */
async function intoRepository(b: Bench, url: string, id: string, recipient?: string): Promise<Sample> {
  const encrypt = recipient === undefined ? [] : ['--encrypt', '--recipient', recipient];
  const s = await loopx(b, ['backup-state', '--execute', '--repo', url, '--backup-id', id, ...encrypt]);
  const out = JSON.parse(s.stdout) as { entry: { encrypted: boolean } };
  if (out.entry.encrypted !== (recipient !== undefined)) throw new Error(`bench repository: ${id} encrypted?`);
  return s;
}

function backupCases(b: Bench, r: Repositories): Case<BackupKey>[] {
  return [
    [
      'output-dir',
      async (round) => {
        const out = join(b.base, `out-${round}`);
        const s = await loopx(b, ['backup-state', '--execute', '--output-dir', out, '--backup-id', `out-r${round}`]);
        rmSync(out, { recursive: true, force: true });
        return s;
      },
    ],
    ['dir', (round) => intoRepository(b, r.dir, `plain-r${round}`)],
    ['dir-encrypted', (round) => intoRepository(b, r.dir, `enc-r${round}`, r.recipient)],
    ['s3', (round) => intoRepository(b, r.s3, `plain-r${round}`)],
    ['s3-encrypted', (round) => intoRepository(b, r.s3, `enc-r${round}`, r.recipient)],
    [
      'restic-first',
      async (round) => {
        const repository = join(b.base, `restic-first-${round}`);
        await resticInit(b, repository);
        try {
          return await restic(b, repository);
        } finally {
          rmSync(repository, { recursive: true, force: true });
        }
      },
    ],
    ['restic-next', () => restic(b, r.resticOnce)],
  ];
}

const LABEL: Record<Exclude<BackupKey, 'output-dir' | 'restic-first' | 'restic-next'>, string> = {
  dir: 'a directory repository, plaintext',
  'dir-encrypted': 'a directory repository, encrypted (--encrypt --recipient loopx-x25519-pub:…)',
  s3: 's3rver on loopback (behind the conditional-write proxy), plaintext',
  's3-encrypted': 's3rver on loopback (behind the conditional-write proxy), encrypted',
};

function backupFigures(b: Bench, rootName: string, s: Map<BackupKey, Sample[]>): BenchFigure[] {
  const get = (k: BackupKey) => s.get(k)!;
  const [first, next, reference] = [get('restic-first'), get('restic-next'), get('output-dir')];
  const common = {
    baselineName: `restic backup, empty repository${b.sqlite3 ? ' + sqlite3 .backup' : ' (no sqlite3 CLI)'}`,
    baselineSeconds: secondsOf(first),
    target: TARGET,
    ratioKind: 'speed',
  } as const;
  const out: BenchFigure[] = [
    {
      ...common,
      name: `backup-state --execute --output-dir (no repository: the reference), ${rootName}`,
      seconds: secondsOf(reference),
      extra:
        `loopx child: CPU ${cpuText(reference)}, peak RSS ${peakOf(reference)}\n` +
        `  restic, first backup: CPU ${cpuText(first)} (sqlite3 included), peak RSS ${peakOf(first)}; ` +
        `next backup (its repository holding the previous round's snapshot): ${secondsOf(next).toFixed(3)} s, CPU ${cpuText(next)}, peak RSS ${peakOf(next)}`,
    },
  ];
  for (const k of ['dir', 'dir-encrypted', 's3', 's3-encrypted'] as const) {
    const xs = get(k);
    const seconds = secondsOf(xs);
    const [cpu, cpu0] = [cpuOf(xs), cpuOf(reference)];
    const cpuRatio = cpu === null || cpu0 === null ? '' : `, ${(cpu / cpu0).toFixed(2)}× CPU`;
    const server = k.startsWith('s3') ? `; s3rver + proxy CPU (this process) ${serverCpuOf(xs)}` : '';
    out.push({
      ...common,
      name: `backup-state --execute --repo <${LABEL[k]}>`,
      seconds,
      extra:
        `loopx child: CPU ${cpuText(xs)}, peak RSS ${peakOf(xs)}${server}\n` +
        `  against --output-dir (same rounds): cost ${(seconds / secondsOf(reference)).toFixed(2)}× wall${cpuRatio}; ` +
        `against restic's next backup: speed ${(secondsOf(next) / seconds).toFixed(2)}×`,
    });
  }
  for (const [enc, plain, where] of [
    ['dir-encrypted', 'dir', 'directory repository'],
    ['s3-encrypted', 's3', 's3rver'],
  ] as const)
    out.push({
      name: `  encrypted against plaintext, ${where} (same root, same run)`,
      seconds: secondsOf(get(enc)),
      baselineName: 'plaintext',
      baselineSeconds: secondsOf(get(plain)),
      target: TARGET,
      ratioKind: 'cost',
    });
  return out;
}

type VerifyKey = 's3' | 'files' | 's3-encrypted';
/** The backups verified: the last round's plaintext and encrypted backups into s3rver. */
const VERIFIED = { plain: `plain-r${WARMUP + SAMPLES - 1}`, encrypted: `enc-r${WARMUP + SAMPLES - 1}` } as const;

interface Pair {
  readonly archive: string;
  readonly manifest: string;
  readonly archiveBytes: number;
}

/** The plaintext pair of backup `id` of the S3 repository under `prefix`, downloaded (untimed) into `dir`. */
async function download(s3: S3ServerWithProxy, prefix: string, id: string, dir: string): Promise<Pair> {
  mkdirSync(dir, { mode: 0o700 });
  const client = s3.client();
  try {
    for (const name of [`${id}.tar.gz`, `${id}.manifest.json`]) {
      const got = await client.send(
        new GetObjectCommand({ Bucket: s3.bucket, Key: `${prefix}/backups/${id}/${name}` }),
      );
      await pipeline(got.Body as Readable, createWriteStream(join(dir, name), { mode: 0o600 }));
    }
  } finally {
    client.destroy();
  }
  const archive = join(dir, `${id}.tar.gz`);
  return { archive, manifest: join(dir, `${id}.manifest.json`), archiveBytes: statSync(archive).size };
}

/** The part of verify's --json summary read here. */
interface Verified {
  readonly phase: string;
}

function verifyCases(b: Bench, r: Repositories, pair: Pair): Case<VerifyKey>[] {
  const spool = join(b.base, 'spool');
  mkdirSync(spool, { mode: 0o700 });
  const verify = async (key: VerifyKey, round: number, source: readonly string[]): Promise<Sample> => {
    const destination = join(b.base, `verified-${key}-${round}`);
    try {
      const s = await loopx(b, ['backup-state', 'verify', ...source, '--destination', destination, '--execute']);
      if ((JSON.parse(s.stdout) as Verified).phase === undefined) throw new Error(`verify ${key}: no audit`);
      return s;
    } finally {
      rmSync(destination, { recursive: true, force: true });
    }
  };
  const fromRepo = ['--repo', r.s3, '--spool', spool, '--backup-id'];
  return [
    ['s3', (round) => verify('s3', round, [...fromRepo, VERIFIED.plain])],
    ['files', (round) => verify('files', round, ['--archive', pair.archive, '--manifest', pair.manifest])],
    [
      's3-encrypted',
      (round) => verify('s3-encrypted', round, [...fromRepo, VERIFIED.encrypted, '--key', `file:${r.keyFile}`]),
    ],
  ];
}

function verifyFigures(pair: Pair, s: Map<VerifyKey, Sample[]>): BenchFigure[] {
  const files = s.get('files')!;
  const baseline = secondsOf(files);
  const phase = (xs: Sample[]) => (JSON.parse(xs[0]!.stdout) as Verified).phase;
  const common = {
    baselineName: 'verify --archive --manifest (the same pair, local files)',
    baselineSeconds: baseline,
    target: TARGET,
    ratioKind: 'cost',
  } as const;
  const extra = (k: VerifyKey) => {
    const xs = s.get(k)!;
    return (
      `verify child: CPU ${cpuText(xs)} (local: ${cpuText(files)}), peak RSS ${peakOf(xs)} (local: ${peakOf(files)}); ` +
      `s3rver + proxy CPU (this process) ${serverCpuOf(xs)}\n` +
      `  over local files (medians): wall ${signed(secondsOf(xs) - baseline)}; audit ${phase(xs)} (local: ${phase(files)})`
    );
  };
  return [
    {
      ...common,
      name: `backup-state verify --execute --repo <s3rver> --backup-id B (plaintext; archive ${mib(pair.archiveBytes)})`,
      seconds: secondsOf(s.get('s3')!),
      extra: extra('s3'),
    },
    {
      ...common,
      name: '  the same, of an encrypted backup of the same root (--key file:K)',
      seconds: secondsOf(s.get('s3-encrypted')!),
      extra: extra('s3-encrypted'),
    },
  ];
}

/** The repositories, the key and restic's once-initialized repository; not timed. */
async function setUp(b: Bench, s3: S3ServerWithProxy): Promise<Repositories> {
  const dir = join(b.base, 'repo-dir');
  const url = `s3://${s3.bucket}/bench?endpoint=${s3.endpoint}&path_style=true&credentials=env:${S3_CREDENTIALS_ENV}`;
  for (const repo of [dir, url]) await loopx(b, ['repo', 'init', '--repo', repo]);
  const keyFile = join(b.base, 'keys', 'bench.key');
  mkdirSync(dirname(keyFile), { mode: 0o700 });
  const made = await loopx(b, ['repo', 'key', 'new', '--out', keyFile]);
  const { recipient } = JSON.parse(made.stdout) as { recipient: string };
  const resticOnce = join(b.base, 'restic-once');
  await resticInit(b, resticOnce);
  return { dir, s3: url, recipient, keyFile, resticOnce };
}

function environment(base: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    LOOPX_HOME: join(base, 'home'),
    XDG_STATE_HOME: join(base, 'state'),
    XDG_DATA_HOME: join(base, 'data'),
    XDG_CACHE_HOME: join(base, 'cache'),
    RESTIC_PASSWORD: 'loopx-bench',
    RESTIC_CACHE_DIR: join(base, 'restic-cache'),
    [S3_CREDENTIALS_ENV]: 'S3RVER:S3RVER',
  };
}

async function prepare(base: string): Promise<{ b: Bench; rootName: string }> {
  const cwd = checkout();
  if (!existsSync(join(cwd, 'dist', 'cli', 'main.js')))
    throw new Error('bench repository runs the built CLI: run `npm run build` first (npm run bench does)');
  if (spawnSync('restic', ['version']).status !== 0) throw new Error('bench repository: restic is not installed');
  const root = join(base, 'root');
  const rootBytes = await buildRoot(root, { work: 'loopx' });
  const databases = sqliteFiles(root);
  const b: Bench = {
    base,
    cwd,
    bin: join(cwd, 'bin', 'loopx.js'),
    env: environment(base),
    root,
    at: ['--root', root, '--authority-dir', join(base, 'authority')],
    databases,
    sqlite3: spawnSync('sqlite3', ['-version']).status === 0,
  };
  const rootName = `${(rootBytes / MiB).toFixed(0)} MiB root (${GOALS} Goals × ${COMMITS_PER_GOAL.toLocaleString('en-US')} real work transactions, ${databases.length} SQLite files)`;
  return { b, rootName };
}

export async function run(): Promise<BenchFigure[]> {
  const base = mkdtempSync(join(tmpdir(), 'loopx-bench-repository-'));
  chmodSync(base, 0o700);
  let s3: S3ServerWithProxy | undefined;
  try {
    const { b, rootName } = await prepare(base);
    s3 = await startS3WithProxy({ bucket: 'loopx-bench' });
    const r = await setUp(b, s3);
    const out = backupFigures(b, rootName, await rounds(backupCases(b, r)));
    // The last round's plaintext backup into s3rver, downloaded: the local pair its verify is compared with.
    const pair = await download(s3, 'bench', VERIFIED.plain, join(base, 'pair'));
    out.push(...verifyFigures(pair, await rounds(verifyCases(b, r, pair))));
    return out;
  } finally {
    await s3?.stop();
    rmSync(base, { recursive: true, force: true });
  }
}
