// Refresh test/support/file-seconds.json (the order test files start in: test/support/sequencer.ts)
// from the last full run's test-results/durations.txt.
import { readFileSync, writeFileSync } from 'node:fs';

const seconds = {};
for (const line of readFileSync('test-results/durations.txt', 'utf8').split('\n').slice(1)) {
  const m = /^\s*([\d.]+) s\s+(\S+)$/.exec(line);
  if (m) seconds[m[2]] = Number(m[1]);
}
const sorted = Object.fromEntries(Object.entries(seconds).sort(([a], [b]) => (a < b ? -1 : 1)));
writeFileSync('test/support/file-seconds.json', `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/support/file-seconds.json: ${Object.keys(sorted).length} files`);
