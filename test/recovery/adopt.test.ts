/**
 * One Goal recovered from a verified backup into a new root, through the real CLI: the
 * digest-bound plan and its preview, the confirmed apply through the owners, the new Goal
 * lifetime and work store, effects under their original identity (the delivery committed after
 * the capture found at the receiver), the continuation of the unfinished Todo through ordinary
 * admission with exactly one delivery per logical operation at the receiver, old writers refused
 * by the run authority and by the receiver's fence, and a second apply converging.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import * as effectOwner from '../../src/owners/effect/index.js';
import * as workOwner from '../../src/owners/work/index.js';
import { loopxAsync } from '../support/cli.js';
import { okAsync, planAsync, sourceWithBackup, type Source } from './support/adopt.js';

let sink: WebhookSink;
let s: Source;
let destination: string;
let digest: string;

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink);
}, 240_000);
afterAll(async () => {
  await sink.close();
});

/** The source run's update of a Todo, as the destination's effect journal holds it (adopted under its original id). */
async function originalUpdate(todoId: string): Promise<string> {
  const journal = effectOwner.openSqliteEffectJournal(join(destination, 'effects.db'));
  try {
    const updates = await journal.list({ goal_id: 'launch' });
    return updates.find(
      (e) => e.kind === 'work.todo_update' && (JSON.parse(e.intent) as { todo_id?: string }).todo_id === todoId,
    )!.operation_id;
  } finally {
    journal.close();
  }
}

const attempts = async (lineage?: string) => {
  const url = new URL(sink.url + '/attempts');
  if (lineage) url.searchParams.set('goal_lineage', lineage);
  return (await (await fetch(url)).json()) as {
    attempts: { result: string; operation_id: string; idempotency_key: string }[];
    counts: Record<string, number>;
  };
};

describe('loopx recover: one Goal into a new root', () => {
  it('plans with a preview, touching nothing live', async () => {
    const p = await planAsync(s);
    destination = p.destination;
    digest = p.doc.plan_digest;
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(p.doc.execution_authority_granted).toBe(false);
    expect(p.doc.preview.recovered_readable.join('\n')).toMatch(/Todos: 1 done, 1 blocked, 1 open/);
    expect(p.doc.preview.lost_or_unknown.join('\n')).toMatch(/after the captured checkpoints/);
    expect(p.doc.preview.external_systems).toEqual([`webhook:127.0.0.1:${sink.port}`]);
    expect(p.doc.steps.map((x: { action: string }) => x.action)).toEqual([
      'host:destination',
      'config:rebind',
      'goal:rebind',
      'host:supersede',
      'work:import_inert',
      'work:rebind',
      'session:retain_historical',
      'effect:reconcile',
      'quota:retain_historical',
      'scheduler:retain_historical',
    ]);
    // No absolute path in the public plan.
    expect(JSON.stringify(p.doc)).not.toContain(s.dir);
    const st = await okAsync(s, ['recover', 'status', '--destination', destination]);
    expect(st).toMatchObject({
      state: 'adoption_prepared',
      plan_digest: digest,
      execution_authority_granted: false,
      fences: { source_established: false },
    });
  }, 180_000);

  it('refuses a digest that is not the plan’s', async () => {
    const r = await loopxAsync([
      'recover',
      'apply',
      '--destination',
      destination,
      '--confirm',
      '0'.repeat(64),
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('recover_confirm_mismatch');
  }, 180_000);

  it('applies through the owners: a new lifetime and work store, original receipts kept, the after-capture delivery found', async () => {
    const st = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', digest]);
    expect(st.state, JSON.stringify(st.holds)).toBe('complete');
    expect(st.fences).toEqual({ source_established: true, destination_established: true });
    expect(st.goal.new_instance_id).toMatch(/^ginst_/);
    expect(st.goal.new_instance_id).not.toBe(st.goal.recovered_instance_id);
    const byAction = Object.fromEntries(st.receipts.map((r: { action: string }) => [r.action, r]));
    expect(byAction['work:import_inert'].readback.store_identity).not.toBe(
      byAction['work:import_inert'].readback.source_store_identity,
    );
    expect(byAction['effect:reconcile'].readback.committed_after_capture).toHaveLength(1);
    const goal = await okAsync(s, ['goal', 'show', 'launch', '--root', destination]);
    expect(goal.goal_instance_id ?? goal.goal?.goal_instance_id).toBe(st.goal.new_instance_id);
    const todos = (await okAsync(s, ['todo', 'list', '--goal', 'launch', '--root', destination])).todos;
    expect(todos.map((t: { todo_id: string; status: string }) => [t.todo_id, t.status])).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'open'],
    ]);
  }, 180_000);

  it('keeps the original receipts readable under their original store identity, never relabelled', async () => {
    const st = await okAsync(s, ['recover', 'status', '--destination', destination]);
    const source = st.receipts.find((r: { action: string }) => r.action === 'work:import_inert').readback
      .source_store_identity;
    const work = await workOwner.openGoalWork({ root: destination, goal_id: 'launch' });
    try {
      const first = (await work.lineage())[0]!;
      expect(first.source_store_identity).toBe(source);
      const adopted = (await work.history(0, 1)).transactions[0]!;
      expect(adopted.receipt).toMatchObject({
        operation: 'adopt_recovered_state',
        recovery: { recovery_id: st.recovery_id, source_store_identity: source },
      });
      // The original run's Todo update answers with its original receipt, naming the original store.
      const original = (await work.readReceipt(await originalUpdate('t1')))!;
      expect(original.receipt).toMatchObject({ store_identity: source, operation: 'update_todo', todo_id: 't1' });
      expect(original.provider_revision.split(':')[0]).not.toBe((await work.storeIdentity()).incarnation);
    } finally {
      work.close();
    }
  }, 180_000);

  it('continues the unfinished Todo through ordinary admission; one delivery per logical operation at the receiver', async () => {
    const st = await okAsync(s, ['recover', 'status', '--destination', destination]);
    const lineage = st.receipts.find((r: { action: string }) => r.action === 'goal:rebind').readback.lineage_id;
    const before = await attempts(lineage);
    const r = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      s.agents.cont,
      '--root',
      destination,
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json().status).toBe('completed');
    const todos = (await okAsync(s, ['todo', 'list', '--goal', 'launch', '--root', destination])).todos;
    expect(todos.find((t: { todo_id: string }) => t.todo_id === 't3').status).toBe('done');
    const after = await attempts(lineage);
    // The draft announcement was committed after the capture: it is not sent again. The new one is sent once.
    expect(after.counts.duplicate ?? 0).toBe(before.counts.duplicate ?? 0);
    expect((after.counts.stored ?? 0) - (before.counts.stored ?? 0)).toBe(1);
    const keys = after.attempts.filter((a) => a.result === 'stored').map((a) => a.idempotency_key);
    expect(new Set(keys).size).toBe(keys.length);
  }, 180_000);

  it('refuses the old lifetime’s writers: the run authority in every root, the fence at the receiver', async () => {
    const w = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      s.agents.after,
      ...s.at(s.root),
      '--json',
    ]);
    expect(w.status).toBe(4);
    expect(w.json().error.code).toBe('goal_lifetime_superseded');
    const t = await loopxAsync([
      'todo',
      'update',
      't3',
      '--goal',
      'launch',
      '--status',
      'done',
      ...s.at(s.root),
      '--json',
    ]);
    expect(t.status).toBe(4);
    expect(t.json().error.code).toBe('goal_lifetime_superseded');
    const st = await okAsync(s, ['recover', 'status', '--destination', destination]);
    const lineage = st.receipts.find((r: { action: string }) => r.action === 'goal:rebind').readback.lineage_id;
    const res = await fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': 'old-writer-1',
        'x-operation-id': 'old-writer-1',
        'x-loopx-goal-lineage': lineage,
        'x-loopx-fence': '1',
      },
      body: JSON.stringify({ goal_id: 'launch', message: 'from the old lifetime' }),
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: string }).error).toBe('fence_stale');
  }, 180_000);

  it('converges when applied again, and cannot be aborted any more', async () => {
    const again = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', digest]);
    expect(again.state).toBe('complete');
    const a = await loopxAsync([
      'recover',
      'abort',
      '--destination',
      destination,
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(a.status).toBe(4);
    expect(a.json().error.code).toBe('recover_abort_too_late');
  }, 180_000);
});
