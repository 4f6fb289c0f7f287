/**
 * The Turns of Goal work runs, in-process through the runtime as the CLI and the daemon call it, on
 * real SQLite owners: every engine turn is one Turn journal of the run's session, begun under the
 * session's execution generation, its phases an ordered prefix of TURN_PHASES, debited once in the
 * quota ledger and settled, both under the Turn key; a resumed run continues with the next Turn;
 * a rebind fences the run before its next model call; a failure between the debit and the
 * settlement is repaired by the next driver without a second debit; other runs record nothing.
 */
import { join, dirname } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { FAULT_AFTER_QUOTA_DEBIT, TURN_DEBIT_UNIT, messageId, turnTokens } from '../../src/engine/index.js';
import { THROW_FAULT_PREFIX } from '../../src/core/index.js';
import { quota, session } from '../../src/owners/index.js';
import {
  addTodo,
  createGoal,
  initRoot,
  loadAgentFile,
  runGoalWork,
  withRootEngine,
  type Engine,
} from '../../src/runtime/index.js';
import { REPO, tempRoot } from '../support/cli.js';

const AGENT = loadAgentFile(join(REPO, 'examples/agents/goal-worker.json'));
const PLAIN = loadAgentFile(join(REPO, 'examples/agents/minimal.json'));
/** The phases a committed Goal work Turn records: every phase up to quota_spend (it applies no timer). */
const COMMITTED_PHASES = session.TURN_PHASES.slice(0, session.TURN_PHASES.indexOf('quota_spend') + 1);

let sink: WebhookSink;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
});
afterAll(async () => {
  await sink.close();
});
afterEach(() => {
  delete process.env.LOOPX_TEST_FAULT;
});

async function goalRoot(): Promise<string> {
  const root = tempRoot('loopx-turns-');
  initRoot(root);
  await createGoal(root, 'launch', 'Ship the launch post');
  for (const [i, title] of ['Draft the outline', 'Review with design', 'Publish the post'].entries()) {
    await addTodo(root, 'launch', { operation_id: `add-${i}`, todo_id: `t${i + 1}`, title });
  }
  return root;
}

const withEngine = <T>(root: string, fn: (engine: Engine) => Promise<T>): Promise<T> =>
  withRootEngine({ root, authorityDir: join(dirname(root), 'authority') }, fn);

const work = (root: string, turns?: number) =>
  withEngine(root, (engine) =>
    runGoalWork({
      root,
      goalId: 'launch',
      agent: AGENT,
      engine,
      webhookUrl: sink.deliveriesUrl,
      ...(turns !== undefined ? { turns } : {}),
    }),
  );

/** What the session and quota owners hold for a session: its Turns, their settlements, and the ledger. */
async function ownersOf(root: string, sessionId: string) {
  const sessions = session.openSqliteSessionStore(join(root, 'sessions.db'));
  const ledger = quota.openSqliteQuotaLedger(join(root, 'quota.db'));
  try {
    const turns = await sessions.listTurns(sessionId);
    const settlements = await Promise.all(turns.map((t) => sessions.getSettlement(t.turn_key)));
    return { session: (await sessions.getSession(sessionId))!, turns, settlements, debits: await ledger.list() };
  } finally {
    sessions.close();
    ledger.close();
  }
}

describe('Goal work Turns', () => {
  it('each turn of a Goal work run is one settled Turn journal, its phases in contract order, and one debit under its Turn key', async () => {
    const root = await goalRoot();
    const { run, session: s, goal } = await work(root);
    expect(run).toMatchObject({ status: 'completed', completed_turns: 5 });
    const o = await ownersOf(root, s.session_id);
    expect(o.turns.map((t) => [t.turn_index, t.status, t.run_id, t.execution_generation])).toEqual(
      [0, 1, 2, 3, 4].map((i) => [i, 'committed', run.run_id, s.execution_generation]),
    );
    for (const t of o.turns) {
      expect(t.turn_key).toBe(session.turnKeyOf(s.session_id, t.turn_index));
      expect(t.phases.map((p) => p.phase)).toEqual(COMMITTED_PHASES);
    }
    // host_execute names the engine's model call; quota_spend the debit, by its settlement identity.
    expect(o.turns[0]!.phases[0]!.ref).toBe(`${run.run_id}:t1:c0`);
    expect(o.turns[0]!.phases.at(-1)!.ref).toBe(`${o.turns[0]!.turn_key}#quota_spend`);
    expect(o.settlements.map((x) => [x?.settlement_id, x?.status, x?.result_kind, x?.phase_count])).toEqual(
      o.turns.map((t, i) => [
        t.turn_key,
        'committed',
        i === 4 ? 'validated_completion' : 'validated_progress',
        COMMITTED_PHASES.length,
      ]),
    );
    // Exactly one debit per Turn, its settlement identity the Turn key, its amount the recorded response's.
    const messages = await withEngine(root, async (engine) => engine.messages(run.run_id));
    expect(o.debits.map((d) => [d.effect_id, d.status, d.unit, d.goal_id, d.goal_instance_id, d.amount])).toEqual(
      o.turns.map((t, i) => [
        t.turn_key,
        'written',
        TURN_DEBIT_UNIT,
        'launch',
        goal.goal_instance_id,
        turnTokens(messages.find((m) => m.id === messageId(run.run_id, i + 1, 0))!),
      ]),
    );
  }, 60_000);

  it('a resumed run continues with the next Turn: no Turn journal or debit is repeated', async () => {
    const root = await goalRoot();
    const { run, session: s } = await work(root, 2);
    expect(run).toMatchObject({ status: 'suspended', completed_turns: 2 });
    const before = await ownersOf(root, s.session_id);
    expect(before.turns.map((t) => [t.turn_index, t.status])).toEqual([
      [0, 'committed'],
      [1, 'committed'],
    ]);
    expect(before.debits).toHaveLength(2);
    expect((await withEngine(root, (engine) => engine.resume(run.run_id, { turns: 1 }))).completed_turns).toBe(3);
    expect((await withEngine(root, (engine) => engine.resume(run.run_id))).status).toBe('completed');
    const after = await ownersOf(root, s.session_id);
    expect(after.turns.map((t) => [t.turn_index, t.status])).toEqual([0, 1, 2, 3, 4].map((i) => [i, 'committed']));
    expect(after.turns.slice(0, 2)).toEqual(before.turns);
    expect(after.debits.slice(0, 2)).toEqual(before.debits);
    expect(new Set(after.debits.map((d) => d.effect_id))).toEqual(new Set(after.turns.map((t) => t.turn_key)));
    expect(after.debits).toHaveLength(5);
  }, 60_000);

  it('a rebind between turns fences the run: its next turn is refused with session_generation_stale before any model call, and nothing is recorded for it', async () => {
    const root = await goalRoot();
    const { run, session: s } = await work(root, 1);
    const sessions = session.openSqliteSessionStore(join(root, 'sessions.db'));
    try {
      const rebound = await sessions.bindRun(s.session_id, run.run_id, s.execution_generation);
      expect(rebound.execution_generation).toBe(s.execution_generation + 1);
    } finally {
      sessions.close();
    }
    const before = await ownersOf(root, s.session_id);
    const resumed = await withEngine(root, (engine) => engine.resume(run.run_id));
    expect(resumed).toMatchObject({
      status: 'failed',
      completed_turns: 1,
      failure: { code: 'session_generation_stale' },
    });
    const events = await withEngine(root, async (engine) => {
      const all = [];
      for await (const e of engine.events(run.run_id)) all.push(e);
      return all;
    });
    // The turn began in the engine, the session owner refused it, and no model call was made.
    expect(events.slice(-3).map((e) => [e.type, e.data])).toEqual([
      ['Resumed', { completed_turns: 1 }],
      ['TurnStarted', { turn: 2 }],
      ['Failed', { code: 'session_generation_stale', turn: 2 }],
    ]);
    const after = await ownersOf(root, s.session_id);
    expect(after.turns).toEqual(before.turns);
    expect(after.debits).toEqual(before.debits);
    // The run stays stopped: it never continues.
    await expect(withEngine(root, (engine) => engine.resume(run.run_id))).rejects.toMatchObject({
      code: 'run_terminal',
    });
  }, 60_000);

  it('a failure between the debit and the settlement is repaired by the next driver: the Turn settles once and the ledger keeps its one debit', async () => {
    const root = await goalRoot();
    process.env.LOOPX_TEST_FAULT = `${THROW_FAULT_PREFIX}${FAULT_AFTER_QUOTA_DEBIT}`;
    await expect(work(root)).rejects.toThrow(`injected fault at ${FAULT_AFTER_QUOTA_DEBIT}`);
    delete process.env.LOOPX_TEST_FAULT;
    const sessions = session.openSqliteSessionStore(join(root, 'sessions.db'));
    const s = (await sessions.listSessions())[0]!;
    sessions.close();
    const crashed = await ownersOf(root, s.session_id);
    expect(crashed.turns.map((t) => [t.status, t.phases.map((p) => p.phase)])).toEqual([
      ['in_progress', session.TURN_PHASES.slice(0, 4)],
    ]);
    expect(crashed.debits.map((d) => d.effect_id)).toEqual([crashed.turns[0]!.turn_key]);

    expect((await withEngine(root, (engine) => engine.resume(s.run_id!))).status).toBe('completed');
    const repaired = await ownersOf(root, s.session_id);
    expect(repaired.turns.map((t) => t.status)).toEqual(Array(5).fill('committed'));
    expect(repaired.settlements[0]).toMatchObject({ settlement_id: crashed.turns[0]!.turn_key, status: 'committed' });
    expect(repaired.debits[0]).toEqual(crashed.debits[0]);
    expect(repaired.debits.filter((d) => d.effect_id === crashed.turns[0]!.turn_key)).toHaveLength(1);
    expect(repaired.debits).toHaveLength(5);
  }, 60_000);

  it('a run that is not Goal work records no Turn and no debit; a Goal work run bound to no session here is refused before its first model call', async () => {
    const root = await goalRoot();
    const plain = await withEngine(root, (engine) => engine.start(PLAIN, { input: 'hi' }));
    expect(plain.status).toBe('completed');
    const unbound = await withEngine(root, (engine) => engine.start(AGENT, { input: 'work' }));
    expect(unbound).toMatchObject({ status: 'failed', completed_turns: 0, failure: { code: 'goal_work_unbound' } });
    const sessions = session.openSqliteSessionStore(join(root, 'sessions.db'));
    const ledger = quota.openSqliteQuotaLedger(join(root, 'quota.db'));
    try {
      expect(await sessions.listSessions()).toEqual([]);
      expect(await ledger.list()).toEqual([]);
    } finally {
      sessions.close();
      ledger.close();
    }
  }, 60_000);
});
