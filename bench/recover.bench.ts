/**
 * The recovery RTO of one Goal holding the maximum history (COMMITS_PER_GOAL = 20,000 committed
 * work transactions, written by the backup benchmark's generator `writeWorkHistory`), end to end
 * from "backup archive and manifest supplied" to "the first admitted turn in the new root", through
 * the built CLI in child processes — what an operator runs, one process per command:
 *
 *   1. `backup-state verify --archive A --manifest M --destination W --execute` (the workspace);
 *   2. `recover plan --from W --goal launch --destination R` (re-verifies W; prints `plan_digest`);
 *   3. `recover apply --destination R --confirm <digest>` (must end `complete`);
 *   4. `work run --goal launch --agent <scripted> --root R`: the first admitted turn in the new root,
 *      whose tool call closes the open Todo t1 (`todo.update` to done); a second, text-only turn
 *      ends the run.
 *
 * Setup, not timed: `loopx init`, `loopx goal create launch`, the 20,000 transactions (20 Todos,
 * all left open, and note updates on them), one quiescent `backup-state --execute` → A + M. Every
 * command gets `--authority-dir` in the benchmark's private directory (never the user's run
 * authority), and LOOPX_HOME and XDG_STATE_HOME point inside it too. A recovery supersedes the
 * Goal's lifetime in the run authority that applied it, so each sample recovers under a fresh
 * authority of its own (a second recovery of one lifetime under one authority is refused).
 *
 * Same-run baseline on the same archive: `backup-state verify --execute` alone into another fresh
 * destination, timed the same way (a child's wall time, Node start included). One warm-up round,
 * then SAMPLES (5) rounds; each round runs the recovery, then the baseline, each after a `sync`. The
 * figures: the RTO (median of the per-sample totals) against the baseline, and each phase against
 * it. Target (the issue's): RTO ≤ 60 s on the 2-core machine — printed beside the figure, never
 * asserted. LOOPX_BENCH_CPU_PROF=<dir> makes every CLI child write a V8 CPU profile there
 * (`--cpu-prof`; slower, for finding where a phase spends its time).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { COMMITS_PER_GOAL, median, writeWorkHistory } from './backup.bench.js';
import type { BenchFigure } from './harness.js';

const MiB = 1024 * 1024;
const SAMPLES = 5;
const GOAL = 'launch';
/** The issue's target for the whole recovery on this 2-core machine. */
const TARGET_SECONDS = 60;
const BASELINE = 'backup-state verify --execute alone';

/** A command's JSON document, read field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

/** How the CLI is run: the repository's bin/loopx.js (the built CLI), in an environment private to the benchmark. */
interface Cli {
  readonly repo: string;
  readonly env: NodeJS.ProcessEnv;
  readonly profileDir: string | undefined;
}

/** The repository root: the nearest directory above this module with bin/loopx.js (bench/ from source, dist/bench/ built). */
function repoRoot(): string {
  for (let d = import.meta.dirname; ; d = dirname(d)) {
    if (existsSync(join(d, 'bin', 'loopx.js')) && existsSync(join(d, 'package.json'))) return d;
    if (dirname(d) === d) throw new Error(`bench recover: no bin/loopx.js above ${import.meta.dirname}`);
  }
}

function cliFor(base: string): Cli {
  const repo = repoRoot();
  if (!existsSync(join(repo, 'dist', 'src', 'cli', 'main.js')))
    throw new Error('bench recover runs the built CLI: run `npm run build` first (npm run bench does)');
  const profile = process.env['LOOPX_BENCH_CPU_PROF'];
  return {
    repo,
    env: { ...process.env, LOOPX_HOME: join(base, 'home'), XDG_STATE_HOME: join(base, 'state') },
    profileDir: profile ? resolve(profile) : undefined,
  };
}

/** One CLI child, timed by its wall time (Node start and module loading included: the operator waits for them too). */
function spawnTimed(cli: Cli, args: readonly string[]): { seconds: number; stdout: string } {
  const prof = cli.profileDir !== undefined ? ['--cpu-prof', '--cpu-prof-dir', cli.profileDir] : [];
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [...prof, join(cli.repo, 'bin', 'loopx.js'), ...args], {
    cwd: cli.repo,
    env: cli.env,
    encoding: 'utf8',
    maxBuffer: 64 * MiB,
  });
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 0)
    throw new Error(
      `loopx ${args.join(' ')} failed (exit ${r.status}${r.signal ? `, ${r.signal}` : ''}): ${r.stderr}${r.stdout}`,
    );
  return { seconds, stdout: r.stdout };
}

/** `loopx <args> --authority-dir <authority> --json`: its time and its JSON document. */
function loopx(cli: Cli, args: readonly string[], authority: string): { seconds: number; doc: Doc } {
  const r = spawnTimed(cli, [...args, '--authority-dir', authority, '--json']);
  return { seconds: r.seconds, doc: JSON.parse(r.stdout) };
}

/** Flush dirty pages (untimed) so that no sample pays for the previous one's writeback. */
const settle = (): void => void spawnSync('sync');

interface Source {
  readonly root: string;
  readonly archive: string;
  readonly manifest: string;
  readonly archiveBytes: number;
  readonly expandedBytes: number;
}

/** The source root (init, goal create, the 20,000 transactions) and its quiescent backup. Not timed. */
async function buildSource(cli: Cli, base: string): Promise<Source> {
  const root = join(base, 'source');
  const authority = join(base, 'authority-source');
  loopx(cli, ['init', '--root', root], authority);
  loopx(cli, ['goal', 'create', GOAL, '--title', 'Recovery RTO benchmark', '--root', root], authority);
  await writeWorkHistory(root, GOAL);
  const out = join(base, 'backups');
  const b = loopx(
    cli,
    ['backup-state', '--execute', '--profile', 'quiescent', '--root', root, '--output-dir', out, '--backup-id', 'b1'],
    authority,
  ).doc;
  const archive = join(out, b.archive.name as string);
  const manifest = join(out, b.manifest.name as string);
  const m = JSON.parse(readFileSync(manifest, 'utf8')) as { execution: { archive_expanded_bytes: number } };
  return {
    root,
    archive,
    manifest,
    archiveBytes: statSync(archive).size,
    expandedBytes: m.execution.archive_expanded_bytes,
  };
}

/** The scripted agent of the first turn in the new root: close the open Todo t1, then end the run. */
function writeAgent(base: string): string {
  const path = join(base, 'agent.json');
  writeFileSync(
    path,
    JSON.stringify({
      id: 'bench.recover-rto',
      version: '1.0.0',
      model: { provider: 'scripted', model_id: 'scripted-v1' },
      turn_limit: 4,
      tool_plan: 'loopx.goal-work.v1',
      system: 'Continue the recovered Goal.',
      script: [
        {
          text: 'Closing the open Todo.',
          tool_calls: [
            { name: 'todo.update', arguments: { todo_id: 't1', status: 'done', note: 'continued after recovery' } },
          ],
        },
        { text: 'Done for now.' },
      ],
    }),
  );
  return path;
}

const PHASES = ['verify', 'plan', 'apply', 'turn'] as const;
type Phase = (typeof PHASES)[number];
const PHASE_LABEL: Record<Phase, string> = {
  verify: 'backup-state verify --execute (into the workspace)',
  plan: 'recover plan (re-verifies the workspace, writes the digest-bound plan)',
  apply: 'recover apply --confirm <digest> (the owners adopt the Goal; state complete)',
  turn: 'work run in the new root (the first admitted turn closes the open Todo)',
};

interface RtoSample {
  readonly total: number;
  readonly phases: Record<Phase, number>;
  /** The verify audit's own durations (ms): archive processing, owner read, total. */
  readonly audit: { archive_processing: number; owner_read: number; total: number };
  readonly applySteps: number;
  readonly turns: number;
}

/** One recovery into fresh W and R under a fresh run authority, timed phase by phase; checked (untimed) after. */
function recoverOnce(cli: Cli, src: Source, agent: string, dir: string): RtoSample {
  mkdirSync(dir, { mode: 0o700 });
  const authority = join(dir, 'authority');
  const workspace = join(dir, 'workspace');
  const dest = join(dir, 'recovered');
  const live = ['--root', src.root];
  settle();
  const t0 = performance.now();
  const v = loopx(
    cli,
    [
      'backup-state',
      'verify',
      '--archive',
      src.archive,
      '--manifest',
      src.manifest,
      '--destination',
      workspace,
      '--execute',
      ...live,
    ],
    authority,
  );
  const p = loopx(
    cli,
    ['recover', 'plan', '--from', workspace, '--goal', GOAL, '--destination', dest, ...live],
    authority,
  );
  const a = loopx(
    cli,
    ['recover', 'apply', '--destination', dest, '--confirm', p.doc.plan_digest as string, ...live],
    authority,
  );
  if (a.doc.state !== 'complete') throw new Error(`recover apply ended ${a.doc.state}: ${JSON.stringify(a.doc.holds)}`);
  const w = loopx(cli, ['work', 'run', '--goal', GOAL, '--agent', agent, '--root', dest], authority);
  const total = (performance.now() - t0) / 1000;
  if (w.doc.status !== 'completed')
    throw new Error(`work run in the new root ended ${w.doc.status}: ${JSON.stringify(w.doc.failure)}`);
  const todos = loopx(cli, ['todo', 'list', '--goal', GOAL, '--root', dest], authority).doc.todos as {
    todo_id: string;
    status: string;
  }[];
  if (todos.find((t) => t.todo_id === 't1')?.status !== 'done')
    throw new Error('the first turn in the new root did not close Todo t1');
  return {
    total,
    phases: { verify: v.seconds, plan: p.seconds, apply: a.seconds, turn: w.seconds },
    audit: v.doc.measurements.durations_ms,
    applySteps: (a.doc.receipts as unknown[]).length,
    turns: w.doc.completed_turns as number,
  };
}

/** The baseline: verify alone on the same archive into a fresh destination, under a fresh authority. */
function verifyAlone(cli: Cli, src: Source, dir: string): number {
  mkdirSync(dir, { mode: 0o700 });
  settle();
  const args = [
    'backup-state',
    'verify',
    '--archive',
    src.archive,
    '--manifest',
    src.manifest,
    '--destination',
    join(dir, 'workspace'),
    '--execute',
    '--root',
    src.root,
  ];
  return loopx(cli, args, join(dir, 'authority')).seconds;
}

interface Samples {
  readonly rto: RtoSample[];
  readonly baseline: number[];
  /** A bare `loopx --version` child: what Node start and loading the CLI cost each phase. */
  readonly floor: number[];
}

function sample(cli: Cli, src: Source, agent: string, scratch: string): Samples {
  const out: Samples = { rto: [], baseline: [], floor: [] };
  for (let i = 0; i <= SAMPLES; i++) {
    const rtoDir = join(scratch, `rto-${i}`);
    const r = recoverOnce(cli, src, agent, rtoDir);
    rmSync(rtoDir, { recursive: true, force: true });
    const baseDir = join(scratch, `verify-${i}`);
    const b = verifyAlone(cli, src, baseDir);
    rmSync(baseDir, { recursive: true, force: true });
    const f = spawnTimed(cli, ['--version']).seconds;
    if (i === 0) continue;
    out.rto.push(r);
    out.baseline.push(b);
    out.floor.push(f);
  }
  return out;
}

const secs = (s: number): string => `${s.toFixed(2)} s`;

function figures(src: Source, s: Samples): BenchFigure[] {
  const baselineSeconds = median(s.baseline);
  const total = median(s.rto.map((r) => r.total));
  const mid = [...s.rto].sort((a, b) => a.total - b.total)[Math.floor(s.rto.length / 2)]!;
  const floor = median(s.floor);
  const ph = mid.phases;
  const verdict = total <= TARGET_SECONDS ? 'within the target' : `OVER the target by ${secs(total - TARGET_SECONDS)}`;
  const out: BenchFigure[] = [
    {
      name: `recover RTO, 1 Goal × ${COMMITS_PER_GOAL.toLocaleString('en-US')} committed work transactions: backup archive + manifest → first admitted turn in a new root (verify, plan, apply, work run; built CLI, one process each)`,
      seconds: total,
      baselineName: BASELINE,
      baselineSeconds,
      target: `RTO ≤ ${TARGET_SECONDS} s (printed, not asserted)`,
      ratioKind: 'cost',
      extra:
        `RTO ${secs(total)} of the ${TARGET_SECONDS} s target: ${verdict}; totals per sample ${s.rto.map((r) => secs(r.total)).join(', ')}; archive ${(src.archiveBytes / MiB).toFixed(1)} MiB, expanded ${(src.expandedBytes / MiB).toFixed(1)} MiB\n` +
        `  median sample: verify ${secs(ph.verify)} (audit durations_ms archive_processing ${mid.audit.archive_processing}, owner_read ${mid.audit.owner_read}, total ${mid.audit.total}), plan ${secs(ph.plan)}, apply ${secs(ph.apply)} (${mid.applySteps} steps), first turn ${secs(ph.turn)} (run completed, ${mid.turns} turns)\n` +
        `  a bare \`loopx --version\` child takes ${secs(floor)}: Node start and CLI loading are ~${secs(PHASES.length * floor)} of the RTO`,
    },
  ];
  for (const [i, p] of PHASES.entries()) {
    out.push({
      name: `  phase ${i + 1}: ${PHASE_LABEL[p]}`,
      seconds: median(s.rto.map((r) => r.phases[p])),
      baselineName: BASELINE,
      baselineSeconds,
      target: `— (${((ph[p] / mid.total) * 100).toFixed(0)} % of the median sample's RTO)`,
      ratioKind: 'cost',
    });
  }
  return out;
}

export async function run(): Promise<BenchFigure[]> {
  const base = mkdtempSync(join(tmpdir(), 'loopx-bench-recover-'));
  chmodSync(base, 0o700);
  try {
    const cli = cliFor(base);
    const src = await buildSource(cli, base);
    const agent = writeAgent(base);
    const scratch = join(base, 'scratch');
    mkdirSync(scratch, { mode: 0o700 });
    return figures(src, sample(cli, src, agent, scratch));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
