/**
 * The run store's conditional commit, on every provider (the in-memory reference, SQLite and PostgreSQL): a
 * commit lands only at the sequence its writer expected, atomically, and a refused one leaves no
 * trace. The SQLite cases also run with two connections to one file, as two processes would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openPgRunStore, RUNS_COMPONENT, RUNS_PG_MIGRATIONS } from '../../src/engine/run-store/postgres.js';
import { migratePostgres, openPostgres, type PgDatabase } from '../../src/store/index.js';
import { PG_AVAILABLE, PG_URL, pgSchemas } from '../support/pg.js';
import { isLoopxError } from '../../src/core/index.js';
import type { AgentDefinition } from '../../src/engine/agent.js';
import type { RunHead, RunStore } from '../../src/engine/run-store/contract.js';
import { memoryRunStore } from '../../src/engine/run-store/memory.js';
import { openSqliteRunStore } from '../../src/engine/run-store/sqlite.js';

const head = (runId: string, lastSequence = 0): RunHead => ({
  runId,
  definition: { id: 'agent', version: '1' },
  model: { provider: 'scripted', modelId: 'm' },
  turnLimit: 10,
  completedTurns: 0,
  lifecycle: 'active',
  planIdentity: { components: [], toolPlanId: 'p', compatibilityIdentity: '', fingerprint: '0'.repeat(64) },
  usedInteractionIds: [],
  lastSequence,
  messageCount: 0,
  turnInProgress: false,
  suspendAtTurn: null,
  pendingInteraction: null,
  failure: null,
  createdAt: '',
  updatedAt: '',
});

const ev = (turn: number) => ({ type: 'TurnStarted' as const, data: { turn } });

async function refusal(fn: () => Promise<unknown>): Promise<{ code: string; details?: unknown }> {
  try {
    await fn();
  } catch (e) {
    if (isLoopxError(e)) return { code: e.code, details: e.details };
    throw e;
  }
  throw new Error('expected a refusal');
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const pgSchema = pgSchemas();
const pools: PgDatabase[] = [];
afterAll(async () => {
  for (const p of pools.splice(0)) await p.close();
});

/** Two handles on one store: the same object in memory, two connections to one file for SQLite, two pools on one schema for PostgreSQL. */
const providers: Array<[string, () => [RunStore, RunStore] | Promise<[RunStore, RunStore]>]> = [
  [
    'memory',
    () => {
      const s = memoryRunStore();
      return [s, s];
    },
  ],
  [
    'sqlite',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'loopx-run-store-'));
      dirs.push(dir);
      const path = join(dir, 'engine.db');
      return [openSqliteRunStore(path), openSqliteRunStore(path, { synchronous: 'NORMAL' })];
    },
  ],
  ...(PG_AVAILABLE
    ? [
        [
          'postgresql',
          async (): Promise<[RunStore, RunStore]> => {
            const schema = pgSchema();
            const [a, b] = [
              openPostgres({ url: PG_URL, schema, max: 2 }),
              openPostgres({ url: PG_URL, schema, max: 2 }),
            ];
            pools.push(a, b);
            await migratePostgres(a, RUNS_COMPONENT, RUNS_PG_MIGRATIONS);
            return [openPgRunStore(a), openPgRunStore(b)];
          },
        ] as [string, () => Promise<[RunStore, RunStore]>],
      ]
    : []),
];

describe.each(providers)('run store (%s)', (_name, open) => {
  it('a commit appends events at expectedSequence+1, +2, … and moves the head with them', async () => {
    const [store] = await open();
    const first = await store.commit({ head: head('r1'), expectedSequence: 0, events: [ev(0)] });
    expect(first.map((e) => e.sequence)).toEqual([1]);
    const next = await store.commit({
      head: head('r1', 1),
      expectedSequence: 1,
      events: [ev(1), ev(2)],
      messages: [{ index: 0, message: { id: 'm0', role: 'user', parts: [] } }],
    });
    expect(next.map((e) => [e.sequence, e.data])).toEqual([
      [2, { turn: 1 }],
      [3, { turn: 2 }],
    ]);
    expect((await store.get('r1'))?.lastSequence).toBe(3);
    expect((await store.readEvents('r1', 0, 10)).map((e) => [e.sequence, e.type, e.data])).toEqual([
      [1, 'TurnStarted', { turn: 0 }],
      [2, 'TurnStarted', { turn: 1 }],
      [3, 'TurnStarted', { turn: 2 }],
    ]);
    expect(await store.messages('r1')).toHaveLength(1);
  });

  it('a large commit stores every event, in order, with its own data (16, 37 and 1 to a commit)', async () => {
    const [store] = await open();
    let seq = 0;
    for (const n of [16, 37, 1]) {
      const events = Array.from({ length: n }, (_, i) => ev(seq + i));
      const appended = await store.commit({ head: head('r1', seq), expectedSequence: seq, events });
      expect(appended.map((e) => e.sequence)).toEqual(events.map((_, i) => seq + 1 + i));
      seq += n;
    }
    const stored = await store.readEvents('r1', 0, 100);
    expect(stored.map((e) => [e.sequence, e.data.turn])).toEqual(Array.from({ length: 54 }, (_, i) => [i + 1, i]));
    expect((await store.get('r1'))?.lastSequence).toBe(54);
  });

  it('a stale writer is fenced: a commit at an old sequence is refused with the sequence found, and stores nothing', async () => {
    const [a, b] = await open();
    await a.commit({ head: head('r1'), expectedSequence: 0, events: [ev(0)] });
    await a.commit({ head: head('r1', 1), expectedSequence: 1, events: [ev(1)] });
    const r = await refusal(() =>
      b.commit({
        head: { ...head('r1', 1), completedTurns: 9 },
        expectedSequence: 1,
        events: [ev(9)],
        messages: [{ index: 0, message: { id: 'stale', role: 'user', parts: [] } }],
        mutations: [
          { runId: 'r1', callId: 'c1', turn: 1, toolName: 't', argumentsJson: '{}', state: 'intent', resultJson: null },
        ],
      }),
    );
    expect(r).toEqual({
      code: 'run_sequence_conflict',
      details: { run_id: 'r1', expected_sequence: 1, found_sequence: 2 },
    });
    expect(await a.get('r1')).toMatchObject({ lastSequence: 2, completedTurns: 0 });
    expect((await a.readEvents('r1', 0, 10)).map((e) => e.sequence)).toEqual([1, 2]);
    expect(await a.messages('r1')).toEqual([]);
    expect(await a.mutations('r1')).toEqual([]);
  });

  it('a writer ahead of the run is refused too: the sequence must match exactly', async () => {
    const [store] = await open();
    await store.commit({ head: head('r1'), expectedSequence: 0, events: [ev(0)] });
    expect(
      await refusal(() => store.commit({ head: head('r1', 5), expectedSequence: 5, events: [ev(1)] })),
    ).toMatchObject({
      code: 'run_sequence_conflict',
      details: { expected_sequence: 5, found_sequence: 1 },
    });
    expect((await store.get('r1'))?.lastSequence).toBe(1);
  });

  it('a second start of one run id is refused with the sequence found, and the first run is untouched', async () => {
    const [a, b] = await open();
    await a.commit({ head: head('r1'), expectedSequence: 0, events: [ev(0), ev(1)] });
    expect(
      await refusal(() => b.commit({ head: { ...head('r1'), turnLimit: 99 }, expectedSequence: 0, events: [ev(7)] })),
    ).toEqual({
      code: 'run_sequence_conflict',
      details: { run_id: 'r1', expected_sequence: 0, found_sequence: 2 },
    });
    expect(await a.get('r1')).toMatchObject({ lastSequence: 2, turnLimit: 10 });
    expect((await a.readEvents('r1', 0, 10)).map((e) => e.data)).toEqual([{ turn: 0 }, { turn: 1 }]);
  });

  it('a commit to a run that does not exist is refused, and creates nothing', async () => {
    const [store] = await open();
    expect(await refusal(() => store.commit({ head: head('ghost', 3), expectedSequence: 3, events: [ev(1)] }))).toEqual(
      {
        code: 'run_sequence_conflict',
        details: { run_id: 'ghost', expected_sequence: 3, found_sequence: null },
      },
    );
    expect(await store.get('ghost')).toBeUndefined();
    expect(await store.readEvents('ghost', 0, 10)).toEqual([]);
  });

  it('a commit without events is refused', async () => {
    const [store] = await open();
    expect((await refusal(() => store.commit({ head: head('r1'), expectedSequence: 0, events: [] }))).code).toBe(
      'empty_commit',
    );
    expect(await store.get('r1')).toBeUndefined();
  });

  it('an import of a run that exists is refused with its sequence', async () => {
    const [a, b] = await open();
    await a.commit({ head: head('r1'), expectedSequence: 0, events: [ev(0)] });
    const def: AgentDefinition = {
      id: 'agent',
      version: '1',
      model: { provider: 'scripted', modelId: 'm' },
      turnLimit: 10,
      toolPlan: 'p',
    };
    expect(await refusal(() => b.insertImported(head('r1', 4), [], def))).toMatchObject({
      code: 'run_sequence_conflict',
      details: { found_sequence: 1 },
    });
    expect((await a.get('r1'))?.lastSequence).toBe(1);
  });

  it.each([0, 1, 16, 37])(
    'an imported history of %i messages reads back whole and in order, with its definition',
    async (count) => {
      const [a, b] = await open();
      const def: AgentDefinition = {
        id: 'agent',
        version: '1',
        model: { provider: 'scripted', modelId: 'm' },
        turnLimit: 10,
        toolPlan: 'p',
      };
      const messages = Array.from({ length: count }, (_, i) => ({
        id: `m${i}`,
        role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
        parts: [{ type: 'text' as const, text: `message ${i}` }],
      }));
      await a.insertImported({ ...head('r1', 7), lifecycle: 'suspended', messageCount: count }, messages, def);
      expect(await b.messages('r1')).toEqual(messages);
      expect(await b.get('r1')).toMatchObject({ lastSequence: 7, lifecycle: 'suspended' });
      expect(await b.getDefinition(def)).toEqual(def);
    },
  );

  it('an import whose definition differs from the stored one of the same id and version is refused and stores nothing', async () => {
    const [a, b] = await open();
    const def: AgentDefinition = {
      id: 'agent',
      version: '1',
      model: { provider: 'scripted', modelId: 'm' },
      turnLimit: 10,
      toolPlan: 'p',
    };
    await a.putDefinition(def);
    const other: AgentDefinition = { ...def, turnLimit: 11 };
    expect((await refusal(() => b.insertImported(head('r1', 4), [], other))).code).toBe('definition_conflict');
    expect(await b.get('r1')).toBeUndefined();
    expect(await b.definitionBodyOf(def)).toBe(await a.definitionBodyOf(def));
  });
});
