/**
 * A receiver retired for one Goal (the effect owner's side of `recover resolve --receiver-gone`):
 * the retirement recorded once in the journal, every uncertain effect of that Goal to that target
 * abandoned — still unknown, held as receiver_gone, never dispatched; one waiting in the outbox
 * superseded — while settled effects, other Goals and other targets are left as they were.
 */
import { describe, expect, it } from 'vitest';
import {
  RECEIVER_GONE,
  TARGET_RETIRED_KIND,
  memoryEffectJournal,
  retireTarget,
  targetRetirement,
  type EffectJournal,
} from '../../../src/owners/effect/index.js';

const GONE = 'webhook:127.0.0.1:9';
const OTHER = 'webhook:127.0.0.1:10';

async function intent(j: EffectJournal, id: string, goal: string, target: string): Promise<void> {
  await j.recordIntent({
    operation_id: id,
    idempotency_key: `k-${id}`,
    goal_id: goal,
    kind: 'webhook.deliver',
    target,
    intent: { id },
  });
}

describe('retireTarget', () => {
  it('abandons the uncertain effects of the Goal to the target and nothing else; again, it is a readback', async () => {
    const j = memoryEffectJournal();
    await intent(j, 'unknown', 'g', GONE);
    await j.beginDispatch('unknown');
    await j.settle('unknown', 'unknown', { lost: true });
    await intent(j, 'in-flight', 'g', GONE);
    await j.beginDispatch('in-flight');
    await intent(j, 'queued', 'g', GONE);
    await intent(j, 'done', 'g', GONE);
    await j.beginDispatch('done');
    await j.settle('done', 'committed', { ok: true });
    await intent(j, 'other-goal', 'h', GONE);
    await j.beginDispatch('other-goal');
    await intent(j, 'other-target', 'g', OTHER);
    await j.beginDispatch('other-target');

    expect(await targetRetirement(j, 'g', GONE)).toBeUndefined();
    const r = await retireTarget(j, {
      goal_id: 'g',
      target: GONE,
      reason: 'decommissioned',
      evidence: { recovery_id: 'r1' },
    });
    expect([...r.abandoned].sort()).toEqual(['in-flight', 'queued', 'unknown']);
    expect(r.retirement).toMatchObject({ kind: TARGET_RETIRED_KIND, goal_id: 'g', target: GONE, outcome: 'rejected' });
    const state = async (id: string) => {
      const e = (await j.get(id))!;
      return [e.outcome, e.hold, e.attempt];
    };
    expect(await state('unknown')).toEqual(['unknown', RECEIVER_GONE, 1]);
    expect(await state('in-flight')).toEqual(['unknown', RECEIVER_GONE, 1]);
    expect(await state('queued')).toEqual(['superseded', null, 0]);
    expect(await state('done')).toEqual(['committed', null, 1]);
    expect(await state('other-goal')).toEqual(['pending', null, 1]);
    expect(await state('other-target')).toEqual(['pending', null, 1]);
    expect((await j.outbox()).map((o) => o.operation_id)).not.toContain('queued');
    expect(await targetRetirement(j, 'g', GONE)).toMatchObject({ operation_id: r.retirement.operation_id });
    expect(await targetRetirement(j, 'h', GONE)).toBeUndefined();
    expect(await targetRetirement(j, 'g', OTHER)).toBeUndefined();

    const again = await retireTarget(j, {
      goal_id: 'g',
      target: GONE,
      reason: 'decommissioned',
      evidence: { recovery_id: 'r1' },
    });
    expect(again.retirement.operation_id).toBe(r.retirement.operation_id);
    expect([...again.abandoned].sort()).toEqual(['in-flight', 'unknown']);
    expect(await state('unknown')).toEqual(['unknown', RECEIVER_GONE, 1]);
  });
});
