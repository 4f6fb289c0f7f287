/**
 * One racer of test/engine/definition-race.test.ts, on its own thread with its own connection:
 * every round it waits at the shared barrier, then stores the round's definition. It reports
 * each refusal it met.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteRunStore } from '../../../src/engine/run-store/sqlite.js';

const { path, rounds, barrier, racers } = workerData as {
  path: string;
  rounds: number;
  barrier: SharedArrayBuffer;
  racers: number;
};
const gate = new Int32Array(barrier);
const store = openSqliteRunStore(path, { synchronous: 'OFF' });
const failures: string[] = [];
for (let round = 0; round < rounds; round++) {
  // A sense-free barrier: gate[0] counts arrivals; round r opens when it reaches (r + 1) × racers.
  Atomics.add(gate, 0, 1);
  while (Atomics.load(gate, 0) < (round + 1) * racers) Atomics.wait(gate, 1, 0, 1);
  try {
    await store.putDefinition({
      id: 'race.agent',
      version: `1.0.${round}`,
      model: { provider: 'scripted', modelId: 'scripted-v1' },
      turnLimit: 1,
      toolPlan: 'loopx.builtin.v1',
    });
  } catch (e) {
    failures.push(String((e as Error).message));
  }
}
parentPort!.postMessage(failures);
