/** `npm run bench`: runs every benchmark and prints each figure beside its same-run baseline. */
import { printFigures, type BenchFigure } from './harness.js';

const suites: Array<[string, () => Promise<BenchFigure[]>]> = [
  ['cold-start', async () => (await import('./cold-start.bench.js')).run()],
  ['snapshot', async () => (await import('./snapshot.bench.js')).run()],
  ['event-log', async () => (await import('./event-log.bench.js')).run()],
  ['transfer', async () => (await import('./transfer.bench.js')).run()],
  ['backup', async () => (await import('./backup.bench.js')).run()],
  ['verify', async () => (await import('./verify.bench.js')).run()],
  ['repository', async () => (await import('./repository.bench.js')).run()],
  ['recover', async () => (await import('./recover.bench.js')).run()],
  ['postgres', async () => (await import('./postgres.bench.js')).run()],
  ['cluster', async () => (await import('./cluster.bench.js')).run()],
];

const only = process.argv[2];
for (const [name, run] of suites) {
  if (only && only !== name) continue;
  process.stdout.write(`\n# ${name}\n`);
  printFigures(await run());
}
