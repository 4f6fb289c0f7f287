/**
 * Processes that start runs of one agent at the same moment each store its definition: the first
 * to insert wins and the others find the same body, never a constraint failure (CI once met
 * "UNIQUE constraint failed: definitions.id, definitions.version" when five CLI children started
 * runs of one new agent at once). Four threads, each with its own connection to one run store,
 * store the same definitions in lock-step.
 */
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { openSqliteRunStore } from '../../src/engine/run-store/sqlite.js';

const RACERS = 4;
const ROUNDS = 300;

function racer(workerData: unknown): Worker {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('tsx/package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { exports: Record<string, { import: { default: string } }> };
  const api = pathToFileURL(join(dirname(pkgPath), pkg.exports['./esm/api']!.import.default)).href;
  const entry = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), 'support/definition-racer.ts')).href;
  return new Worker(
    `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true, workerData },
  );
}

it('the same definition stored from four connections at once is stored once, with no refusal', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'loopx-definition-race-')), 'runs.db');
  openSqliteRunStore(path); // the schema exists before the racers open it
  const barrier = new SharedArrayBuffer(8);
  const failures = await Promise.all(
    Array.from({ length: RACERS }, () => {
      const w = racer({ path, rounds: ROUNDS, barrier, racers: RACERS });
      return new Promise<string[]>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
    }),
  );
  expect(failures.flat()).toEqual([]);
  const store = openSqliteRunStore(path);
  expect((await store.getDefinition({ id: 'race.agent', version: `1.0.${ROUNDS - 1}` }))?.turnLimit).toBe(1);
}, 120_000);
