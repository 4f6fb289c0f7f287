import { defineConfig } from 'vitest/config';

/**
 * `npm run capacity`: a PostgreSQL root filled to the documented limits, then backed up, verified,
 * rotated and read back (docs/postgresql.md, "Capacity"). Not part of `npm test` (it runs for
 * minutes); it asserts what completes and what reads back, never how fast, and prints its figures.
 */
export default defineConfig({
  test: {
    include: ['test/capacity/**/*.capacity.ts'],
    pool: 'forks',
    maxWorkers: 1,
    globalSetup: ['./test/support/cli-build.ts'],
    testTimeout: 60 * 60_000,
    hookTimeout: 10 * 60_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
