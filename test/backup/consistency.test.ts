/**
 * The ordering counterexample (RFC §5): the plan keeps the exact registry and machine-configuration
 * reads it decoded and freezes the archive routes; a copied owner source that differs from its
 * read (A→B, A→B→A), appears or vanishes during capture, and a registry change after planning
 * (route drift or any other byte change) each refuse publication. Hooks mutate the sources at the
 * exact moment (latches, not sleeps): through the registry, goal and config owners wherever an
 * owner can make the change, otherwise by writing valid `loopx_registry_v0` bytes (a revert, a
 * re-encoding) or deleting the file (no owner deletes its source). One test writes a moved route
 * on purpose: the registry owner freezes routes, so that is an unusable source, not drift.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { create, plan, type CreateHooks } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import { goalRef } from '../../src/owners/goal/index.js';
import {
  addProject,
  applyMachineConfiguration,
  goalsOf,
  machineDoc,
  makeRoot,
  ORPHAN_TITLE,
  PROJECT,
  registryOf,
  tempBase,
} from './support/fixtures.js';

async function setup(options: { machine?: boolean } = {}) {
  const base = tempBase();
  const root = join(base, 'root');
  const fixture = await makeRoot(root, { specials: false, ...options });
  const out = join(base, 'out');
  return {
    base,
    root,
    out,
    fixture,
    registry: join(root, 'registry.json'),
    machine: join(root, 'machine/configuration.json'),
  };
}

async function refusal(root: string, out: string, hooks: CreateHooks): Promise<{ code: string; kind: string }> {
  try {
    await create(plan(root, { outputDir: out, backupId: 'b' }), { hooks, format: 'v0' });
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    // Nothing was published and this attempt left no staging directory behind.
    expect(readdirSync(out)).toEqual([]);
    return { code: e.code, kind: e.kind };
  }
  throw new Error('create was expected to refuse');
}

describe('backup-state create refuses publication when an owner source moves', () => {
  it('A→B: the registry changes during capture', async () => {
    const { root, out, registry } = await setup();
    const a = readFileSync(registry);
    const value = registryOf(root).read().value;
    const r = await refusal(root, out, {
      beforeCopy: (step) => {
        // Same Goals and routes, different bytes: the byte-level check is conservative.
        if (step.path === 'registry.json') writeFileSync(registry, `${a.toString().trimEnd()} \n`);
      },
    });
    expect(r).toEqual({ code: 'backup_source_changed', kind: 'rejected' });
    // B is a registry the owner reads, and it says exactly what A says.
    expect(registryOf(root).read().value).toEqual(value);
  });

  it('A→B→A: a change that is reverted before the end is still refused (copied bytes, not a re-read)', async () => {
    const { root, out, registry } = await setup();
    const a = readFileSync(registry);
    const r = await refusal(root, out, {
      beforeCopy: (step) => {
        if (step.path === 'registry.json') addProject(root, { project_id: 'other', name: 'Other' });
      },
      afterCopy: (step) => {
        // No owner mutation removes a project: A's exact bytes are written back.
        if (step.path === 'registry.json') writeFileSync(registry, a);
      },
    });
    expect(r.code).toBe('backup_source_changed');
    expect(readFileSync(registry).equals(a)).toBe(true); // a final re-read would have seen A
  });

  it('A→B on the machine configuration during capture', async () => {
    const { root, out, machine } = await setup();
    const r = await refusal(root, out, {
      beforeCopy: (step) => {
        if (step.path === 'machine/configuration.json') applyMachineConfiguration(root, { goal_storage: null });
      },
    });
    expect(r.code).toBe('backup_source_changed');
    expect(JSON.parse(readFileSync(machine, 'utf8'))).toEqual({ ...machineDoc, namespaces: {} });
  });

  it('appearance: a machine configuration read as absent appears during capture', async () => {
    const { root, out } = await setup({ machine: false });
    const r = await refusal(root, out, {
      beforeCopy: (step) => {
        if (step.kind === 'absence_witness' && step.path === 'machine/configuration.json')
          applyMachineConfiguration(root, machineDoc.namespaces);
      },
    });
    expect(r.code).toBe('backup_source_appeared');
  });

  it('appearance after planning: a machine configuration created between plan and create', async () => {
    const { root, out } = await setup({ machine: false });
    const r = await refusal(root, out, { afterPlan: () => applyMachineConfiguration(root, machineDoc.namespaces) });
    expect(r.code).toBe('backup_source_appeared');
  });

  it('removal: the registry disappears during capture', async () => {
    const { root, out, registry } = await setup();
    const r = await refusal(root, out, {
      beforeCopy: (step) => {
        if (step.path === 'registry.json') rmSync(registry);
      },
    });
    expect(r.code).toBe('backup_source_removed');
  });

  it('removal after planning: the machine configuration is deleted between plan and create', async () => {
    const { root, out, machine } = await setup();
    const r = await refusal(root, out, { afterPlan: () => rmSync(machine) });
    expect(r.code).toBe('backup_source_removed');
  });

  it('discovery drift: a Goal route that changes hands after planning (a new lifetime of beta) refuses; a fresh plan succeeds', async () => {
    const { root, out, fixture } = await setup();
    // The registry freezes a route to goals/<goal_id>; what can change is the lifetime it routes to.
    let reborn = fixture.beta;
    const r = await refusal(root, out, {
      afterPlan: () => {
        const goals = goalsOf(root);
        goals.retire(goalRef(fixture.beta), 'paused');
        reborn = goals.create('beta', 'Beta again', { projectId: PROJECT.project_id });
      },
    });
    expect(r.code).toBe('backup_routes_changed');
    expect(reborn.goal_instance_id).not.toBe(fixture.beta.goal_instance_id);
    // The refusal is about the frozen plan, not the state: a new plan captures the new routes.
    const ok = await create(plan(root, { outputDir: out, backupId: 'fresh' }));
    expect(ok.manifest_doc.goals.map((g) => [g.goal_id, g.goal_instance_id, g.route])).toEqual([
      ['alpha', fixture.alpha.goal_instance_id, 'goals/alpha'],
      ['beta', reborn.goal_instance_id, 'goals/beta'],
    ]);
  });

  it('discovery drift: a registry that moves a route after planning is not one the registry owner reads, and refuses', async () => {
    const { root, out, registry } = await setup();
    const doc = JSON.parse(readFileSync(registry, 'utf8'));
    const moved = {
      ...doc,
      goals: doc.goals.map((g: { route: string }) => ({
        ...g,
        route: g.route === 'goals/alpha' ? 'goals/beta' : 'goals/alpha',
      })),
    };
    const r = await refusal(root, out, { afterPlan: () => writeFileSync(registry, JSON.stringify(moved)) });
    expect(r).toEqual({ code: 'backup_source_unusable', kind: 'rejected' });
  });

  it('discovery drift: a Goal registered after planning refuses', async () => {
    const { root, out, fixture } = await setup();
    // The goal owner completes orphan's interrupted registration: same lifetime, route now registered.
    const r = await refusal(root, out, {
      afterPlan: () =>
        expect(goalsOf(root).create('orphan', ORPHAN_TITLE, { projectId: PROJECT.project_id })).toEqual(fixture.orphan),
    });
    expect(r.code).toBe('backup_routes_changed');
    expect(
      registryOf(root)
        .read()
        .value.goals.map((g) => g.goal_id),
    ).toEqual(['alpha', 'beta', 'orphan']);
  });

  it('any other registry byte change after planning refuses too (no partial agreement)', async () => {
    const { root, out } = await setup();
    const r = await refusal(root, out, { afterPlan: () => addProject(root, { project_id: 'other', name: 'Other' }) });
    expect(r.code).toBe('backup_source_changed');
  });
});

describe('frozen Goal routes must reach the archive', () => {
  it('a Goal route directory removed during capture refuses publication', async () => {
    const { root, out } = await setup();
    const r = await refusal(root, out, {
      beforeCopy: (step) => {
        if (step.path === 'goals/beta') rmSync(join(root, 'goals/beta'), { recursive: true });
      },
    });
    expect(r.code).toBe('backup_source_removed');
  });

  it('an ordinary file removed during capture is recorded as missing (best-effort traversal), not refused', async () => {
    const { root, out } = await setup();
    const r = await create(plan(root, { outputDir: out, backupId: 'b' }), {
      format: 'v0',
      hooks: {
        beforeCopy: (step) => {
          if (step.path === 'goals/alpha/docs/plan.md') rmSync(join(root, step.path));
        },
      },
    });
    expect(r.manifest_doc.missing).toContainEqual({
      key: 'member:goals/alpha/docs/plan.md',
      source_path: 'goals/alpha/docs/plan.md',
      reason: 'removed_during_capture',
    });
    expect(r.manifest_doc.members.some((m) => m.path === 'runtime-root/goals/alpha/docs/plan.md')).toBe(false);
  });
});
