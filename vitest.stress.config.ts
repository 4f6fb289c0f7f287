import { defineConfig } from 'vitest/config';

/**
 * `npm run stress`: trials repeated for statistics (docs/security.md, "Stress"). Not part of
 * `npm test`, which keeps one deterministic run of each case. `LOOPX_STRESS_TRIALS` sets the
 * number of trials per case (default 5); each trial prints one line, and each file a summary.
 */
export default defineConfig({
  test: {
    include: ['test/stress/**/*.stress.ts'],
    pool: 'forks',
    maxWorkers: 1,
    globalSetup: ['./test/support/cli-build.ts'],
    testTimeout: 60 * 60_000,
    hookTimeout: 10 * 60_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
