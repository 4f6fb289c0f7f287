/**
 * One backup recovered under two run authorities (two users, or one user on two machines with two
 * authority directories). Neither run authority sees the other's supersession record, so both
 * recoveries mint a lifetime of the same lineage at the same generation; the receiver is where they
 * meet. Its fence is (lineage, generation, lifetime), never a bare counter: the first recovery raises
 * it for its lifetime and completes; the second is refused there (`fence_conflict`) and ends
 * `reconciliation_held` with one hold no retry clears and one next action; the first continues its
 * work, the second — held — admits none, and the receiver stores the continuation of the first
 * only — nothing of the second. Real CLI
 * children, real SQLite, a real loopback receiver.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { lifetimeFence } from '../../src/owners/goal/index.js';
import { AFTER_CAPTURE, BEFORE, CONTINUE, agentFile, type Doc, type Step } from './support/adopt.js';
import { as, effectsOf, newUser, refusedAs, type User } from './support/adopt-users.js';

let sink: WebhookSink;
/** The source's user, and the two users who each recover its backup into a root of their own. */
let source: User;
let first: User & { destination: string };
let second: User & { destination: string };
let lineage: string;
let archive: { archive: string; manifest: string };
const applied: { first?: Doc; second?: Doc } = {};

/** The second recovery's continuation: the first's, and a delivery of its own the first never makes. */
const SECOND_CONTINUE: readonly Step[] = [
  ...CONTINUE.slice(0, -1),
  { text: 'Telling them.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'recovered twice' } }] },
  CONTINUE[CONTINUE.length - 1]!,
];

/** `u` verifies the source's backup into its own workspace and recovers the Goal into its own new root. */
async function recoverAs(u: User & { destination: string }): Promise<Doc> {
  await as(u, [
    'backup-state',
    'verify',
    '--archive',
    archive.archive,
    '--manifest',
    archive.manifest,
    '--destination',
    u.workspace,
    '--execute',
    '--root',
    u.root,
  ]);
  const plan = await as(u, [
    'recover',
    'plan',
    '--from',
    u.workspace,
    '--goal',
    'launch',
    '--destination',
    u.destination,
    '--root',
    u.root,
  ]);
  return as(u, ['recover', 'apply', '--destination', u.destination, '--confirm', plan.plan_digest]);
}

const fenceAtReceiver = async () => (await fetch(`${sink.url}/fences?goal_lineage=${lineage}`)).json();
const message = (body: unknown) => (body as { message?: string }).message;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  source = newUser('loopx-adopt-two-src-');
  const at = ['--root', source.root];
  await as(source, ['init', ...at]);
  lineage = (await as(source, ['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at])).goal_instance_id;
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    await as(source, ['todo', 'add', '--goal', 'launch', '--title', title, ...at]);
  await as(source, [
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agentFile(source.dir, 'before', BEFORE),
    '--sink',
    sink.deliveriesUrl,
    ...at,
  ]);
  const out = join(source.dir, 'backups');
  const b = await as(source, [
    'backup-state',
    '--execute',
    '--profile',
    'quiescent',
    '--output-dir',
    out,
    '--backup-id',
    'b1',
    ...at,
  ]);
  archive = { archive: join(out, b.archive.name), manifest: join(out, b.manifest.name) };
  // After the capture the source delivers once more (lost locally): both recoveries learn it from the receiver.
  await as(source, [
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agentFile(source.dir, 'after', AFTER_CAPTURE),
    ...at,
  ]);
  first = { ...newUser('loopx-adopt-two-a-'), destination: '' };
  first.destination = join(first.dir, 'recovered');
  second = { ...newUser('loopx-adopt-two-b-'), destination: '' };
  second.destination = join(second.dir, 'recovered');
  applied.first = await recoverAs(first);
  applied.second = await recoverAs(second);
}, 300_000);
afterAll(async () => {
  await sink.close();
});

/** The fence of the recovered lifetime's deliveries (generation 2, a store never rotated). */
const GENERATION_2 = lifetimeFence({ generation: 2 });

describe('one backup recovered under two run authorities', () => {
  it('the first recovery raises the receiver’s fence for its own lifetime and completes', () => {
    const st = applied.first!;
    expect(st.state, JSON.stringify(st.holds)).toBe('complete');
    expect(st.goal.recovered_instance_id).toBe(lineage);
    expect(st.receipts.find((r: { action: string }) => r.action === 'goal:rebind').readback).toMatchObject({
      lineage_id: lineage,
      generation: 2,
    });
    return expect(fenceAtReceiver()).resolves.toEqual({
      goal_lineage: lineage,
      newest_fence: GENERATION_2,
      lifetime: st.goal.new_instance_id,
    });
  });

  it('a second recovery of the same lineage at the same generation ends reconciliation_held with one receiver_fence_conflict hold and one next action', async () => {
    const st = applied.second!;
    // Another lifetime of the same lineage and generation: the run authorities never met.
    expect(st.goal.new_instance_id).not.toBe(applied.first!.goal.new_instance_id);
    expect(st.receipts.find((r: { action: string }) => r.action === 'goal:rebind').readback).toMatchObject({
      lineage_id: lineage,
      generation: 2,
    });
    expect(st.state).toBe('reconciliation_held');
    expect(st.holds).toHaveLength(1);
    const [hold] = st.holds;
    expect(hold).toMatchObject({
      owner: 'effect',
      code: 'receiver_fence_conflict',
      retryable: false,
      subject: `webhook:127.0.0.1:${sink.port}`,
    });
    expect(hold.continuation).toContain(applied.first!.goal.new_instance_id);
    expect(hold.continuation).toContain('continue the Goal in the root that recovery made');
    // One next action, and not a resolve (no answer of the receiver clears it).
    expect(hold.next_action).toMatch(
      /^continue the Goal in the root the receiver follows \(this one stays history\): loopx recover status --destination /,
    );
    expect(st.next_action).toBe(hold.next_action);
    expect(st.retryable).toBe(false);
    expect(st.fences.destination_established).toBe(false);
    // Nothing was raised for it: the receiver still follows the first recovery's lifetime.
    expect(await fenceAtReceiver()).toEqual({
      goal_lineage: lineage,
      newest_fence: GENERATION_2,
      lifetime: applied.first!.goal.new_instance_id,
    });
  }, 60_000);

  it('asking the receiver again does not clear the conflict: the hold stays, nothing changes at the receiver', async () => {
    const again = await as(second, [
      'recover',
      'resolve',
      '--destination',
      second.destination,
      '--hold',
      applied.second!.holds[0].hold_id,
    ]);
    expect(again.state).toBe('reconciliation_held');
    expect(again.holds.map((h: { code: string }) => h.code)).toEqual(['receiver_fence_conflict']);
    expect(await fenceAtReceiver()).toEqual({
      goal_lineage: lineage,
      newest_fence: GENERATION_2,
      lifetime: applied.first!.goal.new_instance_id,
    });
  }, 120_000);

  it('only the lifetime the receiver follows delivers: the first continuation is stored once; the second root, held, admits no work and nothing of it is stored', async () => {
    const a = applied.first!.goal.new_instance_id as string;
    const b = applied.second!.goal.new_instance_id as string;
    const storedBefore = sink.deliveries().length;
    await as(first, [
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      agentFile(first.dir, 'continue', CONTINUE),
      '--root',
      first.destination,
    ]);
    const refused = await refusedAs(second, [
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      agentFile(second.dir, 'continue', SECOND_CONTINUE),
      '--root',
      second.destination,
    ]);
    expect(refused).toEqual({ status: 4, code: 'recover_reconciliation_held' });

    const afterCapture = sink.deliveries().slice(storedBefore);
    // Exactly one delivery of the continuation's message, from the first recovery's lifetime at generation 2.
    expect(afterCapture.map((d) => [message(d.body), d.goal_lineage, d.fence, d.lifetime])).toEqual([
      ['post published', lineage, GENERATION_2, a],
    ]);
    expect(sink.deliveries().filter((d) => message(d.body) === 'post published')).toHaveLength(1);
    expect(sink.deliveries().some((d) => d.lifetime === b || message(d.body) === 'recovered twice')).toBe(false);
    // The second lifetime sent nothing: its root took no work while held.
    expect(sink.attempts(lineage).attempts.filter((x) => x.lifetime === b)).toEqual([]);
    const sent = (await effectsOf(second.destination)).filter(
      (e) => e.kind === 'webhook.deliver' && JSON.parse(e.intent).delivery_fence?.lifetime === b,
    );
    expect(sent).toEqual([]);
    // The second recovery stays held, with its one next action.
    const st = await as(second, ['recover', 'status', '--destination', second.destination]);
    expect(st.state).toBe('reconciliation_held');
    expect(st.holds.map((h: { code: string }) => h.code)).toEqual(['receiver_fence_conflict']);
    expect(st.next_action).toBe(st.holds[0].next_action);
  }, 180_000);
});
