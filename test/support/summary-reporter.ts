// Prints the closing line CI reads ("N passed, N failed[, N skipped]") from vitest's own
// results after the default reporter has finished. A file that failed with no failed test of its
// own (its import or a beforeAll threw, so its tests were skipped) counts as one failure: the
// line never reads "0 failed" for a run vitest reports as failed.
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): void {
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
}
