/**
 * The `loopx_state_backup_v1` producer: one component per owner boundary, captured through its
 * owner with its revision interval, every field of the recovery-set table, Goal closures, keyed
 * component ids, the owners' exports in the archive, and a schema-valid manifest that stays far
 * below the 16 MiB manifest limit at the maximum inventory.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import {
  BACKUP_LIMITS,
  create,
  plan,
  type BackupManifest,
  type ManifestComponent,
  type RecoverySetCapture,
} from '../../src/backup/index.js';
import { executeVerify } from '../../src/recovery/index.js';
import { REPO } from '../support/cli.js';
import { PROJECT, addProject, commitWork, goalsOf, makeRoot, readArchive, tempBase } from './support/fixtures.js';

const validateV1 = (() => {
  const schema = JSON.parse(
    readFileSync(join(REPO, 'docs/schemas/state-backup-manifest-v1.schema.json'), 'utf8'),
  ) as object;
  return new Ajv2020({ strict: true, allErrors: true }).compile(schema);
})();

async function backup(root: string, out: string, id = 'b', options: Parameters<typeof create>[1] = {}) {
  return create(plan(root, { outputDir: out, backupId: id }), options);
}

const components = (m: BackupManifest): readonly ManifestComponent[] => m.components ?? [];

describe('a v1 backup', () => {
  it('is written by default, schema-valid, with one component per owner boundary and every field', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const r = await backup(root, join(base, 'out'));
    const m = r.manifest_doc;
    expect(m.schema_version).toBe('loopx_state_backup_v1');
    expect(validateV1(m), JSON.stringify(validateV1.errors)).toBe(true);
    const list = components(m);
    expect(list.map((c) => c.owner_kind)).toEqual([
      'registry',
      'config',
      'goal',
      'goal',
      'work',
      'work',
      'session',
      'effect',
      'quota',
      'scheduler',
    ]);
    // Machine owners once; Goal-boundary owners once per registered Goal (alpha, beta), the tags shared per Goal.
    const tags = new Set(list.filter((c) => c.logical_scope !== 'machine').map((c) => c.logical_scope));
    expect(tags.size).toBe(2);
    for (const c of list) {
      expect(c.required).toBe(true);
      expect(c.requested_profile).toBe('online');
      expect(c.achieved_profile).toBe('online');
      expect(c.capture_profile).toBe('online');
      expect(c.producer_version).toMatch(/^\d+\.\d+\.\d+/);
      expect(c.verification_profile.length).toBeGreaterThan(0);
      // No Goal id in an id or a scope: they are keyed per backup.
      expect(c.component_id).not.toMatch(/alpha|beta/);
      expect(c.logical_scope).not.toMatch(/alpha|beta/);
    }
    const work = list.find((c) => c.owner_kind === 'work' && c.goal_id === 'alpha')!;
    expect(work.state).toBe('captured');
    expect(work.source_identity).toMatch(/^sqlite:[0-9a-f]{32}$/);
    expect(work.cursor).toBe(25);
    expect(work.schema_version).toBe('loopx_work_copy_export_v0');
    expect(work.archive_members).toEqual(['runtime-root/goals/alpha/work.db']);
    expect(work.dependency_ids).toEqual([
      list.find((c) => c.owner_kind === 'goal' && c.goal_id === 'alpha')!.component_id,
    ]);
    expect(work.capture_interval.start!.cursor).toBe(25);
    expect(work.capture_interval.end!.cursor).toBe(25);
    expect(work.skew).toMatchObject({ moved_during_capture: false, moved_before_set_end: false, cursor_delta: 0 });
    // A store the owner never created is a confirmed absence, not a hole.
    expect(list.find((c) => c.owner_kind === 'quota')).toMatchObject({
      state: 'absent',
      archive_members: [],
      export_member: null,
      content_digest: null,
    });
    const set = m.capture as RecoverySetCapture;
    expect(set).toMatchObject({
      profile: 'online',
      requested_profile: 'online',
      achieved_profile: 'online',
      cross_owner_point_in_time: false,
      quiescence: null,
      failure_observation: null,
    });
    expect(set.skew_inventory.map((x) => x.component_id)).toEqual(list.map((c) => c.component_id));
    expect(set.downgrades).toEqual([]);
  });

  it("archives each owner's canonical export (a database owner's header and seal only); its content digest is the SHA-256 of the export's seal", async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const r = await backup(root, join(base, 'out'));
    const entries = await readArchive(join(base, 'out', r.archive.name));
    for (const c of components(r.manifest_doc).filter((x) => x.state === 'captured')) {
      const entry = entries.find((e) => e.name === c.export_member)!;
      expect(entry, c.component_id).toBeDefined();
      const lines = entry.data.toString('utf8').trimEnd().split('\n');
      const seal = JSON.parse(lines.at(-1)!) as unknown;
      expect(createHash('sha256').update(canonicalJson(seal)).digest('hex')).toBe(c.content_digest);
      expect((seal as { record_count: number }).record_count).toBe(c.record_count);
      // A database owner's records are its archived copy's: only the header and the seal are archived.
      const fromCopy = c.archive_members.every((m) => m.endsWith('.db'));
      expect(c.export_items, c.component_id).toBe(fromCopy ? 'from_copy' : 'in_export');
      expect(lines.length).toBe(fromCopy ? 2 : c.record_count! + 2);
      for (const member of c.archive_members)
        expect(
          entries.some((e) => e.name === member),
          member,
        ).toBe(true);
    }
  });

  it("names every Goal's required closure: its own components, every required machine component and their dependencies", async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const m = (await backup(root, join(base, 'out'))).manifest_doc;
    const list = components(m);
    expect(m.goal_closures!.map((g) => g.goal_id)).toEqual(['alpha', 'beta']);
    for (const closure of m.goal_closures!) {
      const own = list.filter((c) => c.goal_id === closure.goal_id).map((c) => c.component_id);
      const machine = list.filter((c) => c.goal_id === null).map((c) => c.component_id);
      expect([...closure.required_component_ids].sort()).toEqual([...own, ...machine].sort());
    }
  });

  it('keys component ids per backup: stable within one, unlinkable across two backups of the same root', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const one = components((await backup(root, join(base, 'out'), 'one')).manifest_doc);
    const two = components((await backup(root, join(base, 'out'), 'two')).manifest_doc);
    const goalIds = (l: readonly ManifestComponent[]) => l.filter((c) => c.goal_id !== null).map((c) => c.component_id);
    expect(new Set(one.map((c) => c.component_id)).size).toBe(one.length);
    expect(goalIds(one).filter((id) => goalIds(two).includes(id))).toEqual([]);
    expect(one.filter((c) => c.goal_id === null).map((c) => c.component_id)).toEqual(
      two.filter((c) => c.goal_id === null).map((c) => c.component_id),
    );
  });

  it('--format v0 still writes the legacy manifest, with no components', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const m = (await backup(root, join(base, 'out'), 'b', { format: 'v0' })).manifest_doc;
    expect(m.schema_version).toBe('loopx_state_backup_v0');
    expect(m.components).toBeUndefined();
    expect(m.capture.profile).toBe('legacy_best_effort_online');
  });

  it('verifies: each audit component is the manifest component, verified by its owner, and twice gives the same ids', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const r = await backup(root, join(base, 'out'));
    const verify = (d: string) =>
      executeVerify({
        archive: join(base, 'out', r.archive.name),
        manifest: join(base, 'out', r.manifest.name),
        destination: join(base, d),
      });
    const a = (await verify('d1')).audit;
    const b = (await verify('d2')).audit;
    const ids = components(r.manifest_doc).map((c) => c.component_id);
    expect(
      a.components.filter((c) => ids.includes(c.component_id)).map((c) => [c.component_id, c.verification]),
    ).toEqual(ids.map((id) => [id, 'verified']));
    expect(b.components.map((c) => c.component_id)).toEqual(a.components.map((c) => c.component_id));
    expect(a.backup.schema_version).toBe('loopx_state_backup_v1');
    expect(a.capture).toEqual({ requested_profile: 'online', achieved_profile: 'online', producer_claim: 'online' });
    expect([
      a.phase,
      a.activation_eligible,
      a.execution_authority_granted,
      a.retryable,
      a.last_durable_receipt,
    ]).toEqual(['audited', true, false, true, null]);
    expect(a.findings.filter((f) => f.severity !== 'warning')).toEqual([]);
  });
});

describe('a v1 manifest at the maximum inventory', () => {
  it('128 Goals, each with 20 documents, fit far inside the 16 MiB manifest limit (measured)', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    execFileSync('mkdir', ['-m', '700', root]);
    addProject(root, PROJECT);
    const goals = goalsOf(root);
    for (let i = 0; i < BACKUP_LIMITS.goals; i++) {
      const id = `g${String(i).padStart(3, '0')}`;
      goals.create(id, `Goal ${i}`, { projectId: PROJECT.project_id });
      for (let d = 0; d < 20; d++) goals.addDoc(id, `doc-${d}.md`, `# ${d}\n`);
    }
    await commitWork(root, 'g000', 3);
    const r = await backup(root, join(base, 'out'));
    const list = components(r.manifest_doc);
    expect(list.length).toBe(6 + 2 * BACKUP_LIMITS.goals);
    expect(r.manifest_doc.goal_closures!.length).toBe(BACKUP_LIMITS.goals);
    expect(validateV1(r.manifest_doc), JSON.stringify(validateV1.errors)).toBe(true);
    // The measured size is recorded in docs/backup-guide.md; the bound is the verifier's manifest limit.
    expect(r.manifest.size_bytes).toBeLessThan(BACKUP_LIMITS.manifestBytes / 4);
    console.log(`v1 manifest at 128 Goals × 20 documents: ${r.manifest.size_bytes} bytes`);
  }, 120_000);
});
