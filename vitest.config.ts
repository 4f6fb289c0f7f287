import { defineConfig } from 'vitest/config';
import LongestFirst from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Two test files at a time, also on a 2-core machine (vitest's default there is one): most
    // tests wait on child processes, fsyncs, PostgreSQL or a browser, and every file keeps its
    // state apart (its own temporary roots, run-authority state, schemas, databases and roles).
    maxWorkers: 2,
    // The longest files start first (test/support/sequencer.ts), so none runs alone at the end.
    sequence: { sequencer: LongestFirst },
    globalSetup: ['./test/support/cli-build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // expect.poll waits for a page or a process to catch up: generous on a loaded 2-core machine,
    // never a timing assertion (a poll returns as soon as its condition holds).
    expect: { poll: { timeout: 15_000, interval: 50 } },
    reporters: ['default', './test/support/summary-reporter.ts'],
    // The built CLI a test runs in its own process (test/support/cli.ts: loopxAsync) is loaded by
    // Node as a child loads it, not through the test transform: the same bytes, the same module URLs.
    server: { deps: { external: [/\/dist\//] } },
  },
});
