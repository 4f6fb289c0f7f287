/**
 * The goal owner's new lifetime for a recovery (`adoptLifetime`): a new instance id under the same
 * alias, the documents and title carried over, the lineage one generation on naming the superseded
 * lifetime, the route written; the same recovery again reads it back; anything else there is
 * `goal_adoption_conflict`. A lineage in goal.json is decoded strictly.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeGoal, lineageOf, openFileGoalStore } from '../../../src/owners/goal/index.js';
import { openFileRegistry } from '../../../src/owners/registry/index.js';
import { cleanup, codeOf, tempRoot } from '../registry/support.js';

afterAll(cleanup);

const RECOVERY = 'a'.repeat(64);

function source() {
  const root = tempRoot();
  const goals = openFileGoalStore(root, { registry: openFileRegistry(root) });
  const g = goals.create('launch', 'Ship it');
  goals.addDoc('launch', 'brief.md', 'Launch on Monday');
  return goals.get('launch') ?? g;
}

describe('goal owner: a recovered lifetime', () => {
  it('mints a new lifetime one generation on, with the documents, and reads it back on a repeat', () => {
    const old = source();
    const root = tempRoot();
    const registry = openFileRegistry(root);
    const goals = openFileGoalStore(root, { registry });
    const req = {
      goal_id: 'launch',
      title: old.title,
      lifecycle: old.lifecycle,
      docs: [{ name: 'brief.md', bytes: new TextEncoder().encode('Launch on Monday') }],
      recovery_id: RECOVERY,
      supersedes: old,
    };
    const { goal, replayed } = goals.adoptLifetime(req);
    expect(replayed).toBe(false);
    expect(goal.goal_instance_id).not.toBe(old.goal_instance_id);
    expect(goal.lineage).toEqual({
      lineage_id: old.goal_instance_id,
      generation: 2,
      supersedes: { goal_instance_id: old.goal_instance_id, recovery_id: RECOVERY },
    });
    expect(goal.docs.map((d) => [d.name, d.sha256])).toEqual(old.docs.map((d) => [d.name, d.sha256]));
    expect(goals.readDoc('launch', 'brief.md')).toEqual(new TextEncoder().encode('Launch on Monday'));
    expect(registry.read().value.goals.find((r) => r.goal_id === 'launch')?.goal_instance_id).toBe(
      goal.goal_instance_id,
    );
    expect(goals.adoptLifetime(req)).toEqual({ goal, replayed: true });
    expect(codeOf(() => goals.adoptLifetime({ ...req, recovery_id: 'b'.repeat(64) }))).toBe('goal_adoption_conflict');
    // A second recovery of the recovered lifetime continues the same lineage.
    const third = openFileGoalStore(tempRoot(), { registry: openFileRegistry(tempRoot()) });
    expect(
      lineageOf(third.adoptLifetime({ ...req, recovery_id: 'c'.repeat(64), supersedes: goal }).goal),
    ).toMatchObject({ lineage_id: old.goal_instance_id, generation: 3 });
    expect(lineageOf(old)).toEqual({ lineage_id: old.goal_instance_id, generation: 1, supersedes: null });
  });

  it('decodes a lineage strictly', () => {
    const old = source();
    const root = tempRoot();
    const goals = openFileGoalStore(root, { registry: openFileRegistry(root) });
    goals.adoptLifetime({
      goal_id: 'launch',
      title: 'T',
      lifecycle: 'active',
      docs: [],
      recovery_id: RECOVERY,
      supersedes: old,
    });
    const path = join(root, 'goals/launch/goal.json');
    const doc = JSON.parse(readFileSync(path, 'utf8'));
    for (const lineage of [
      { ...doc.lineage, extra: 1 },
      { ...doc.lineage, generation: 1 },
      { ...doc.lineage, supersedes: null },
      { ...doc.lineage, lineage_id: 'x' },
    ]) {
      writeFileSync(path, JSON.stringify({ ...doc, lineage }));
      expect(codeOf(() => decodeGoal(readFileSync(path), 'launch'))).toMatch(/^goal_(malformed|unknown_schema)$/);
    }
  });
});
