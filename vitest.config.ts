import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    globalSetup: ['./test/support/cli-build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
