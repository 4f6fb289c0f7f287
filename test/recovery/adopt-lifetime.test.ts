/**
 * §9 "Goal lifetime is not resurrected": the source's Goal `launch` is worked and backed up
 * (lifetime L1, with two runs of L1 suspended at the capture), then retired and created again
 * under the same alias (lifetime L2) and worked again. Recovering the backed-up L1 into a new root
 * mints a third lifetime, and: L1's stale bindings — a suspended run in the source, the same
 * run's twin moved into the new root, a delivery under L1's fence — neither write, spend, deliver
 * nor settle anything, in the source's L2 or in the new root; L2 is not superseded by recovering
 * L1 and keeps working; L1's original receipts stay readable (and replay) in the new root. Real
 * CLI children, real SQLite, a real loopback receiver.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { loopxAsync } from '../support/cli.js';
import * as workOwner from '../../src/owners/work/index.js';
import { agentFile, BEFORE, type Doc } from './support/adopt.js';
import {
  as,
  backupVerified,
  effectsOf,
  newUser,
  recoverInto,
  refusedAs,
  spendsOf,
  type User,
} from './support/adopt-users.js';

let sink: WebhookSink;
let u: User;
let R: string;
let st: Doc;
const ids = { l1: '', l2: '' };
const stale = { inSource: '', moved: '' };
let agents: { stale: string; l2: string };

/** What a stale run of L1 would do once resumed: a note on t3, then an announcement. */
const STALE = [
  { text: 'Looking.', tool_calls: [{ name: 'todo.list', arguments: {} }] },
  {
    text: 'Closing t3.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't3', status: 'done', note: 'stale close' } }],
  },
  { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'stale news' } }] },
  { text: 'Done.' },
];
/** The second lifetime's work in the source, on a Todo no earlier session still leases (a session's lease outlives its run until its TTL). */
const SECOND = (n: number, todo: string) => [
  {
    text: 'Noting.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: todo, note: `second lifetime ${n}` } }],
  },
  {
    text: 'Announcing.',
    tool_calls: [{ name: 'webhook.deliver', arguments: { message: `second lifetime news ${n}` } }],
  },
  { text: 'Done.' },
];

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  u = newUser('loopx-adopt-lifetime-');
  const at = (root: string) => ['--root', root];
  agents = { stale: agentFile(u.dir, 'stale', STALE), l2: agentFile(u.dir, 'second', SECOND(1, 't3')) };
  await as(u, ['init', ...at(u.root)]);
  ids.l1 = (
    await as(u, ['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at(u.root)])
  ).goal_instance_id;
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    await as(u, ['todo', 'add', '--goal', 'launch', '--title', title, ...at(u.root)]);
  await as(u, [
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agentFile(u.dir, 'before', BEFORE),
    '--sink',
    sink.deliveriesUrl,
    ...at(u.root),
  ]);
  // Two runs of L1, each bound to its own session, suspended after their first turn.
  for (const k of ['inSource', 'moved'] as const) {
    const run = await as(u, [
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      agents.stale,
      '--turns',
      '1',
      ...at(u.root),
    ]);
    expect(run.status).toBe('suspended');
    stale[k] = run.run_id;
  }
  await backupVerified(u);
  // L1 ends; the alias gets a new lifetime, which works (and delivers) before the recovery.
  await as(u, ['goal', 'retire', 'launch', ...at(u.root)]);
  ids.l2 = (
    await as(u, ['goal', 'create', 'launch', '--title', 'Ship the launch post, again', ...at(u.root)])
  ).goal_instance_id;
  await as(u, ['work', 'run', '--goal', 'launch', '--agent', agents.l2, ...at(u.root)]);
  R = join(u.dir, 'recovered');
  st = await recoverInto(u, R);
}, 240_000);
afterAll(async () => {
  await sink.close();
});

const todos = async (root: string) =>
  (await as(u, ['todo', 'list', '--goal', 'launch', '--root', root])).todos as {
    todo_id: string;
    status: string;
    note: string | null;
  }[];
const committed = async (root: string) =>
  (await as(u, ['goal', 'show', 'launch', '--root', root])).committed_transactions as number;
const messages = () => sink.deliveries().map((d) => (d.body as { message: string }).message);

describe('recovering a retired and re-created Goal’s backed-up lifetime', () => {
  it('mints a new lifetime: neither the backed-up one nor the source’s second one', async () => {
    expect(st.state, JSON.stringify(st.holds)).toBe('complete');
    expect(ids.l1).not.toBe(ids.l2);
    expect(st.goal.recovered_instance_id).toBe(ids.l1);
    expect([ids.l1, ids.l2]).not.toContain(st.goal.new_instance_id);
    const rebind = st.receipts.find((r: { action: string }) => r.action === 'goal:rebind').readback;
    // The new lifetime continues L1's lineage one generation on; L2 is a lineage of its own.
    expect(rebind).toMatchObject({
      goal_instance_id: st.goal.new_instance_id,
      superseded_instance_id: ids.l1,
      lineage_id: ids.l1,
      generation: 2,
    });
    expect((await as(u, ['goal', 'show', 'launch', '--root', R])).goal_instance_id).toBe(st.goal.new_instance_id);
    expect(await as(u, ['goal', 'show', 'launch', '--root', u.root])).toMatchObject({
      goal_instance_id: ids.l2,
      lifecycle: 'active',
    });
  }, 180_000);

  it('keeps L1’s history readable in the new root: the original receipt under its original store, replayed not re-applied', async () => {
    const importReceipt = st.receipts.find((r: { action: string }) => r.action === 'work:import_inert').readback;
    const update = (await effectsOf(R)).find(
      (e) => e.kind === 'work.todo_update' && JSON.parse(e.intent).todo_id === 't1',
    )!;
    expect(update.outcome).toBe('committed');
    const work = await workOwner.openGoalWork({ root: R, goal_id: 'launch' });
    try {
      const original = (await work.readReceipt(update.operation_id))!;
      expect(original.receipt).toMatchObject({
        store_identity: importReceipt.source_store_identity,
        operation: 'update_todo',
        todo_id: 't1',
      });
    } finally {
      work.close();
    }
    const before = await committed(R);
    const op = update.operation_id;
    const replay = await as(u, [
      'todo',
      'update',
      't1',
      '--goal',
      'launch',
      '--status',
      'done',
      '--note',
      'outline drafted',
      '--operation-id',
      op,
      '--root',
      R,
    ]);
    expect(replay.result).toBe('already_applied');
    expect(
      await refusedAs(u, [
        'todo',
        'update',
        't1',
        '--goal',
        'launch',
        '--status',
        'open',
        '--operation-id',
        op,
        '--root',
        R,
      ]),
    ).toEqual({
      status: 3,
      code: 'operation_identity_mismatch',
    });
    expect(await committed(R)).toBe(before);
  }, 180_000);

  it('refuses to resume L1’s stale run in the source: the run unchanged, nothing written, spent, delivered or settled there', async () => {
    const [todosBefore, spendsBefore, effectsBefore, committedBefore] = [
      await todos(u.root),
      await spendsOf(u.root),
      await effectsOf(u.root),
      await committed(u.root),
    ];
    const shown = await as(u, ['run', 'show', stale.inSource, '--root', u.root]);
    // Refused before the run is leased or changed: it stays as it was, as evidence.
    expect(await refusedAs(u, ['run', 'resume', stale.inSource, '--root', u.root])).toEqual({
      status: 4,
      code: 'goal_lifetime_superseded',
    });
    expect(await as(u, ['run', 'show', stale.inSource, '--root', u.root])).toEqual(shown);
    expect(await todos(u.root)).toEqual(todosBefore);
    expect(await committed(u.root)).toBe(committedBefore);
    expect(await spendsOf(u.root)).toEqual(spendsBefore);
    expect(await effectsOf(u.root)).toEqual(effectsBefore);
    expect(messages()).not.toContain('stale news');
    // Whatever it would send carries L1's lineage at generation 1: the receiver refuses it.
    const res = await fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': 'stale-l1',
        'x-operation-id': 'stale-l1',
        'x-loopx-goal-lineage': ids.l1,
        'x-loopx-fence': '1',
      },
      body: JSON.stringify({ goal_id: 'launch', message: 'stale news' }),
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: string }).error).toBe('fence_stale');
    expect(sink.deliveries().some((d) => d.operation_id === 'stale-l1')).toBe(false);
  }, 180_000);

  it('refuses L1’s other stale run moved into the new root: it is bound to no session there and touches nothing', async () => {
    const snapshot = join(u.dir, 'stale.snapshot');
    await as(u, ['run', 'export', stale.moved, '--out', snapshot, '--root', u.root]);
    await as(u, ['run', 'import', snapshot, '--agent', agents.stale, '--root', R]);
    const [todosBefore, spendsBefore, effectsBefore, committedBefore] = [
      await todos(R),
      await spendsOf(R),
      await effectsOf(R),
      await committed(R),
    ];
    // The run ends failed: its document is printed and the command exits 5.
    const r = await loopxAsync(['run', 'resume', stale.moved, '--root', R, '--authority-dir', u.authority, '--json']);
    expect(r.status, r.stderr).toBe(5);
    expect(r.json()).toMatchObject({ status: 'failed', completed_turns: 1, failure: { code: 'goal_work_unbound' } });
    expect(await todos(R)).toEqual(todosBefore);
    expect(await committed(R)).toBe(committedBefore);
    expect(await spendsOf(R)).toEqual(spendsBefore);
    expect(await effectsOf(R)).toEqual(effectsBefore);
    expect((await todos(R)).find((t) => t.todo_id === 't3')).toMatchObject({ status: 'open', note: null });
    expect(messages()).not.toContain('stale news');
  }, 180_000);

  it('does not supersede the source’s second lifetime: L2 keeps writing and delivering under its own fence', async () => {
    const added = await as(u, ['todo', 'add', '--goal', 'launch', '--title', 'Plan the sequel', '--root', u.root]);
    expect(added.result).toBe('applied');
    const run = await as(u, [
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      agentFile(u.dir, 'second-2', SECOND(2, added.todo.todo_id)),
      '--root',
      u.root,
    ]);
    expect(run).toMatchObject({ status: 'completed', goal: { goal_instance_id: ids.l2 } });
    expect((await todos(u.root)).find((t) => t.todo_id === added.todo.todo_id)?.note).toBe('second lifetime 2');
    const l2 = sink.attempts(ids.l2);
    expect(l2.attempts.map((a) => a.result)).toEqual(['stored', 'stored']);
    expect(l2.attempts.every((a) => a.fence === 1)).toBe(true);
    expect(messages()).toEqual(expect.arrayContaining(['second lifetime news 1', 'second lifetime news 2']));
    // The new root and the source are separate: neither sees the other's new work.
    expect((await todos(R)).map((t) => t.todo_id)).toEqual(['t1', 't2', 't3']);
  }, 180_000);
});
