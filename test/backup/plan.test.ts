/**
 * backup-state plan: what discovery finds, what it leaves out and why, and that planning writes
 * nothing and prints no absolute path.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  describePlan,
  ownerBackupSources,
  plan,
  planCapacityRefusals,
  type BackupSources,
} from '../../src/backup/index.js';
import { hasCode } from '../../src/core/errors.js';
import { mintGoalInstanceId } from '../../src/owners/goal/index.js';
import { jsonStrings, makeRoot, PROJECT, registryOf, tempBase, treeFingerprint } from './support/fixtures.js';

describe('backup-state plan', () => {
  it('writes nothing: the root and the output directory are untouched', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root);
    const before = treeFingerprint(base);
    const p = plan(root, { outputDir: join(base, 'out') });
    describePlan(p);
    expect(treeFingerprint(base)).toEqual(before);
  });

  it('discovers members, SQLite databases by header, Goals and their frozen routes', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    const { alpha, beta } = await makeRoot(root);
    const p = plan(root, { outputDir: join(base, 'out'), backupId: 'b1' });
    const paths = p.members.map((m) => m.path);
    expect(paths).toContain('registry.json');
    expect(paths).toContain('machine/configuration.json');
    expect(paths).toContain('goals/alpha/docs/plan.md');
    expect(paths).toContain('goals/alpha/docs/notes-é.md');
    expect(paths).toContain('goals/beta/empty');
    expect(
      p.members
        .filter((m) => m.sqlite)
        .map((m) => m.path)
        .sort(),
    ).toEqual([
      'engine.db',
      'goals/alpha/docs/attachment.bin',
      'goals/alpha/work.db',
      'goals/beta/work.db',
      'sessions.db',
    ]);
    expect(p.members.find((m) => m.path === 'fake.db')!.sqlite).toBe(false);
    // Parents precede children; the order is deterministic.
    expect(p.members[0]!.archive_path).toBe('runtime-root');
    expect([...p.members.map((m) => m.archive_path)].sort()).toEqual(p.members.map((m) => m.archive_path));
    expect(p.goals).toEqual([
      {
        goal_id: 'alpha',
        goal_instance_id: alpha.goal_instance_id,
        route: 'goals/alpha',
        archive_route: 'runtime-root/goals/alpha',
        route_status: 'included',
      },
      {
        goal_id: 'beta',
        goal_instance_id: beta.goal_instance_id,
        route: 'goals/beta',
        archive_route: 'runtime-root/goals/beta',
        route_status: 'included',
      },
    ]);
    expect(p.unregisteredGoalDirectories).toEqual(['orphan']);
    expect(p.registryRead.absent).toBeFalsy();
    expect(p.machineRead.absent).toBeFalsy();
  });

  it('does not follow symlinks or capture special files: they are recorded as missing with warnings', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root);
    const p = plan(root, { outputDir: join(base, 'out') });
    expect(p.missing).toEqual(
      expect.arrayContaining([
        { key: 'member:goals/alpha/docs/link', source_path: 'goals/alpha/docs/link', reason: 'symlink_not_followed' },
        { key: 'member:goals/alpha/fifo', source_path: 'goals/alpha/fifo', reason: 'special_file_not_captured' },
      ]),
    );
    expect(p.warnings.map((w) => w.code)).toEqual(
      expect.arrayContaining(['symlink_not_followed', 'special_file_not_captured', 'goal_directory_unregistered']),
    );
    expect(p.members.some((m) => m.path.endsWith('/link') || m.path.endsWith('/fifo'))).toBe(false);
  });

  it('excludes non-state, SQLite sidecars, and automations/skills unless requested', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    writeFileSync(join(root, 'engine.db-wal'), 'x');
    writeFileSync(join(root, 'engine.db-shm'), 'x');
    writeFileSync(join(root, 'goals/alpha/work.db-journal'), 'x');
    writeFileSync(join(root, 'orphan.txt-wal'), 'kept: no database of that name');
    const p = plan(root, { outputDir: join(base, 'out') });
    const excluded = Object.fromEntries(p.excluded.map((x) => [x.source_path, x.reason]));
    expect(excluded).toMatchObject({
      locks: 'not_state',
      exports: 'not_state',
      'outbox.jsonl': 'not_state',
      automations: 'not_requested',
      skills: 'not_requested',
      'engine.db-wal': 'sqlite_sidecar',
      'engine.db-shm': 'sqlite_sidecar',
      'goals/alpha/work.db-journal': 'sqlite_sidecar',
    });
    expect(p.members.map((m) => m.path)).toContain('orphan.txt-wal');
    const withOptional = plan(root, { outputDir: join(base, 'out'), includeAutomations: true, includeSkills: true });
    expect(withOptional.members.map((m) => m.path)).toEqual(
      expect.arrayContaining(['automations/heartbeat.json', 'skills/loopx-review/SKILL.md']),
    );
    expect(withOptional.members.find((m) => m.path === 'skills/loopx-review/SKILL.md')!.category).toBe('skills');
  });

  it('leaves an output directory inside the root out of the capture', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    mkdirSync(join(root, 'goals/alpha/out'), { mode: 0o700 });
    const p = plan(root, { outputDir: join(root, 'goals/alpha/out') });
    expect(p.excluded).toContainEqual({
      key: 'member:goals/alpha/out',
      source_path: 'goals/alpha/out',
      reason: 'output_dir',
    });
    expect(() => plan(root, { outputDir: root })).toThrow(
      expect.objectContaining({ code: 'backup_output_dir_invalid' }),
    );
  });

  it('records a registered route whose directory is missing', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const registry = registryOf(root);
    registry.registerGoal(
      { goal_id: 'gone', goal_instance_id: mintGoalInstanceId(), project_id: PROJECT.project_id, status: 'active' },
      registry.read().revision,
    );
    const p = plan(root, { outputDir: join(base, 'out') });
    expect(p.goals.map((g) => [g.goal_id, g.route, g.route_status])).toEqual([
      ['alpha', 'goals/alpha', 'included'],
      ['beta', 'goals/beta', 'included'],
      ['gone', 'goals/gone', 'missing'],
    ]);
    expect(p.missing).toContainEqual({
      key: 'registry_route:gone',
      source_path: 'goals/gone',
      reason: 'route_missing',
    });
  });

  it('records routes outside the root without their paths, and keeps an absolute route inside the root relative (another source)', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const registry = join(root, 'registry.json');
    const doc = JSON.parse(readFileSync(registry, 'utf8'));
    // Only goals/<goal_id> routes are loopx_registry_v0: the registry owner refuses these rows,
    // so they reach the producer only through another source that reports them (stubbed here).
    const goals = [
      { goal_id: 'gone', route: 'goals/gone' },
      { goal_id: 'far', route: '/srv/elsewhere/far' },
      { goal_id: 'up', route: '../sibling' },
      { goal_id: 'inside', route: join(root, 'goals', 'beta') },
    ];
    writeFileSync(registry, JSON.stringify({ ...doc, goals: [...doc.goals, ...goals] }));
    expect(() => plan(root, { outputDir: join(base, 'out') })).toThrow(
      expect.objectContaining({ code: 'backup_source_unusable' }),
    );
    const bytesOf = new TextEncoder().encode(JSON.stringify({ goals, projects: [] }));
    writeFileSync(registry, bytesOf);
    const sources: BackupSources = {
      ...ownerBackupSources(root),
      readRegistryExact: () => ({ bytes: bytesOf, revision: 'sha256:stub', value: { goals, projects: [] } }),
    };
    const p = plan(root, { outputDir: join(base, 'out'), sources });
    expect(p.goals.map((g) => [g.goal_id, g.route, g.route_status])).toEqual([
      ['gone', 'goals/gone', 'missing'],
      ['far', null, 'outside_root'],
      ['up', null, 'outside_root'],
      ['inside', 'goals/beta', 'included'],
    ]);
    expect(p.goals.find((g) => g.goal_id === 'inside')!.archive_route).toBe('runtime-root/goals/beta');
    expect(p.missing).toContainEqual({ key: 'registry_route:far', source_path: null, reason: 'route_outside_root' });
    expect(jsonStrings(describePlan(p)).some((s) => s.includes('/srv/elsewhere') || s.includes(base))).toBe(false);
  });

  it('the plan summary carries counts and relative paths only', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root);
    const d = describePlan(plan(root, { outputDir: join(base, 'out'), backupId: 'b2' }));
    expect(d).toMatchObject({
      dry_run: true,
      backup_id: 'b2',
      archive_name: 'b2.tar.gz',
      manifest_name: 'b2.manifest.json',
      capacity: { ok: true, refusals: [] },
    });
    expect(d.counts.sqlite_databases).toBe(5);
    expect(d.counts.goals).toBe(3); // alpha, beta and the unregistered orphan directory
    expect(d.categories.goals!.files).toBeGreaterThan(0);
    expect(d.source_witnesses.map((w) => [w.source, w.present])).toEqual([
      ['registry.json', true],
      ['machine/configuration.json', true],
    ]);
    for (const s of jsonStrings(d)) expect(s.startsWith('/') || s.includes(base)).toBe(false);
  });

  it('refuses an unusable owner source instead of treating it as absent', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    // The registry owner is strict: an unknown field is refused, not ignored.
    const doc = JSON.parse(readFileSync(join(root, 'registry.json'), 'utf8'));
    writeFileSync(join(root, 'registry.json'), JSON.stringify({ ...doc, surprise: true }));
    expect(() => plan(root)).toThrow(expect.objectContaining({ code: 'backup_source_unusable' }));
    writeFileSync(join(root, 'registry.json'), '{"goals": [ broken');
    expect(() => plan(root)).toThrow(expect.objectContaining({ code: 'backup_source_unusable' }));
    rmSync(join(root, 'registry.json'));
    symlinkSync(join(base, 'elsewhere.json'), join(root, 'registry.json'));
    expect(() => plan(root)).toThrow(expect.objectContaining({ code: 'backup_source_unusable' }));
    rmSync(join(root, 'registry.json'));
    mkdirSync(join(root, 'registry.json'));
    expect(() => plan(root)).toThrow(expect.objectContaining({ code: 'backup_source_unusable' }));
  });

  it('an absent registry and machine configuration are owner-confirmed absences', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { machine: false, specials: false });
    rmSync(join(root, 'registry.json'));
    const p = plan(root);
    expect(p.registryRead).toEqual({ absent: true });
    expect(p.machineRead).toEqual({ absent: true });
    expect(p.goals).toEqual([]);
  });

  it('refuses a bad backup id, a missing root, and reports capacity a create would refuse', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    expect(() => plan(root)).toThrow(expect.objectContaining({ code: 'backup_root_missing' }));
    await makeRoot(root, { specials: false });
    for (const id of ['../x', '', 'a/b', '.hidden']) {
      let err: unknown;
      try {
        plan(root, { backupId: id });
      } catch (e) {
        err = e;
      }
      expect(hasCode(err, 'backup_id_invalid'), id).toBe(true);
    }
    const deep = join(root, ...Array.from({ length: 64 }, (_, i) => `d${i}`));
    mkdirSync(deep, { recursive: true });
    const refusals = planCapacityRefusals(plan(root));
    expect(refusals.map((r) => r.code)).toEqual(['backup_capacity_path_components']);
    expect(describePlan(plan(root)).capacity.ok).toBe(false);
  });
});
