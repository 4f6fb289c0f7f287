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
export async function measure(fn: () => unknown | Promise<unknown>, options: { iterations?: number; samples?: number; warmup?: number } = {}): Promise<number> {
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

export const ratioOf = (f: BenchFigure): number => (f.ratioKind === 'speed' ? f.baselineSeconds / f.seconds : f.seconds / f.baselineSeconds);

const fmt = (s: number): string => (s >= 1 ? `${s.toFixed(3)} s` : s >= 1e-3 ? `${(s * 1e3).toFixed(3)} ms` : `${(s * 1e6).toFixed(1)} µs`);

export function printFigures(figures: readonly BenchFigure[]): void {
  for (const f of figures) {
    const ratio = ratioOf(f);
    const label = f.ratioKind === 'speed' ? 'speed vs baseline' : 'cost vs baseline';
    process.stdout.write(
      `${f.name}\n  loopx: ${fmt(f.seconds)}   ${f.baselineName}: ${fmt(f.baselineSeconds)}   ${label}: ${ratio.toFixed(2)}×   target: ${f.target}${f.extra ? `\n  ${f.extra}` : ''}\n`,
    );
  }
}
