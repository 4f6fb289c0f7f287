/**
 * The goal contract, run against the file and the in-memory implementation: lifetimes (minting,
 * rotation after retirement, never reused), lifecycle transitions with expected lifecycle,
 * documents with safe names and recorded digests, binding checks, and the route the goal owner
 * keeps in the registry through the registry's API.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { memoryGoalStore, openFileGoalStore, type GoalRef, type GoalStore } from '../../../src/owners/goal/index.js';
import { memoryRegistry, openFileRegistry, type Registry } from '../../../src/owners/registry/index.js';
import { cleanup, codeOf, tempRoot } from '../registry/support.js';

afterAll(cleanup);

interface Harness {
  readonly goals: GoalStore;
  readonly registry: Registry;
}

/** A clock that advances one second per call, so updated_at changes are visible. */
function clock(): () => Date {
  let t = Date.parse('2026-01-01T00:00:00.000Z');
  return () => new Date((t += 1000));
}

const impls: Array<[string, () => Harness]> = [
  [
    'file',
    () => {
      const root = tempRoot();
      const registry = openFileRegistry(root);
      return { registry, goals: openFileGoalStore(root, { registry, now: clock() }) };
    },
  ],
  [
    'memory',
    () => {
      const registry = memoryRegistry();
      return { registry, goals: memoryGoalStore({ registry, now: clock() }) };
    },
  ],
];

const ref = (g: GoalRef): GoalRef => ({ goal_id: g.goal_id, goal_instance_id: g.goal_instance_id });
const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

describe.each(impls)('goal contract (%s)', (_name, make) => {
  it('create mints a ginst_ lifetime, starts active with no documents, and registers the route', () => {
    const { goals, registry } = make();
    const g = goals.create('g1', 'First goal');
    expect(g).toEqual({
      schema_version: 'loopx_goal_v0',
      goal_id: 'g1',
      goal_instance_id: expect.stringMatching(/^ginst_[0-9a-f]{32}$/),
      title: 'First goal',
      lifecycle: 'active',
      created_at: g.created_at,
      updated_at: g.created_at,
      docs: [],
    });
    expect(goals.get('g1')).toEqual(g);
    const reg = registry.read().value;
    expect(reg.projects).toEqual([{ project_id: 'default', name: 'Default' }]);
    expect(reg.goals).toEqual([
      {
        goal_id: 'g1',
        goal_instance_id: g.goal_instance_id,
        project_id: 'default',
        status: 'active',
        route: 'goals/g1',
      },
    ]);
  });

  it('creating a live alias again is goal_exists (active or paused)', () => {
    const { goals } = make();
    const g = goals.create('g1', 'First goal');
    expect(codeOf(() => goals.create('g1', 'Other'))).toBe('goal_exists');
    expect(codeOf(() => goals.create('g1', 'First goal'))).toBe('goal_exists');
    goals.pause(ref(g), 'active');
    expect(codeOf(() => goals.create('g1', 'First goal'))).toBe('goal_exists');
  });

  it('a fresh create after retirement mints a new lifetime; old refs no longer bind', () => {
    const { goals, registry } = make();
    const first = goals.create('g1', 'First goal');
    goals.addDoc('g1', 'notes.md', 'old');
    goals.retire(ref(first), 'active');
    const second = goals.create('g1', 'Second life');
    expect(second.goal_instance_id).not.toBe(first.goal_instance_id);
    expect(second).toMatchObject({ lifecycle: 'active', title: 'Second life', docs: [] });
    expect(goals.readDoc('g1', 'notes.md')).toBeUndefined();
    expect(registry.read().value.goals).toEqual([
      {
        goal_id: 'g1',
        goal_instance_id: second.goal_instance_id,
        project_id: 'default',
        status: 'active',
        route: 'goals/g1',
      },
    ]);
    expect(goals.checkBinding(ref(first))).toBe('goal_instance_mismatch');
    expect(goals.checkBinding(ref(second))).toBe('current');
    expect(codeOf(() => goals.pause(ref(first), 'active'))).toBe('goal_instance_mismatch');
  });

  it('goal_instance_id is never reused across many retire/create cycles', () => {
    const { goals } = make();
    const seen = new Set<string>();
    for (let i = 0; i < 25; i++) {
      const g = goals.create('cycle', `life ${i}`);
      expect(seen.has(g.goal_instance_id)).toBe(false);
      seen.add(g.goal_instance_id);
      goals.retire(ref(g), 'active');
    }
    expect(seen.size).toBe(25);
  });

  it('create in an unregistered project is registry_project_not_found and writes nothing', () => {
    const { goals, registry } = make();
    expect(codeOf(() => goals.create('g1', 'T', { projectId: 'ghost' }))).toBe('registry_project_not_found');
    expect(goals.get('g1')).toBeUndefined();
    const p = registry.addProject({ project_id: 'proj', name: 'P' }, registry.read().revision);
    const g = goals.create('g1', 'T', { projectId: 'proj' });
    expect(registry.read().value.goals[0]).toMatchObject({ goal_instance_id: g.goal_instance_id, project_id: 'proj' });
    expect(registry.read().value.projects).toEqual(p.value.projects);
  });

  it('pause, resume and retire follow the expected lifecycle and mirror the status into the registry', () => {
    const { goals, registry } = make();
    const g = goals.create('g1', 'T');
    const status = () => registry.read().value.goals[0]!.status;
    const paused = goals.pause(ref(g), 'active');
    expect(paused.lifecycle).toBe('paused');
    expect(paused.updated_at > g.updated_at).toBe(true);
    expect(status()).toBe('paused');
    expect(goals.resume(ref(g), 'paused').lifecycle).toBe('active');
    expect(status()).toBe('active');
    goals.pause(ref(g), 'active');
    expect(goals.retire(ref(g), 'paused').lifecycle).toBe('retired');
    expect(status()).toBe('retired');
    expect(goals.get('g1')!.goal_instance_id).toBe(g.goal_instance_id);
  });

  it('a stale expected lifecycle is goal_lifecycle_conflict and changes nothing', () => {
    const { goals } = make();
    const g = goals.create('g1', 'T');
    goals.pause(ref(g), 'active');
    const before = goals.get('g1');
    expect(codeOf(() => goals.retire(ref(g), 'active'))).toBe('goal_lifecycle_conflict');
    expect(goals.get('g1')).toEqual(before);
  });

  it('an expected lifecycle a transition cannot start from is goal_transition_invalid', () => {
    const { goals } = make();
    const g = goals.create('g1', 'T');
    expect(codeOf(() => goals.pause(ref(g), 'paused'))).toBe('goal_transition_invalid');
    expect(codeOf(() => goals.resume(ref(g), 'active'))).toBe('goal_transition_invalid');
    expect(codeOf(() => goals.retire(ref(g), 'retired'))).toBe('goal_transition_invalid');
    expect(codeOf(() => goals.pause(ref(g), 'sleeping' as never))).toBe('goal_transition_invalid');
  });

  it('a transition whose target already holds is a replay that writes nothing', () => {
    const { goals } = make();
    const g = goals.create('g1', 'T');
    const paused = goals.pause(ref(g), 'active');
    expect(goals.pause(ref(g), 'active')).toEqual(paused);
    const retired = goals.retire(ref(g), 'paused');
    expect(goals.retire(ref(g), 'paused')).toEqual(retired);
  });

  it('retired is final: no transition and no document', () => {
    const { goals } = make();
    const g = goals.create('g1', 'T');
    goals.retire(ref(g), 'active');
    expect(codeOf(() => goals.resume(ref(g), 'paused'))).toBe('goal_retired');
    expect(codeOf(() => goals.pause(ref(g), 'active'))).toBe('goal_retired');
    expect(codeOf(() => goals.addDoc('g1', 'a.md', 'x'))).toBe('goal_retired');
  });

  it('missing Goals and malformed refs are typed refusals', () => {
    const { goals } = make();
    const g = goals.create('g1', 'T');
    expect(codeOf(() => goals.pause({ goal_id: 'nope', goal_instance_id: g.goal_instance_id }, 'active'))).toBe(
      'goal_not_found',
    );
    expect(codeOf(() => goals.addDoc('nope', 'a.md', 'x'))).toBe('goal_not_found');
    expect(codeOf(() => goals.pause({ goal_id: 'g1', goal_instance_id: 'ginst_1' }, 'active'))).toBe(
      'goal_ref_invalid',
    );
    expect(codeOf(() => goals.pause({ goal_id: '../g1', goal_instance_id: g.goal_instance_id }, 'active'))).toBe(
      'goal_ref_invalid',
    );
    expect(codeOf(() => goals.create('Bad/Id', 'T'))).toBe('goal_id_invalid');
    expect(codeOf(() => goals.create('g2', ''))).toBe('goal_title_invalid');
    expect(codeOf(() => goals.create('g2', 'a\nb'))).toBe('goal_title_invalid');
    expect(goals.get('g2')).toBeUndefined();
  });

  it('addDoc records the exact digest and size; a re-add keeps the doc_id; readDoc returns the bytes', () => {
    const { goals } = make();
    goals.create('g1', 'T');
    const d1 = goals.addDoc('g1', 'vision.md', '# Vision\n');
    expect(d1).toEqual({
      doc_id: expect.stringMatching(/^doc_[0-9a-f]{32}$/),
      kind: 'goal_doc',
      name: 'vision.md',
      sha256: sha('# Vision\n'),
      bytes: 9,
    });
    const binary = new Uint8Array([0, 1, 2, 255]);
    goals.addDoc('g1', 'a.bin', binary);
    const d2 = goals.addDoc('g1', 'vision.md', 'v2');
    expect(d2.doc_id).toBe(d1.doc_id);
    expect(d2.sha256).toBe(sha('v2'));
    expect(goals.get('g1')!.docs.map((d) => d.name)).toEqual(['a.bin', 'vision.md']);
    expect(Buffer.from(goals.readDoc('g1', 'vision.md')!).toString()).toBe('v2');
    expect([...goals.readDoc('g1', 'a.bin')!]).toEqual([0, 1, 2, 255]);
    expect(goals.readDoc('g1', 'other.md')).toBeUndefined();
  });

  it.each(['..', '.', '', '../x', 'a/b', '/etc/passwd', '.hidden', 'a\\b', 'a\u0000b', 'x'.repeat(129)])(
    'document name %j is refused with goal_doc_name_invalid and nothing is written',
    (name) => {
      const { goals } = make();
      const g = goals.create('g1', 'T');
      expect(codeOf(() => goals.addDoc('g1', name, 'x'))).toBe('goal_doc_name_invalid');
      expect(codeOf(() => goals.readDoc('g1', name))).toBe('goal_doc_name_invalid');
      expect(goals.get('g1')).toEqual(g);
    },
  );

  it('a document over 16 MiB is goal_doc_too_large', () => {
    const { goals } = make();
    goals.create('g1', 'T');
    expect(codeOf(() => goals.addDoc('g1', 'big.bin', new Uint8Array(16 * 1024 * 1024 + 1)))).toBe(
      'goal_doc_too_large',
    );
  });

  it('checkBinding names current, goal_instance_mismatch, goal_not_registered, retired and invalid', () => {
    const { goals } = make();
    const g = goals.create('g1', 'T');
    expect(goals.checkBinding(ref(g))).toBe('current');
    goals.pause(ref(g), 'active');
    expect(goals.checkBinding(ref(g))).toBe('current');
    expect(goals.checkBinding({ goal_id: 'g1', goal_instance_id: `ginst_${'f'.repeat(32)}` })).toBe(
      'goal_instance_mismatch',
    );
    expect(goals.checkBinding({ goal_id: 'nope', goal_instance_id: g.goal_instance_id })).toBe('goal_not_registered');
    expect(goals.checkBinding({ goal_id: 'g1' } as never)).toBe('invalid');
    goals.retire(ref(g), 'paused');
    expect(goals.checkBinding(ref(g))).toBe('retired');
  });

  it('list returns every Goal sorted by goal_id', () => {
    const { goals } = make();
    goals.create('zeta', 'Z');
    goals.create('alpha', 'A');
    goals.create('mid', 'M');
    expect(goals.list().map((g) => g.goal_id)).toEqual(['alpha', 'mid', 'zeta']);
  });
});
