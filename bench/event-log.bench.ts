/**
 * Event append throughput of the run store (a conditional commit: sequence check, head update,
 * event insert) against raw better-sqlite3 inserts of the same rows, with the same pragmas and
 * transaction sizes, in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteRunStore } from '../src/engine/run-store/sqlite.js';
import type { RunHead } from '../src/engine/run-store/contract.js';
import { measure, type BenchFigure } from './harness.js';

const head = (runId: string): RunHead => ({
  runId,
  definition: { id: 'bench', version: '1' },
  model: { provider: 'scripted', modelId: 'm' },
  turnLimit: 1_000_000,
  completedTurns: 0,
  lifecycle: 'active',
  planIdentity: { components: [], toolPlanId: 'p', compatibilityIdentity: '', fingerprint: '0'.repeat(64) },
  usedInteractionIds: [],
  lastSequence: 0,
  messageCount: 0,
  turnInProgress: false,
  suspendAtTurn: null,
  pendingInteraction: null,
  failure: null,
  createdAt: '',
  updatedAt: '',
});

const DATA = { turn: 1, call_id: 'run_bench/t1/k0', tool_name: 'math.add', status: 'ok' };

async function figure(perCommit: number, total: number, synchronous: 'FULL' | 'NORMAL'): Promise<BenchFigure> {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-bench-'));
  try {
    const store = openSqliteRunStore(join(dir, 'engine.db'), { synchronous });
    let runNo = 0;
    const ours = await measure(
      () => {
        const runId = `run_${runNo++}`;
        let h = head(runId);
        h = { ...h, lastSequence: store.commit({ head: h, expectedSequence: 0, events: [{ type: 'RunStarted', data: {} }] }).length };
        for (let i = 0; i < total; i += perCommit) {
          const events = Array.from({ length: perCommit }, () => ({ type: 'ToolResulted' as const, data: DATA }));
          const appended = store.commit({ head: h, expectedSequence: h.lastSequence, events });
          h = { ...h, lastSequence: appended.at(-1)!.sequence };
        }
      },
      { samples: 5, warmup: 1 },
    );
    store.close();

    const raw = new Database(join(dir, 'raw.db'));
    raw.pragma('journal_mode = WAL');
    raw.pragma(`synchronous = ${synchronous}`);
    raw.exec(
      'CREATE TABLE events (run_id TEXT NOT NULL, sequence INTEGER NOT NULL, type TEXT NOT NULL, at TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, sequence)) WITHOUT ROWID',
    );
    const insert = raw.prepare('INSERT INTO events (run_id, sequence, type, at, data) VALUES (?, ?, ?, ?, ?)');
    const batch = raw.transaction((runId: string, from: number, n: number) => {
      const at = new Date().toISOString();
      for (let j = 0; j < n; j++) insert.run(runId, from + j, 'ToolResulted', at, JSON.stringify(DATA));
    });
    let rawRun = 0;
    const baseline = await measure(
      () => {
        const runId = `run_${rawRun++}`;
        batch.immediate(runId, 1, 1);
        for (let i = 0; i < total; i += perCommit) batch.immediate(runId, 2 + i, perCommit);
      },
      { samples: 5, warmup: 1 },
    );
    raw.close();
    const perEvent = (s: number) => s / total;
    return {
      name: `event append, ${perCommit} event(s) per commit, synchronous=${synchronous} (${total} events)`,
      seconds: perEvent(ours),
      baselineName: 'raw better-sqlite3 INSERT',
      baselineSeconds: perEvent(baseline),
      target: '≥ 0.5× (throughput ratio)',
      ratioKind: 'speed',
      extra: `loopx ${Math.round(1 / perEvent(ours)).toLocaleString('en')} events/s, raw ${Math.round(1 / perEvent(baseline)).toLocaleString('en')} events/s`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchFigure[]> {
  return [await figure(1, 500, 'FULL'), await figure(1, 2_000, 'NORMAL'), await figure(100, 20_000, 'FULL')];
}
