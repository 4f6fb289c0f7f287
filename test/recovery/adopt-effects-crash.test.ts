/**
 * §9 "Effects do not duplicate" and "Delivery is recoverable but not authoritative": a source
 * `work run` killed (SIGKILL, LOOPX_TEST_FAULT on that child only) at each crash point of one
 * delivery, then backed up (quiescent), verified, planned and applied into a new root as its own
 * user. The same operation id reconciles to what the receiver says — absent (never sent),
 * committed (stored, its local ACK missing), kept committed (settled locally) — or stays unknown
 * and held while the receiver is down, until it is resolved through the effect owner; a delivery
 * the receiver stored after the capture is found there (a stale cursor). The apply sends nothing;
 * the continuation in the new root, which delivers the same message again, never makes the
 * receiver store or see it twice: at most one attempt per operation id and idempotency key across
 * the whole case, and no duplicate. Cases run in parallel, each as its own user with its own
 * source, workspace, destination and Goal lineage.
 */
import { join } from 'node:path';
import { lifetimeFence } from '../../src/owners/goal/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type SinkAttempt, type WebhookSink } from '../../src/dev/index.js';
import type { EffectRecord } from '../../src/owners/effect/index.js';
import { loopxAsync } from '../support/cli.js';
import { agentFile, type Doc } from './support/adopt.js';
import { as, backupVerified, effectsOf, newUser, type User } from './support/adopt-users.js';

interface Case {
  readonly name: string;
  readonly point: string;
  readonly outcome: 'absent' | 'committed';
  /** The receiver is down during the apply (and back for the resolve). */
  readonly sinkDown?: boolean;
  /** The crashed delivery happens after the capture (the source's cursor in the backup is stale). */
  readonly afterCapture?: boolean;
}

const CASES: readonly Case[] = [
  { name: 'before the send', point: 'effect.webhook.before-send', outcome: 'absent' },
  { name: 'after the engine’s intent, before the send', point: 'engine.mutation.after-intent', outcome: 'absent' },
  {
    name: 'after the receiver stored it, before the local settlement',
    point: 'effect.webhook.after-send',
    outcome: 'committed',
  },
  { name: 'after the local settlement', point: 'engine.mutation.after-effect-settled', outcome: 'committed' },
  {
    name: 'before the send, the receiver down during the apply',
    point: 'effect.webhook.before-send',
    outcome: 'absent',
    sinkDown: true,
  },
  {
    name: 'after the capture, after the receiver stored it',
    point: 'effect.webhook.after-send',
    outcome: 'committed',
    afterCapture: true,
  },
];

const MESSAGE = 'outline ready';
const ANNOUNCE = [
  { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: MESSAGE } }] },
  { text: 'Done.' },
];
const KICKOFF = [
  { text: 'Kicking off.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'kickoff' } }] },
  { text: 'Done.' },
];
/** The continuation in the new root: the same announcement again, then the Todo done. */
const CONTINUE = [
  { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: MESSAGE } }] },
  {
    text: 'Done.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't1', status: 'done', note: 'announced' } }],
  },
  { text: 'The Goal is finished.' },
];

interface Observed {
  readonly c: Case;
  readonly u: User;
  readonly lineage: string;
  readonly killed: string | null;
  readonly destination: string;
  /** The crashed delivery as the source journal holds it. */
  readonly source: EffectRecord;
  /** The apply's status, and (receiver down) the status after the holds were resolved. */
  readonly applied: Doc;
  readonly resolved: Doc | undefined;
  /** The receiver's attempts for the lineage before the apply, after it, and at the end. */
  readonly attempts: {
    readonly beforeApply: SinkAttempt[];
    readonly afterApply: SinkAttempt[];
    readonly end: SinkAttempt[];
  };
  readonly stored: string[];
  readonly continued: Doc;
  readonly effects: EffectRecord[];
}

let shared: WebhookSink;
let results: Observed[] = [];

beforeAll(async () => {
  shared = await startWebhookSink({ port: 0 });
  results = await Promise.all(CASES.map(runCase));
}, 240_000);
afterAll(async () => {
  await shared.close();
});

/** The source: a Goal with one Todo and a delivery killed at `c.point` (before or after a verified quiescent backup). */
async function source(c: Case, sink: WebhookSink) {
  const u = newUser('loopx-adopt-effects-');
  const at = ['--root', u.root];
  await as(u, ['init', ...at]);
  const lineage = (await as(u, ['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at]))
    .goal_instance_id as string;
  await as(u, ['todo', 'add', '--goal', 'launch', '--title', 'Announce the outline', ...at]);
  const crash = () =>
    loopxAsync(
      [
        'work',
        'run',
        '--goal',
        'launch',
        '--agent',
        agentFile(u.dir, 'announce', ANNOUNCE),
        '--sink',
        sink.deliveriesUrl,
        ...at,
        '--authority-dir',
        u.authority,
        '--json',
      ],
      {
        LOOPX_TEST_FAULT: c.point,
      },
    );
  let killed: string | null = null;
  if (c.afterCapture)
    await as(u, [
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      agentFile(u.dir, 'kickoff', KICKOFF),
      '--sink',
      sink.deliveriesUrl,
      ...at,
    ]);
  else killed = (await crash()).signal;
  await backupVerified(u);
  if (c.afterCapture) killed = (await crash()).signal;
  const source = (await effectsOf(u.root)).find(
    (e) => e.kind === 'webhook.deliver' && JSON.parse(e.intent).body?.message === MESSAGE,
  )!;
  return { u, lineage, killed, source };
}

/** One case end to end: the crashed source, its recovery (held and resolved while the receiver is down), the continuation. */
async function runCase(c: Case): Promise<Observed> {
  // A case whose receiver goes down has its own, journalled, so that it comes back with what it held.
  const journalPath = c.sinkDown ? join(newUser('loopx-adopt-sink-').dir, 'sink.jsonl') : '';
  let sink = c.sinkDown ? await startWebhookSink({ port: 0, journalPath }) : shared;
  const { u, lineage, killed, source: crashed } = await source(c, sink);
  const destination = join(u.dir, 'recovered');
  const plan = await as(u, [
    'recover',
    'plan',
    '--from',
    u.workspace,
    '--goal',
    'launch',
    '--destination',
    destination,
    '--root',
    u.root,
  ]);
  const beforeApply = sink.attempts(lineage).attempts;
  if (c.sinkDown) await sink.close();
  const applied = await as(u, ['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest]);
  let resolved: Doc | undefined;
  if (c.sinkDown) {
    sink = await startWebhookSink({ port: sink.port, journalPath });
    for (const h of applied.holds as { hold_id: string }[])
      await as(u, ['recover', 'resolve', '--destination', destination, '--hold', h.hold_id]);
    resolved = await as(u, ['recover', 'status', '--destination', destination]);
  }
  const afterApply = sink.attempts(lineage).attempts;
  const continued = await as(u, [
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agentFile(u.dir, 'continue', CONTINUE),
    '--root',
    destination,
  ]);
  const end = sink.attempts(lineage).attempts;
  const stored = sink
    .deliveries()
    .filter((d) => d.goal_lineage === lineage)
    .map((d) => (d.body as { message: string }).message);
  if (c.sinkDown) await sink.close();
  return {
    c,
    u,
    lineage,
    killed,
    destination,
    source: crashed,
    applied,
    resolved,
    attempts: { beforeApply, afterApply, end },
    stored,
    continued,
    effects: await effectsOf(destination),
  };
}

const byCase = (pick: (r: Observed) => unknown) => Object.fromEntries(results.map((r) => [r.c.name, pick(r)]));
const expected = (pick: (c: Case) => unknown) => Object.fromEntries(CASES.map((c) => [c.name, pick(c)]));
const adopted = (r: Observed) => r.effects.find((e) => e.operation_id === r.source.operation_id);

describe('a delivery crashed at each point, then recovered into a new root', () => {
  it('every crash point was reached: the source run was killed there, its delivery journalled', () => {
    expect(byCase((r) => r.killed)).toEqual(expected(() => 'SIGKILL'));
    // Killed before its local settlement, the delivery is dispatched without an outcome; after it, committed.
    expect(byCase((r) => [r.source.outcome, r.source.attempt])).toEqual(
      expected((c) => [c.point === 'engine.mutation.after-effect-settled' ? 'committed' : 'pending', 1]),
    );
  });

  it('the same operation id reconciles to what the receiver says, under its original identity', () => {
    expect(byCase((r) => adopted(r) && [adopted(r)!.idempotency_key, adopted(r)!.outcome])).toEqual(
      Object.fromEntries(results.map((r) => [r.c.name, [r.source.idempotency_key, r.c.outcome]])),
    );
    for (const r of results) {
      const receipt = adopted(r)!.receipt as Doc;
      if (r.c.afterCapture) {
        // Lost locally with the capture, found at the receiver: committed after the capture.
        expect(receipt.source, r.c.name).toBe('receiver_after_capture');
        const reconcile = r.applied.receipts.find((x: { action: string }) => x.action === 'effect:reconcile').readback;
        expect(reconcile.committed_after_capture, r.c.name).toEqual([r.source.operation_id]);
      } else if (r.c.point === 'engine.mutation.after-effect-settled')
        expect(receipt, r.c.name).toMatchObject({ recovered: true, source_outcome: 'committed' });
      else
        expect(receipt.observation, r.c.name).toMatchObject({
          source: 'operation_query',
          found: r.c.outcome === 'committed',
        });
    }
  });

  it('the apply dispatches nothing: the receiver saw the same attempts before and after it', () => {
    expect(byCase((r) => r.attempts.afterApply)).toEqual(byCase((r) => r.attempts.beforeApply));
    expect(
      byCase((r) => r.attempts.beforeApply.filter((a) => a.operation_id === r.source.operation_id).length),
    ).toEqual(expected((c) => (c.outcome === 'committed' ? 1 : 0)));
  });

  it('an outcome the receiver cannot give is held, with its owner and one next action, until resolved through the effect owner', () => {
    for (const r of results.filter((x) => !x.c.sinkDown))
      expect([r.c.name, r.applied.state, r.applied.holds]).toEqual([r.c.name, 'complete', []]);
    const r = results.find((x) => x.c.sinkDown)!;
    expect(r.applied.state).toBe('reconciliation_held');
    expect(r.applied.fences.destination_established).toBe(false);
    const holds = r.applied.holds as { hold_id: string; owner: string; code: string; next_action: string }[];
    expect(holds.map((h) => [h.code, h.owner]).sort()).toEqual([
      ['effect_outcome_unknown', 'effect'],
      ['receiver_unreachable', 'effect'],
    ]);
    expect(holds.find((h) => h.code === 'effect_outcome_unknown')!.hold_id).toBe(`effect:${r.source.operation_id}`);
    // One next action each: one command, naming the hold.
    for (const h of holds) {
      expect(h.next_action).toMatch(
        /^[^:]+: loopx recover resolve --destination \S+ --hold \S+( --authority-dir \S+)?$/,
      );
      expect(h.next_action).toContain(` --hold ${h.hold_id}`);
    }
    expect(holds.map((h) => h.next_action)).toContain(r.applied.next_action);
    expect(r.resolved).toMatchObject({
      state: 'complete',
      holds: [],
      fences: { source_established: true, destination_established: true },
    });
  });

  it('continuing the Todo in the new root delivers the message once: at most one attempt per operation and key, no duplicate', () => {
    for (const r of results) {
      expect(r.continued.status, r.c.name).toBe('completed');
      const ops = r.attempts.end.map((a) => a.operation_id);
      const keys = r.attempts.end.map((a) => a.idempotency_key);
      expect(new Set(ops).size, r.c.name).toBe(ops.length);
      expect(new Set(keys).size, r.c.name).toBe(keys.length);
      expect(
        r.attempts.end.filter((a) => a.result !== 'stored'),
        r.c.name,
      ).toEqual([]);
      expect(
        r.stored.filter((m) => m === MESSAGE),
        r.c.name,
      ).toHaveLength(1);
      // The continuation's own call: sent (once, under the new fence) only where the receiver never had it.
      const call = r.effects.find(
        (e) => e.kind === 'webhook.deliver' && e.operation_id.startsWith(`${r.continued.run_id}:`),
      )!;
      const intent = JSON.parse(call.intent);
      if (r.c.outcome === 'committed')
        expect([r.c.name, intent.duplicate_of]).toEqual([r.c.name, r.source.operation_id]);
      else
        expect([r.c.name, intent.delivery_fence?.fence, call.outcome]).toEqual([
          r.c.name,
          lifetimeFence({ generation: 2 }),
          'committed',
        ]);
    }
  });
});
