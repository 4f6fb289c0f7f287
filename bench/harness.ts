/**
 * Benchmark harness: every figure is printed beside a baseline measured in the same run, as a
 * ratio. Benchmarks measure; they never assert (tests do that).
 */
import { performance } from 'node:perf_hooks';

export interface BenchFigure {
  /** What was measured, e.g. "snapshot encode+digest (1,000 messages)". */
  readonly name: string;
  /** Seconds per operation (median of the samples). */
  readonly seconds: number;
  readonly baselineName: string;
  readonly baselineSeconds: number;
  /** The target, stated the way the issue states it. */
  readonly target: string;
  /**
   * How the ratio reads: 'speed' = baseline time / our time (≥ 1 means we are faster),
   * 'cost' = our time / baseline time (≤ 1 means we are faster).
   */
  readonly ratioKind: 'speed' | 'cost';
  readonly extra?: string;
}

/** Median seconds per call of `fn` over `samples` samples of `iterations` calls each, after warm-up. */
export async function measure(
  fn: () => unknown | Promise<unknown>,
  options: { iterations?: number; samples?: number; warmup?: number } = {},
): Promise<number> {
  const iterations = options.iterations ?? 1;
  const samples = options.samples ?? 7;
  for (let i = 0; i < (options.warmup ?? 2); i++) await fn();
  const times: number[] = [];
  for (let s = 0; s < samples; s++) {
    const t0 = performance.now();
    for (let i = 0; i < iterations; i++) await fn();
    times.push((performance.now() - t0) / 1000 / iterations);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** One side of a paired measurement: median seconds per call, and this process's CPU (user + system) per call in µs. */
export interface PairedSide {
  readonly seconds: number;
  readonly cpu: number;
}

/**
 * `a` and `b` measured in alternating samples (a b, b a, a b, …), each sample `iterations` calls,
 * after `warmup` calls of each: drift on a shared machine (other jobs, a checkpoint, autovacuum)
 * falls on both sides instead of on whichever ran second. Medians per side.
 */
export async function measurePaired(
  a: () => unknown | Promise<unknown>,
  b: () => unknown | Promise<unknown>,
  options: { iterations?: number; samples?: number; warmup?: number } = {},
): Promise<{ a: PairedSide; b: PairedSide }> {
  const iterations = options.iterations ?? 1;
  const samples = options.samples ?? 7;
  for (let i = 0; i < (options.warmup ?? 2); i++) await a();
  for (let i = 0; i < (options.warmup ?? 2); i++) await b();
  const sides = [
    { fn: a, times: [] as number[], cpu: 0 },
    { fn: b, times: [] as number[], cpu: 0 },
  ];
  for (let s = 0; s < samples; s++) {
    for (const side of s % 2 === 0 ? sides : [...sides].reverse()) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < iterations; i++) await side.fn();
      side.times.push((performance.now() - t0) / 1000 / iterations);
      const c = process.cpuUsage(c0);
      side.cpu += c.user + c.system;
    }
  }
  const out = sides.map((side) => ({
    seconds: [...side.times].sort((x, y) => x - y)[Math.floor(samples / 2)]!,
    cpu: side.cpu / (samples * iterations),
  }));
  return { a: out[0]!, b: out[1]! };
}

export const ratioOf = (f: BenchFigure): number =>
  f.ratioKind === 'speed' ? f.baselineSeconds / f.seconds : f.seconds / f.baselineSeconds;

const fmt = (s: number): string =>
  s >= 1 ? `${s.toFixed(3)} s` : s >= 1e-3 ? `${(s * 1e3).toFixed(3)} ms` : `${(s * 1e6).toFixed(1)} µs`;

export function printFigures(figures: readonly BenchFigure[]): void {
  for (const f of figures) {
    const ratio = ratioOf(f);
    const label = f.ratioKind === 'speed' ? 'speed vs baseline' : 'cost vs baseline';
    process.stdout.write(
      `${f.name}\n  loopx: ${fmt(f.seconds)}   ${f.baselineName}: ${fmt(f.baselineSeconds)}   ${label}: ${ratio.toFixed(2)}×   target: ${f.target}${f.extra ? `\n  ${f.extra}` : ''}\n`,
    );
  }
}
