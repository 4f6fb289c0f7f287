/**
 * backup-state create on a ~128 MiB-class runtime root (4 Goals whose real loopx work stores hold
 * the maximum 20,000-transaction history, owner databases, Goal documents, a few multi-MiB files)
 * against the same-run baseline `tar czf` of the same tree plus `sqlite3 .backup` of each of its
 * databases, in four variants on that one root: the legacy v0 archive (`format: 'v0'`) and the v1
 * archive under each capture profile (online, quiescent through the runtime's admission gate,
 * crash-consistent). Each v1 figure is also printed as a cost against v0 create of the same run.
 * The root's work stores are written through the work owner: a v1 capture reads them through it,
 * and a work.db it did not recognize would be withheld (component unreadable), so v1 would archive
 * less than v0 and the two would not be comparable.
 * Each create runs in a child process (plan + create, timed inside it) so its peak RSS can be read
 * from that process alone; the child also reports where its time went: the plan, the owners'
 * component capture (v1: on its own thread, alongside the archive, until the last component was
 * captured) and the archive with publication (from its first member to the end). Targets:
 * speed ≥ 1.6× the baseline (the archive's gzip on both cores, src/backup/parallel-gzip.ts; it was
 * ≥ 0.7× while the gzip ran on one); v1 create no slower than v0 create (cost ≤ 1.0×, printed, not
 * asserted).
 *
 * Measured 2026-12-03 (2-core machine; see docs/performance.md for three runs at one commit): before
 * the parallel gzip, on a quiet machine, v0 / v1 online / quiescent / crash-consistent 0.98× /
 * 0.93× / 0.97× / 0.94× (peak RSS 155 / 206 MiB); after it 1.40–1.42× / 1.18–1.34× / 1.15–1.42× /
 * 1.04–1.27× (peak RSS 173 / 221–230 MiB). What bounds v1: the owners' capture thread (about 3.2 s
 * of a 4.0 s create) — the SQLite online backups, their integrity checks, and the end re-check's
 * second online snapshot of every database (src/owners/sqlite-recovery.ts, `observeSqlite`).
 */
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { openFileConfigStore } from '../src/owners/config/index.js';
import { openFileGoalStore } from '../src/owners/goal/index.js';
import { openFileRegistry } from '../src/owners/registry/index.js';
import { openGoalWork } from '../src/owners/work/index.js';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { create, plan, type BackupResult, type CreateOptions, type RecoverySetCapture } from '../src/backup/index.js';
import { createBackupWithProfile } from '../src/runtime/index.js';
import type { BenchFigure } from './harness.js';

const MiB = 1024 * 1024;
export const GOALS = 4;
export const COMMITS_PER_GOAL = 20_000;
const SAMPLES = 3;

/** Deterministic pseudo-random source (xorshift32). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

const WORDS = [
  'todo',
  'commit',
  'lease',
  'epoch',
  'receipt',
  'the',
  'agent',
  'writes',
  'a',
  'plan',
  'for',
  'goal',
  'result',
  'tool',
  'call',
  'turn',
  'session',
  'effect',
  'delivered',
  'pending',
];
function prose(next: () => number, bytes: number): string {
  const parts: string[] = [];
  let n = 0;
  while (n < bytes) {
    const w = WORDS[next() % WORDS.length]!;
    parts.push(w);
    n += w.length + 1;
  }
  return parts.join(' ');
}

function randomBytes(next: () => number, bytes: number): Buffer {
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i + 4 <= bytes; i += 4) b.writeUInt32LE(next(), i);
  return b;
}

function db(path: string, setup: (d: Database.Database) => void): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const d = new Database(path);
  d.pragma('journal_mode = WAL');
  d.pragma('synchronous = OFF');
  setup(d);
  d.pragma('wal_checkpoint(TRUNCATE)');
  d.close();
}

export interface BuildRootOptions {
  /**
   * What each Goal's work.db is: `synthetic` (default; a `commits` table of 20,000 ~900-byte rows,
   * which the producer counts but the work owner does not recognize) or `loopx` (a real work store
   * written through the work owner: 20 Todos, then updates up to 20,000 committed transactions —
   * about the same size, and what `backup-state verify` replays in its owner worker).
   */
  readonly work?: 'synthetic' | 'loopx';
}

/**
 * A real loopx work store for Goal `goalId` of `root`, written through the work owner: 20 Todos
 * (t1…t20, all left open), then note updates on them up to COMMITS_PER_GOAL committed transactions.
 */
export async function writeWorkHistory(root: string, goalId: string, next: () => number = rng(42)): Promise<void> {
  const w = await openGoalWork({ root, goal_id: goalId, synchronous: 'OFF' });
  try {
    for (let i = 1; i <= 20; i++) await w.addTodo({ operation_id: `add-${i}`, title: prose(next, 60) });
    for (let i = 21; i <= COMMITS_PER_GOAL; i++)
      await w.updateTodo({ operation_id: `note-${i}`, todo_id: `t${(i % 20) + 1}`, note: `step ${i}` });
  } finally {
    w.close();
  }
}

/** Build the ~128 MiB root; returns its regular-file bytes. */
export async function buildRoot(root: string, options: BuildRootOptions = {}): Promise<number> {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const next = rng(42);
  const goals = Array.from({ length: GOALS }, (_, i) => `goal-${i}`);
  // Registry, Goals and machine configuration through their owners (the producer reads them so).
  const goalStore = openFileGoalStore(root, { registry: openFileRegistry(root) });
  const config = openFileConfigStore(root);
  config.apply({
    expectedRevision: config.read().revision,
    transactionId: 'bench-config',
    changes: { effects: { schema_version: 'loopx_effects_config_v0', webhook_url: 'http://127.0.0.1:9/deliveries' } },
  });
  for (const g of goals) {
    goalStore.create(g, `Benchmark Goal ${g}`);
    if (options.work === 'loopx') {
      await writeWorkHistory(root, g, next);
    } else {
      db(join(root, 'goals', g, 'work.db'), (d) => {
        d.exec(
          'CREATE TABLE commits (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL); CREATE TABLE todos (id INTEGER PRIMARY KEY, title TEXT, status TEXT)',
        );
        const ins = d.prepare('INSERT INTO commits (payload) VALUES (?)');
        const todo = d.prepare('INSERT INTO todos (title, status) VALUES (?, ?)');
        d.transaction(() => {
          for (let i = 0; i < COMMITS_PER_GOAL; i++)
            ins.run(JSON.stringify({ seq: i, op: 'todo.update', note: prose(next, 900) }));
          for (let i = 0; i < 500; i++) todo.run(prose(next, 60), i % 3 === 0 ? 'done' : 'open');
        })();
      });
    }
    mkdirSync(join(root, 'goals', g, 'docs'), { recursive: true, mode: 0o700 });
    for (let i = 0; i < 50; i++)
      writeFileSync(
        join(root, 'goals', g, 'docs', `doc-${i}.md`),
        `# ${g} document ${i}\n\n${prose(next, 40 * 1024)}\n`,
      );
  }
  for (const [name, rows] of [
    ['sessions.db', 7_000],
    ['effects.db', 3_500],
  ] as const) {
    db(join(root, name), (d) => {
      d.exec('CREATE TABLE journal (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
      const ins = d.prepare('INSERT INTO journal (body) VALUES (?)');
      d.transaction(() => {
        for (let i = 0; i < rows; i++) ins.run(prose(next, 1000));
      })();
    });
  }
  mkdirSync(join(root, 'files'), { mode: 0o700 });
  writeFileSync(join(root, 'files', 'attachment-1.bin'), randomBytes(next, 8 * MiB));
  writeFileSync(join(root, 'files', 'attachment-2.bin'), randomBytes(next, 8 * MiB));
  writeFileSync(join(root, 'files', 'transcript-1.log'), prose(next, 7.5 * MiB));
  writeFileSync(join(root, 'files', 'transcript-2.log'), prose(next, 7.5 * MiB));
  let total = 0;
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else total += st.size;
    }
  };
  walk(root);
  return total;
}

export function sqliteFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (n.endsWith('.db')) out.push(p);
    }
  };
  walk(root);
  return out;
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** What one create is: the v0 archive, or the v1 archive under one capture profile. */
export type CreateVariant = 'v0' | RecoverySetCapture['requested_profile'];
const VARIANTS: readonly CreateVariant[] = ['v0', 'online', 'quiescent', 'crash_consistent'];
/** Quiescent: nothing runs on the bench root, so admission drains at once; this only bounds a stuck run. */
const QUIESCE_TIMEOUT_MS = 5_000;

interface ChildReport {
  seconds: number;
  maxRssKiB: number;
  archiveBytes: number;
  /** v1: the achieved profile, the components by state and the downgrade codes (null and empty for v0). */
  achieved: string | null;
  states: Record<string, number>;
  downgrades: string[];
  /** Seconds: plan; the owners' component capture until the last component (v1; on its own thread, overlapping the archive); the archive and publication from its first member. */
  phases: { plan: number; owners: number; archive: number };
}

type Sample = ChildReport & { wallSeconds: number };

/** The module-loader flags of this process (tsx when run from source), and nothing else: never an --eval. */
export function loaderArgs(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if ((a === '--import' || a === '--require' || a === '-r' || a === '--loader') && i + 1 < argv.length)
      out.push(a, argv[++i]!);
    else if (/^--(import|require|loader)=/.test(a)) out.push(a);
  }
  return out;
}

function runCreateChild(root: string, out: string, id: string, variant: CreateVariant): Sample {
  const t0 = performance.now();
  const r = spawnSync(
    process.execPath,
    [...loaderArgs(), fileURLToPath(import.meta.url), '--backup-child', root, out, id, variant],
    { encoding: 'utf8', maxBuffer: 16 * MiB },
  );
  const wallSeconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`backup child (${variant}) failed: ${r.stderr}`);
  return { ...(JSON.parse(r.stdout) as ChildReport), wallSeconds };
}

function runBaseline(root: string, dir: string): number {
  mkdirSync(dir, { mode: 0o700 });
  const t0 = performance.now();
  const tarRun = spawnSync('tar', ['czf', join(dir, 'tree.tar.gz'), '-C', root, '.'], { encoding: 'utf8' });
  if (tarRun.status !== 0) throw new Error(`tar failed: ${tarRun.stderr}`);
  for (const [i, file] of sqliteFiles(root).entries()) {
    const r = spawnSync('/usr/bin/sqlite3', [file, `.backup '${join(dir, `db-${i}.db`)}'`], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`sqlite3 .backup failed: ${r.stderr}`);
  }
  return (performance.now() - t0) / 1000;
}

/**
 * One warm-up round (page cache), then SAMPLES rounds; each round runs every variant and the
 * baseline one after the other on the same root, so every figure sees the same load.
 */
function sampleAll(root: string, base: string): { ours: Map<CreateVariant, Sample[]>; baseline: number[] } {
  const ours = new Map<CreateVariant, Sample[]>(VARIANTS.map((v) => [v, []]));
  const baseline: number[] = [];
  for (let i = 0; i <= SAMPLES; i++) {
    for (const v of VARIANTS) {
      const out = join(base, `out-${v}-${i}`);
      const o = runCreateChild(root, out, `bench-${v}-${i}`, v);
      if (i > 0) ours.get(v)!.push(o);
      rmSync(out, { recursive: true, force: true });
    }
    const b = runBaseline(root, join(base, `baseline-${i}`));
    if (i > 0) baseline.push(b);
    rmSync(join(base, `baseline-${i}`), { recursive: true, force: true });
  }
  return { ours, baseline };
}

const LABEL: Record<CreateVariant, string> = {
  v0: "v0 (format: 'v0')",
  online: 'v1 online',
  quiescent: 'v1 quiescent',
  crash_consistent: 'v1 crash-consistent',
};

function extraOf(samples: Sample[]): string {
  const peakRss = Math.max(...samples.map((o) => o.maxRssKiB)) / 1024;
  const mid = [...samples].sort((a, c) => a.seconds - c.seconds)[Math.floor(samples.length / 2)]!;
  const ph = mid.phases;
  const ms = (s: number): string => `${(s * 1000).toFixed(0)} ms`;
  const states = Object.entries(mid.states)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  const v1 =
    mid.achieved === null
      ? ''
      : `\n  achieved profile ${mid.achieved}; components ${states}; downgrades ${mid.downgrades.length > 0 ? mid.downgrades.join(', ') : 'none'}`;
  return (
    `peak RSS of the create process ${peakRss.toFixed(0)} MiB; archive ${(mid.archiveBytes / MiB).toFixed(1)} MiB; child wall time incl. Node start ${median(samples.map((o) => o.wallSeconds)).toFixed(3)} s` +
    `\n  phases (median sample): plan ${ms(ph.plan)}, owner capture ${ms(ph.owners)} (v1: on the capture thread, overlapping the archive), archive + publish ${ms(ph.archive)}${v1}`
  );
}

export async function run(): Promise<BenchFigure[]> {
  const base = mkdtempSync(join(tmpdir(), 'loopx-bench-backup-'));
  chmodSync(base, 0o700);
  try {
    const root = join(base, 'root');
    const rootBytes = await buildRoot(root, { work: 'loopx' });
    const { ours, baseline } = sampleAll(root, base);
    const rootName = `${(rootBytes / MiB).toFixed(0)} MiB root (${GOALS} Goals × ${COMMITS_PER_GOAL.toLocaleString('en-US')} real work transactions, ${sqliteFiles(root).length} SQLite files)`;
    const v0Seconds = median(ours.get('v0')!.map((o) => o.seconds));
    const out: BenchFigure[] = [];
    for (const v of VARIANTS) {
      const samples = ours.get(v)!;
      const seconds = median(samples.map((o) => o.seconds));
      const common = { seconds, ratioKind: 'speed', extra: extraOf(samples) } as const;
      out.push({
        ...common,
        name: `backup-state create ${LABEL[v]}, ${rootName}`,
        baselineName: 'tar czf + sqlite3 .backup',
        baselineSeconds: median(baseline),
        target: 'speed ≥ 1.6×',
      });
      if (v === 'v0') continue;
      out.push({
        name: `  ${LABEL[v]} create against v0 create (same root, same run)`,
        seconds,
        baselineName: 'v0 create',
        baselineSeconds: v0Seconds,
        target: 'cost ≤ 1.0× (v1 no slower than v0; not asserted)',
        ratioKind: 'cost',
      });
    }
    return out;
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** Child mode: plan + create one backup of `variant`, timed by phase (progress and component hooks only read the clock). */
async function createOnce(root: string, out: string, id: string, variant: CreateVariant): Promise<ChildReport> {
  let owned: number | undefined;
  let first: number | undefined;
  const observe: Pick<CreateOptions, 'hooks' | 'onProgress'> = {
    hooks: { afterComponent: () => void (owned = performance.now()) },
    onProgress: () => void (first ??= performance.now()),
  };
  const t0 = performance.now();
  const p = plan(root, { outputDir: out, backupId: id });
  const planned = performance.now();
  let result: BackupResult;
  if (variant === 'v0') result = await create(p, { ...observe, format: 'v0' });
  else if (variant === 'quiescent')
    result = await createBackupWithProfile(p, {
      ...observe,
      format: 'v1',
      profile: 'quiescent',
      quiesceTimeoutMs: QUIESCE_TIMEOUT_MS,
    });
  else result = await create(p, { ...observe, format: 'v1', profile: variant });
  const end = performance.now();
  const doc = result.manifest_doc;
  const capture = 'achieved_profile' in doc.capture ? doc.capture : null;
  const states: Record<string, number> = {};
  for (const c of doc.components ?? []) states[c.state] = (states[c.state] ?? 0) + 1;
  const firstMember = first ?? end;
  return {
    seconds: (end - t0) / 1000,
    maxRssKiB: process.resourceUsage().maxRSS,
    archiveBytes: result.archive.size_bytes,
    achieved: capture?.achieved_profile ?? null,
    states,
    downgrades: capture?.downgrades.map((d) => d.code) ?? [],
    phases: {
      plan: (planned - t0) / 1000,
      owners: ((owned ?? planned) - planned) / 1000,
      archive: (end - firstMember) / 1000,
    },
  };
}

if (
  process.argv[2] === '--backup-child' &&
  process.argv[1] !== undefined &&
  resolve(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  const [root, out, id, variant] = process.argv.slice(3);
  if (!VARIANTS.includes(variant as CreateVariant)) throw new Error(`unknown create variant ${variant}`);
  process.stdout.write(`${JSON.stringify(await createOnce(root!, out!, id!, variant as CreateVariant))}\n`);
}
