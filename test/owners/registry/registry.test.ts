/**
 * The registry contract, run against the file and the in-memory implementation: absence,
 * exact reads (bytes ↔ value ↔ revision), compare-and-swap, frozen routes, lifetimes, and the
 * fail-closed refusal of unknown schemas.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeRegistry, memoryRegistry, openFileRegistry, type Registry } from '../../../src/owners/registry/index.js';
import { cleanup, codeOf, inst, tempRoot, utf8 } from './support.js';

afterAll(cleanup);

const sha = (b: Uint8Array): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

interface Harness {
  readonly registry: Registry;
  /** A registry over exactly these stored bytes (null = absent). */
  seed(bytes: Uint8Array | null): Registry;
  /** The same store opened again (a restart). */
  reopen(): Registry;
}

const impls: Array<[string, () => Harness]> = [
  [
    'file',
    () => {
      const root = tempRoot();
      const path = join(root, 'registry.json');
      return {
        registry: openFileRegistry(root),
        seed(bytes) {
          if (bytes === null) rmSync(path, { force: true });
          else writeFileSync(path, bytes);
          return openFileRegistry(root);
        },
        reopen: () => openFileRegistry(root),
      };
    },
  ],
  [
    'memory',
    () => {
      const registry = memoryRegistry();
      return { registry, seed: (bytes) => memoryRegistry(bytes), reopen: () => registry };
    },
  ],
];

const withProjectAndGoal = (r: Registry) => {
  const p = r.addProject({ project_id: 'proj', name: 'Project' }, r.read().revision);
  return r.registerGoal({ goal_id: 'g1', goal_instance_id: inst(1), project_id: 'proj', status: 'active' }, p.revision);
};

const valid = (
  extra: Record<string, unknown> = {},
  goalExtra: Record<string, unknown> = {},
  projectExtra: Record<string, unknown> = {},
) =>
  utf8(
    JSON.stringify({
      schema_version: 'loopx_registry_v0',
      projects: [{ project_id: 'proj', name: 'P', ...projectExtra }],
      goals: [
        {
          goal_id: 'g1',
          goal_instance_id: inst(1),
          project_id: 'proj',
          status: 'active',
          route: 'goals/g1',
          ...goalExtra,
        },
      ],
      ...extra,
    }),
  );

describe.each(impls)('registry contract (%s)', (_name, make) => {
  it('an absent registry is the empty registry with revision "absent" and no bytes', () => {
    const { registry } = make();
    expect(registry.read()).toEqual({
      value: { schema_version: 'loopx_registry_v0', projects: [], goals: [] },
      revision: 'absent',
      bytes: null,
    });
    const exact = registry.readExact();
    expect(exact.absent).toBe(true);
    expect(exact.bytes).toBeNull();
  });

  it("a write's revision is sha256 of the exact stored bytes, and those bytes decode to the value", () => {
    const { registry } = make();
    const after = registry.addProject({ project_id: 'proj', name: 'Project' }, 'absent');
    expect(after.bytes).not.toBeNull();
    expect(after.revision).toBe(sha(after.bytes!));
    expect(decodeRegistry(after.bytes!)).toEqual(after.value);
    const exact = registry.readExact();
    expect(exact.absent).toBe(false);
    expect(Buffer.from(exact.bytes!).equals(Buffer.from(after.bytes!))).toBe(true);
    expect(exact.revision).toBe(after.revision);
  });

  it('a stale expected revision is refused with registry_revision_conflict and nothing is written', () => {
    const { registry } = make();
    const first = registry.addProject({ project_id: 'proj', name: 'Project' }, 'absent');
    expect(codeOf(() => registry.addProject({ project_id: 'other', name: 'Other' }, 'absent'))).toBe(
      'registry_revision_conflict',
    );
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: 'g1', goal_instance_id: inst(1), project_id: 'proj', status: 'active' },
          'sha256:' + '0'.repeat(64),
        ),
      ),
    ).toBe('registry_revision_conflict');
    expect(registry.read().revision).toBe(first.revision);
    expect(registry.read().value.projects).toHaveLength(1);
  });

  it('a registered Goal gets the frozen relative route goals/<goal_id>', () => {
    const { registry } = make();
    const r = withProjectAndGoal(registry);
    expect(r.value.goals).toEqual([
      { goal_id: 'g1', goal_instance_id: inst(1), project_id: 'proj', status: 'active', route: 'goals/g1' },
    ]);
  });

  it('a live alias cannot be registered again, not even under a new lifetime', () => {
    const { registry } = make();
    const r = withProjectAndGoal(registry);
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: 'g1', goal_instance_id: inst(2), project_id: 'proj', status: 'active' },
          r.revision,
        ),
      ),
    ).toBe('registry_goal_exists');
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: 'g1', goal_instance_id: inst(1), project_id: 'proj', status: 'active' },
          r.revision,
        ),
      ),
    ).toBe('registry_goal_exists');
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: 'g2', goal_instance_id: inst(1), project_id: 'proj', status: 'active' },
          r.revision,
        ),
      ),
    ).toBe('registry_goal_exists');
  });

  it('a retired row is replaced by a new lifetime; the route stays the same', () => {
    const { registry } = make();
    const r = withProjectAndGoal(registry);
    const retired = registry.updateGoalStatus(
      { goal_id: 'g1', goal_instance_id: inst(1), status: 'retired' },
      r.revision,
    );
    const again = registry.registerGoal(
      { goal_id: 'g1', goal_instance_id: inst(2), project_id: 'proj', status: 'active' },
      retired.revision,
    );
    expect(again.value.goals).toEqual([
      { goal_id: 'g1', goal_instance_id: inst(2), project_id: 'proj', status: 'active', route: 'goals/g1' },
    ]);
  });

  it('projects are unique and goals must name a registered project', () => {
    const { registry } = make();
    const p = registry.addProject({ project_id: 'proj', name: 'Project' }, 'absent');
    expect(codeOf(() => registry.addProject({ project_id: 'proj', name: 'Again' }, p.revision))).toBe(
      'registry_project_exists',
    );
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: 'g1', goal_instance_id: inst(1), project_id: 'nope', status: 'active' },
          p.revision,
        ),
      ),
    ).toBe('registry_project_not_found');
  });

  it('status updates need the current lifetime, a registered Goal and a non-retired row', () => {
    const { registry } = make();
    const r = withProjectAndGoal(registry);
    expect(
      codeOf(() =>
        registry.updateGoalStatus({ goal_id: 'g1', goal_instance_id: inst(9), status: 'paused' }, r.revision),
      ),
    ).toBe('registry_goal_instance_mismatch');
    expect(
      codeOf(() =>
        registry.updateGoalStatus({ goal_id: 'zz', goal_instance_id: inst(1), status: 'paused' }, r.revision),
      ),
    ).toBe('registry_goal_not_found');
    const retired = registry.updateGoalStatus(
      { goal_id: 'g1', goal_instance_id: inst(1), status: 'retired' },
      r.revision,
    );
    expect(
      codeOf(() =>
        registry.updateGoalStatus({ goal_id: 'g1', goal_instance_id: inst(1), status: 'active' }, retired.revision),
      ),
    ).toBe('registry_goal_retired');
  });

  it('an update to the status a row already has writes nothing', () => {
    const { registry } = make();
    const r = withProjectAndGoal(registry);
    const same = registry.updateGoalStatus({ goal_id: 'g1', goal_instance_id: inst(1), status: 'active' }, r.revision);
    expect(same.revision).toBe(r.revision);
  });

  it('invalid input is refused with registry_input_invalid', () => {
    const { registry } = make();
    expect(codeOf(() => registry.addProject({ project_id: 'Bad Id', name: 'x' }, 'absent'))).toBe(
      'registry_input_invalid',
    );
    expect(codeOf(() => registry.addProject({ project_id: 'ok', name: '' }, 'absent'))).toBe('registry_input_invalid');
    const p = registry.addProject({ project_id: 'proj', name: 'P' }, 'absent');
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: '../x', goal_instance_id: inst(1), project_id: 'proj', status: 'active' },
          p.revision,
        ),
      ),
    ).toBe('registry_input_invalid');
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: 'g', goal_instance_id: 'ginst_XYZ', project_id: 'proj', status: 'active' },
          p.revision,
        ),
      ),
    ).toBe('registry_input_invalid');
    expect(
      codeOf(() =>
        registry.registerGoal(
          { goal_id: 'g', goal_instance_id: inst(1), project_id: 'proj', status: 'done' as never },
          p.revision,
        ),
      ),
    ).toBe('registry_input_invalid');
  });

  it('A→B→A: every exact read holds the bytes it decoded, and an earlier witness is a copy the store never changes', () => {
    const { registry } = make();
    withProjectAndGoal(registry);
    const a = registry.readExact();
    const aBytes = Buffer.from(a.bytes!);
    const b = registry.updateGoalStatus({ goal_id: 'g1', goal_instance_id: inst(1), status: 'paused' }, a.revision);
    const bExact = registry.readExact();
    registry.updateGoalStatus({ goal_id: 'g1', goal_instance_id: inst(1), status: 'active' }, b.revision);
    const a2 = registry.readExact();
    for (const r of [a, bExact, a2]) {
      expect(decodeRegistry(r.bytes!)).toEqual(r.value);
      expect(r.revision).toBe(sha(r.bytes!));
    }
    expect(bExact.value.goals[0]!.status).toBe('paused');
    expect(bExact.revision).not.toBe(a.revision);
    // A→B→A is invisible to a later revision or byte comparison: only the retained read proves what was decoded.
    expect(a2.revision).toBe(a.revision);
    expect(Buffer.from(a.bytes!).equals(aBytes)).toBe(true);
    expect(a.value.goals[0]!.status).toBe('active');
    // A witness handed out is not aliased to the store.
    a.bytes![0] = 0x20;
    expect(registry.readExact().revision).toBe(a.revision);
  });

  it('a restart (reopen) reads the same bytes and revision', () => {
    const h = make();
    const r = withProjectAndGoal(h.registry);
    const again = h.reopen().readExact();
    expect(again.revision).toBe(r.revision);
    expect(Buffer.from(again.bytes!).equals(Buffer.from(r.bytes!))).toBe(true);
  });

  it('an unknown schema_version is refused with registry_unknown_schema', () => {
    const h = make();
    const bytes = utf8(JSON.stringify({ schema_version: 'loopx_registry_v1', projects: [], goals: [] }));
    expect(codeOf(() => h.seed(bytes).read())).toBe('registry_unknown_schema');
    expect(codeOf(() => h.seed(bytes).addProject({ project_id: 'p', name: 'P' }, sha(bytes)))).toBe(
      'registry_unknown_schema',
    );
  });

  it('unknown fields anywhere are refused with registry_unknown_schema', () => {
    const h = make();
    expect(codeOf(() => h.seed(valid()).readExact())).toBeUndefined();
    expect(codeOf(() => h.seed(valid({ extra: 1 })).readExact())).toBe('registry_unknown_schema');
    expect(codeOf(() => h.seed(valid({}, { quota: 5 })).readExact())).toBe('registry_unknown_schema');
    expect(codeOf(() => h.seed(valid({}, {}, { owner: 'x' })).readExact())).toBe('registry_unknown_schema');
  });

  it('invalid content is refused with registry_malformed', () => {
    const h = make();
    expect(codeOf(() => h.seed(utf8('{not json')).read())).toBe('registry_malformed');
    expect(codeOf(() => h.seed(new Uint8Array([0xff, 0xfe])).read())).toBe('registry_malformed');
    expect(codeOf(() => h.seed(valid({}, { route: '/abs/goals/g1' })).read())).toBe('registry_malformed');
    expect(codeOf(() => h.seed(valid({}, { project_id: 'ghost' })).read())).toBe('registry_malformed');
    expect(codeOf(() => h.seed(valid({}, { status: 'done' })).read())).toBe('registry_malformed');
  });
});

describe('file registry', () => {
  it('writes registry.json owner-only, canonically, and leaves no temp files', () => {
    const root = tempRoot();
    const r = withProjectAndGoal(openFileRegistry(root));
    const path = join(root, 'registry.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path).equals(Buffer.from(r.bytes!))).toBe(true);
    expect(readdirSync(root).sort()).toEqual(['locks', 'registry.json']);
  });

  it('a symlink at registry.json is unreadable, never an absence', () => {
    const root = tempRoot();
    const elsewhere = join(tempRoot(), 'x.json');
    writeFileSync(elsewhere, valid());
    symlinkSync(elsewhere, join(root, 'registry.json'));
    const registry = openFileRegistry(root);
    expect(codeOf(() => registry.readExact())).toBe('registry_unreadable');
    expect(codeOf(() => registry.addProject({ project_id: 'p', name: 'P' }, 'absent'))).toBe('registry_unreadable');
  });

  it('a missing root is refused with root_not_found', () => {
    expect(codeOf(() => openFileRegistry(join(tempRoot(), 'nope')))).toBe('root_not_found');
    expect(existsSync(join(tempRoot(), 'nope'))).toBe(false);
  });
});
