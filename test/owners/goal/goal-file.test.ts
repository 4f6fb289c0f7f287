/**
 * The file-backed goal owner: where its bytes live, fail-closed reads, and how an interrupted
 * create or retirement is settled. The route is written only through the registry's API — with
 * an in-memory registry no registry.json ever appears in the root.
 */
import { existsSync, readFileSync, statSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/canonical-json.js';
import { decodeGoal, openFileGoalStore } from '../../../src/owners/goal/index.js';
import { memoryRegistry, openFileRegistry } from '../../../src/owners/registry/index.js';
import { cleanup, codeOf, tempRoot } from '../registry/support.js';

afterAll(cleanup);

describe('file goal owner', () => {
  it('goal.json and documents live at goals/<goal_id>/ owner-only, as canonical JSON and exact bytes', () => {
    const root = tempRoot();
    const goals = openFileGoalStore(root, { registry: openFileRegistry(root) });
    goals.create('g1', 'T');
    goals.addDoc('g1', 'notes.md', 'hello');
    const path = join(root, 'goals/g1/goal.json');
    const bytes = readFileSync(path);
    expect(bytes.toString()).toBe(`${canonicalJson(goals.get('g1'))}\n`);
    expect(decodeGoal(bytes, 'g1')).toEqual(goals.get('g1'));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'goals/g1')).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(root, 'goals/g1/docs/notes.md'), 'utf8')).toBe('hello');
    expect(statSync(join(root, 'goals/g1/docs/notes.md')).mode & 0o777).toBe(0o600);
  });

  it('the goal owner never writes registry.json itself: with an in-memory registry none appears', () => {
    const root = tempRoot();
    const registry = memoryRegistry();
    const goals = openFileGoalStore(root, { registry });
    const g = goals.create('g1', 'T');
    goals.retire({ goal_id: 'g1', goal_instance_id: g.goal_instance_id }, 'active');
    goals.create('g1', 'T2');
    expect(existsSync(join(root, 'registry.json'))).toBe(false);
    expect(registry.read().value.goals).toHaveLength(1);
  });

  it('a create whose route registration was lost is completed by the same create, with the same lifetime', () => {
    const root = tempRoot();
    const g = openFileGoalStore(root, { registry: memoryRegistry() }).create('g1', 'T');
    const registry = openFileRegistry(root); // the real registry never got the route
    const goals = openFileGoalStore(root, { registry });
    expect(goals.checkBinding(g)).toBe('goal_not_registered');
    expect(codeOf(() => goals.create('g1', 'A different title'))).toBe('goal_exists');
    expect(goals.create('g1', 'T')).toEqual(g);
    expect(goals.checkBinding(g)).toBe('current');
    expect(registry.read().value.goals[0]!.goal_instance_id).toBe(g.goal_instance_id);
  });

  it('a retirement whose route update was lost is settled before the next lifetime is registered', () => {
    const root = tempRoot();
    const registry = openFileRegistry(root);
    const g = openFileGoalStore(root, { registry }).create('g1', 'T');
    // goal.json becomes retired while the registry row stays active (as if the process died in between).
    openFileGoalStore(root, { registry: memoryRegistry() }).retire(g, 'active');
    expect(registry.read().value.goals[0]!.status).toBe('active');
    const goals = openFileGoalStore(root, { registry });
    expect(goals.checkBinding(g)).toBe('retired');
    const next = goals.create('g1', 'T');
    expect(registry.read().value.goals).toEqual([
      {
        goal_id: 'g1',
        goal_instance_id: next.goal_instance_id,
        project_id: 'default',
        status: 'active',
        route: 'goals/g1',
      },
    ]);
  });

  it('a registry row of another live lifetime is goal_route_conflict and nothing is written', () => {
    const root = tempRoot();
    const registry = openFileRegistry(root);
    openFileGoalStore(root, { registry }).create('g1', 'T');
    const otherRoot = tempRoot();
    const other = openFileGoalStore(otherRoot, { registry }); // same registry, different goal files
    expect(codeOf(() => other.create('g1', 'T'))).toBe('goal_route_conflict');
    expect(other.get('g1')).toBeUndefined();
  });

  it('unknown schema, unknown fields and a foreign goal_id in goal.json are refused', () => {
    const root = tempRoot();
    const registry = openFileRegistry(root);
    const goals = openFileGoalStore(root, { registry });
    const g = goals.create('g1', 'T');
    const path = join(root, 'goals/g1/goal.json');
    const write = (o: unknown) => writeFileSync(path, JSON.stringify(o));
    write({ ...g, schema_version: 'loopx_goal_v2' });
    expect(codeOf(() => goals.get('g1'))).toBe('goal_unknown_schema');
    write({ ...g, owner: 'x' });
    expect(codeOf(() => goals.get('g1'))).toBe('goal_unknown_schema');
    write({
      ...g,
      docs: [{ doc_id: `doc_${'0'.repeat(32)}`, kind: 'vision', name: 'a', sha256: '0'.repeat(64), bytes: 0 }],
    });
    expect(codeOf(() => goals.get('g1'))).toBe('goal_unknown_schema');
    write({ ...g, lifecycle: 'deleted' });
    expect(codeOf(() => goals.get('g1'))).toBe('goal_malformed');
    expect(codeOf(() => goals.pause(g, 'active'))).toBe('goal_malformed');
    write({ ...g, goal_id: 'g2' });
    expect(codeOf(() => goals.get('g1'))).toBe('goal_id_mismatch');
    expect(codeOf(() => goals.list())).toBe('goal_id_mismatch');
  });

  it('a linked goal.json is goal_unreadable, never an absence; a changed document is refused on read', () => {
    const root = tempRoot();
    const goals = openFileGoalStore(root, { registry: openFileRegistry(root) });
    const g = goals.create('g1', 'T');
    goals.addDoc('g1', 'notes.md', 'hello');
    writeFileSync(join(root, 'goals/g1/docs/notes.md'), 'HELLO');
    expect(codeOf(() => goals.readDoc('g1', 'notes.md'))).toBe('goal_doc_digest_mismatch');
    const outside = join(tempRoot(), 'goal.json');
    writeFileSync(outside, readFileSync(join(root, 'goals/g1/goal.json')));
    mkdirSync(join(root, 'goals/g2'));
    symlinkSync(outside, join(root, 'goals/g2/goal.json'));
    expect(codeOf(() => goals.get('g2'))).toBe('goal_unreadable');
    expect(codeOf(() => goals.create('g2', 'T'))).toBe('goal_unreadable');
    expect(goals.checkBinding(g)).toBe('current');
  });
});
