/**
 * The order test files start in: the longest first, by the seconds each took in a recorded run
 * (file-seconds.json, refreshed from test-results/durations.txt with `npm run test:seconds`), files
 * it does not know yet before all of them. Two workers share the suite, so a long file that starts
 * last runs alone at the end; vitest orders by its own cache of earlier runs, which a clean
 * checkout (CI) does not have. Written here because vitest's sequencer takes its durations only
 * from that cache.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const seconds = JSON.parse(readFileSync(new URL('./file-seconds.json', import.meta.url), 'utf8')) as Record<
  string,
  number
>;

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const of = (f: TestSpecification): number =>
      seconds[relative(f.project.config.root, f.moduleId)] ?? Number.POSITIVE_INFINITY;
    return [...files].sort((a, b) => of(b) - of(a));
  }
}
