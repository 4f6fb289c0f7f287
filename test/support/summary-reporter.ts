// Prints the closing line CI reads ("N passed, N failed[, N skipped]") from vitest's own
// results after the default reporter has finished. A file that failed with no failed test of its
// own (its import or a beforeAll threw, so its tests were skipped) counts as one failure: the
// line never reads "0 failed" for a run vitest reports as failed.
//
// Before it, the suite's duration report: the wall time of the whole run and the slowest files
// (each file's own tests and hooks), so CI shows where the time goes; the full per-file list is
// written to test-results/durations.txt (the budget: the whole suite in 10 minutes on 2 cores).
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

const SHOWN = 15;

export default class SummaryReporter implements Reporter {
  private startedAt = Date.now();

  onTestRunStart(): void {
    this.startedAt = Date.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): void {
    this.durations(modules);
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of modules) {
      let failedHere = 0;
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedHere++;
        else skipped++;
      }
      failed += mod.state() === 'failed' && failedHere === 0 ? 1 : failedHere;
    }
    failed += errors.length;
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(`\n${passed} passed, ${failed} failed${tail}\n`);
  }

  /** The per-file report: printed (the slowest files) and written whole. */
  private durations(modules: ReadonlyArray<TestModule>): void {
    const rows = modules
      .map((m) => ({ file: m.moduleId.replace(`${process.cwd()}/`, ''), ms: m.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms);
    const wall = (Date.now() - this.startedAt) / 1000;
    const line = (r: { file: string; ms: number }) => `${(r.ms / 1000).toFixed(1).padStart(7)} s  ${r.file}`;
    try {
      mkdirSync('test-results', { recursive: true });
      writeFileSync(
        'test-results/durations.txt',
        `suite wall time ${wall.toFixed(0)} s, ${rows.length} files\n${rows.map(line).join('\n')}\n`,
      );
    } catch {
      // a read-only checkout still gets the printed report
    }
    process.stdout.write(
      `\nsuite wall time ${wall.toFixed(0)} s (${rows.length} files); the slowest (test-results/durations.txt has all):\n${rows.slice(0, SHOWN).map(line).join('\n')}\n`,
    );
  }
}
