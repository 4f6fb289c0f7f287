/**
 * Cold start of the built CLI: the wall time of one `loopx` child, from spawn to its exit, against
 * `node -e 0` — Node starting and doing nothing — measured in the same run:
 *
 *   - `loopx --version` and `loopx --help`: the program built, no command run (commands are
 *     loaded on use, src/cli/main.ts; test/cli/cold-start.test.ts counts the modules);
 *   - `loopx run show <id> --root R`: a read of a root with one run, the runtime loaded;
 *   - `loopx daemon --root R --port 0 --no-dev-receiver`: until it prints its listening line
 *     (`loopx daemon on …`), then SIGTERM; the drain after it is not timed.
 *
 * Setup, not timed: `loopx run start --agent examples/agents/minimal.json --root R` (one completed
 * run), every child in an environment private to the benchmark (LOOPX_HOME, XDG_STATE_HOME,
 * XDG_DATA_HOME and --authority-dir inside it). Two warm-up rounds (the OS file cache), then
 * SAMPLES rounds; each round runs every case once, in an order that rotates from round to round so
 * drift on a shared machine falls on every case alike. Medians per case. Targets (the issue's):
 * `--version` ≤ 1.5× and `run show` ≤ 2× `node -e 0` — printed beside the figures, never asserted.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { BenchFigure } from './harness.js';

const SAMPLES = 15;
const WARMUP = 2;
const BASELINE = 'node -e 0';

/** The repository root: the nearest directory above this module with bin/loopx.js (bench/ from source, dist/bench/ built). */
function repoRoot(): string {
  for (let d = import.meta.dirname; ; d = dirname(d)) {
    if (existsSync(join(d, 'bin', 'loopx.js')) && existsSync(join(d, 'package.json'))) return d;
    if (dirname(d) === d) throw new Error(`bench cold-start: no bin/loopx.js above ${import.meta.dirname}`);
  }
}

interface Case {
  readonly name: string;
  readonly args: readonly string[];
  /** The child is done when stdout has printed this (it is then sent SIGTERM); otherwise when it exits. */
  readonly until?: string;
}

/** Seconds from spawning `node …args` to its exit (or to `until` on its stdout); a failure stops the benchmark. */
function timed(repo: string, env: NodeJS.ProcessEnv, c: Case): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, c.args, { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let seconds: number | undefined;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (c.until !== undefined && seconds === undefined && stdout.includes(c.until)) {
        seconds = (performance.now() - t0) / 1000;
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status, signal) => {
      if (c.until === undefined) seconds = (performance.now() - t0) / 1000;
      if (status !== 0 || seconds === undefined)
        reject(new Error(`${c.name} failed (exit ${status}${signal ? `, ${signal}` : ''}): ${stderr}${stdout}`));
      else resolve(seconds);
    });
  });
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(): Promise<BenchFigure[]> {
  const repo = repoRoot();
  const bin = join(repo, 'bin', 'loopx.js');
  if (!existsSync(join(repo, 'dist', 'src', 'cli', 'main.js')))
    throw new Error('bench cold-start runs the built CLI: run `npm run build` first (npm run bench does)');
  const base = mkdtempSync(join(tmpdir(), 'loopx-bench-cold-'));
  try {
    const env = {
      ...process.env,
      LOOPX_HOME: join(base, 'home'),
      XDG_STATE_HOME: join(base, 'state'),
      XDG_DATA_HOME: join(base, 'data'),
    };
    const root = join(base, 'root');
    const at = ['--root', root, '--authority-dir', join(base, 'authority')];
    const started = spawnSync(
      process.execPath,
      [bin, 'run', 'start', '--agent', join(repo, 'examples/agents/minimal.json'), ...at, '--json'],
      {
        cwd: repo,
        env,
        encoding: 'utf8',
      },
    );
    if (started.status !== 0) throw new Error(`bench cold-start setup: run start failed: ${started.stderr}`);
    const runId = (JSON.parse(started.stdout) as { run_id: string }).run_id;

    const cases: Case[] = [
      { name: BASELINE, args: ['-e', '0'] },
      { name: 'loopx --version', args: [bin, '--version'] },
      { name: 'loopx --help', args: [bin, '--help'] },
      { name: 'loopx run show <id> --root R (one run)', args: [bin, 'run', 'show', runId, ...at] },
      {
        name: 'loopx daemon --root R, until it prints its listening line',
        args: [bin, 'daemon', ...at, '--port', '0', '--no-dev-receiver'],
        until: 'loopx daemon on ',
      },
    ];
    const times = cases.map(() => [] as number[]);
    for (let round = 0; round < WARMUP + SAMPLES; round++) {
      for (let k = 0; k < cases.length; k++) {
        const i = (round + k) % cases.length;
        const seconds = await timed(repo, env, cases[i]!);
        if (round >= WARMUP) times[i]!.push(seconds);
      }
    }
    const baseline = median(times[0]!);
    const targets = ['≤ 1.5×', 'reported', '≤ 2×', 'reported'];
    return cases.slice(1).map((c, i) => ({
      name: `cold start: ${c.name}`,
      seconds: median(times[i + 1]!),
      baselineName: BASELINE,
      baselineSeconds: baseline,
      target: targets[i]!,
      ratioKind: 'cost' as const,
      extra: `median of ${SAMPLES} children each, wall time from spawn to exit${c.until ? ' (to the listening line)' : ''}`,
    }));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}
