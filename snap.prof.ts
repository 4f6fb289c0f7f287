import { benchState } from './bench/snapshot.bench.js';
import { decodeSnapshot, encodeSnapshot, snapshotDigest } from './src/snapshot/index.js';
const bytes = encodeSnapshot(benchState());
for (let i = 0; i < 300; i++) { snapshotDigest(bytes); decodeSnapshot(bytes); }
const t0 = performance.now();
for (let i = 0; i < 1000; i++) { snapshotDigest(bytes); decodeSnapshot(bytes); }
console.log(((performance.now() - t0) / 1000).toFixed(3), 'ms per decode');
