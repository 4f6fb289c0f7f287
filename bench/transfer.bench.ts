/**
 * RFC 0007 transfer latency: sign+export and verify+import of a suspended run (~100 messages),
 * with the durable fsyncs and without them (reported separately), each beside raw HMAC-SHA256 of
 * the same payload bytes measured in the same run.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { builtinApplication, defineAgent, openEngine, openSqliteRunStore, type Engine } from '../src/engine/index.js';
import { LocalRunAuthority } from '../src/run-authority/index.js';
import { measure, type BenchFigure } from './harness.js';

const RUNS = 25;
const TURNS = 50;

const agent = defineAgent({
  id: 'bench.transfer',
  version: '1.0.0',
  model: { provider: 'scripted', modelId: 'scripted-v1' },
  turnLimit: TURNS + 2,
  toolPlan: 'loopx.builtin.v1',
  script: Array.from({ length: TURNS }, (_, i) => ({ text: `step ${i} `.repeat(8), toolCalls: [{ name: 'math.add', arguments: { a: i, b: 1 } }] })),
});

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function scenario(sync: boolean): Promise<BenchFigure[]> {
  const base = mkdtempSync(join(tmpdir(), 'loopx-bench-transfer-'));
  chmodSync(base, 0o700);
  const authority = LocalRunAuthority.open({ dir: join(base, 'authority'), create: true, unsafeNoSync: !sync });
  const synchronous = sync ? 'FULL' : 'OFF';
  const engineAt = (name: string): Engine => {
    const root = join(base, name);
    // Create the root and its store with the scenario's durability.
    const probe = openEngine({ root, application: builtinApplication(root), authority });
    probe.openRoot(); // the engine opens its root lazily: create it here, outside the timed part
    probe.close();
    return openEngine({ root, application: builtinApplication(root), authority, store: openSqliteRunStore(join(root, 'engine.db'), { synchronous }) });
  };
  try {
    const a = engineAt('a');
    const ids: string[] = [];
    for (let i = 0; i < RUNS; i++) ids.push((await a.start(agent, { input: 'bench', suspendAfterTurns: TURNS })).run_id);
    const exportTimes: number[] = [];
    const envelopes: Uint8Array[] = [];
    for (const id of ids) {
      const t0 = performance.now();
      envelopes.push(a.exportEnvelope(id).bytes);
      exportTimes.push((performance.now() - t0) / 1000);
    }
    const payloadBytes = a.exportSnapshot(ids[0]!).bytes;
    const destinations = ids.map((_, i) => engineAt(`b${i}`));
    const importTimes: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const t0 = performance.now();
      await destinations[i]!.importSnapshot(envelopes[i]!, { agent });
      importTimes.push((performance.now() - t0) / 1000);
    }
    for (const d of destinations) d.close();
    a.close();
    const key = randomBytes(32);
    const hmac = await measure(() => createHmac('sha256', key).update(payloadBytes).digest(), { iterations: 200, samples: 7 });
    const label = sync ? 'with fsyncs' : 'without fsyncs';
    const size = `${(payloadBytes.byteLength / 1024).toFixed(0)} KiB payload, ${TURNS * 2 + 1} messages`;
    return [
      {
        name: `sign+export, ${label} (${size})`,
        seconds: median(exportTimes),
        baselineName: 'raw HMAC-SHA256 of the payload',
        baselineSeconds: hmac,
        target: 'reported (no target)',
        ratioKind: 'cost',
      },
      {
        name: `verify+import, ${label} (${size})`,
        seconds: median(importTimes),
        baselineName: 'raw HMAC-SHA256 of the payload',
        baselineSeconds: hmac,
        target: 'reported (no target)',
        ratioKind: 'cost',
      },
    ];
  } finally {
    await authority.close();
    rmSync(base, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchFigure[]> {
  return [...(await scenario(true)), ...(await scenario(false))];
}
