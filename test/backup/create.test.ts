/**
 * backup-state create: the archive reads back exactly what the manifest says (members, modes,
 * owners, digests), SQLite members are verified online snapshots, the configuration checkpoint
 * verifies, the embedded and external manifests agree, and no manifest holds an absolute path.
 */
import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CAPTURE_FACTS, create, plan, type BackupManifest } from '../../src/backup/index.js';
import { LOOPX_VERSION } from '../../src/core/version.js';
import { verifyConfigurationCheckpoint } from '../../src/owners/config/index.js';
import { openGoalWork } from '../../src/owners/work/index.js';
import { readHistoricalFile as readHistorical } from '../../src/owners/work/historical.js';
import {
  jsonStrings,
  machineDoc,
  makeRoot,
  readArchive,
  sha256File,
  tempBase,
  type ArchiveEntry,
} from './support/fixtures.js';

const normalized = (e: ArchiveEntry) => e.name.replace(/\/$/, '');

async function backupOf(options: { includeAutomations?: boolean; id?: string } = {}) {
  const base = tempBase();
  const root = join(base, 'root');
  const fixture = await makeRoot(root);
  // The work owner holds a committed transaction in alpha's WAL, not yet checkpointed: the snapshot must contain it.
  const live = await openGoalWork({ root, goal_id: 'alpha' });
  await live.addTodo({ operation_id: 'only-in-the-wal', todo_id: 'wal', title: 'only in the WAL' });
  expect(statSync(join(root, 'goals/alpha/work.db-wal')).size).toBeGreaterThan(0);
  const out = join(base, 'out');
  const id = options.id ?? 'b1';
  const result = await create(
    plan(root, { outputDir: out, backupId: id, includeAutomations: options.includeAutomations }),
    { format: 'v0' },
  );
  live.close();
  const manifest = JSON.parse(readFileSync(join(out, `${id}.manifest.json`), 'utf8')) as BackupManifest;
  const entries = await readArchive(join(out, `${id}.tar.gz`));
  return { base, root, out, id, result, manifest, entries, fixture };
}

describe('backup-state create', () => {
  it('publishes the archive and manifest, owner-only, and nothing else', async () => {
    const { out, id, result } = await backupOf();
    expect(readdirSync(out).sort()).toEqual([`${id}.manifest.json`, `${id}.tar.gz`]); // staging removed
    for (const f of readdirSync(out)) expect(statSync(join(out, f)).mode & 0o777).toBe(0o600);
    expect(statSync(out).mode & 0o777).toBe(0o700);
    expect(sha256File(join(out, `${id}.tar.gz`))).toBe(result.archive.sha256);
    expect(sha256File(join(out, `${id}.manifest.json`))).toBe(result.manifest.sha256);
  });

  it('the archive reads back exactly what the manifest says: members, types, sizes, sha256s', async () => {
    const { manifest, entries, result } = await backupOf();
    const files = entries.filter((e) => e.type === 'file');
    expect(entries.map((e) => e.type).every((t) => t === 'file' || t === 'directory')).toBe(true);
    // The inventory lists every member but the embedded manifest, in archive order.
    expect(manifest.members.map((m) => [m.path, m.type, m.size_bytes, m.sha256])).toEqual(
      entries
        .filter((e) => e.name !== 'manifest.json')
        .map((e) => [normalized(e), e.type, e.type === 'file' ? e.size : 0, e.sha256]),
    );
    expect(manifest.execution.file_members).toEqual(
      files
        .filter((e) => e.name !== 'manifest.json')
        .map((e) => ({ archive_path: e.name, size_bytes: e.size, sha256: e.sha256 })),
    );
    expect(manifest.execution.member_count).toBe(entries.length);
    expect(entries[0]!.name).toBe('configuration-backup.json');
    expect(entries.at(-1)!.name).toBe('manifest.json');
    expect(manifest.execution.archive_sha256).toBe(result.archive.sha256);
    expect(manifest.execution.archive_size_bytes).toBe(result.archive.size_bytes);
    const names = entries.map(normalized);
    expect(names).toContain('runtime-root/goals/alpha/docs/notes-é.md');
    expect(names).toContain('runtime-root/goals/beta/empty');
    for (const left of [
      'runtime-root/locks',
      'runtime-root/automations',
      'runtime-root/goals/alpha/docs/link',
      'runtime-root/goals/alpha/fifo',
    ])
      expect(names).not.toContain(left);
    expect(names.some((n) => /-(wal|shm|journal)$/.test(n))).toBe(false);
  });

  it('members are owner-only regular files and directories, uid/gid 0, no user or group names, one fixed mtime', async () => {
    const { entries, manifest } = await backupOf();
    for (const e of entries) {
      expect(e.mode, e.name).toBe(e.type === 'directory' ? 0o700 : 0o600);
      expect([e.uid, e.gid, e.uname, e.gname], e.name).toEqual([0, 0, '', '']);
      expect(e.mtime.toISOString()).toBe(manifest.execution.tar.mtime);
    }
    expect(entries.filter((e) => e.type === 'directory').every((e) => e.name.endsWith('/'))).toBe(true);
  });

  it('every SQLite database is an online snapshot that passes integrity_check and holds committed WAL content', async () => {
    const { base, manifest, entries } = await backupOf();
    const snaps = manifest.execution.sqlite_snapshots;
    expect(snaps.map((s) => s.source).sort()).toEqual([
      'engine.db',
      'goals/alpha/docs/attachment.bin',
      'goals/alpha/work.db',
      'goals/beta/work.db',
      'sessions.db',
    ]);
    for (const s of snaps) {
      const entry = entries.find((e) => e.name === s.archive_path)!;
      expect(entry.sha256).toBe(s.snapshot_sha256);
      expect(entry.size).toBe(s.snapshot_size_bytes);
      expect(s.integrity).toBe('ok');
      expect(s.runtime_identity.node_version).toBe(process.version);
      expect(s.runtime_identity.sqlite_version).toMatch(/^3\.\d+\.\d+$/);
      const copy = join(base, `check-${s.snapshot_sha256}.db`);
      writeFileSync(copy, entry.data);
      const db = new Database(copy, { readonly: true });
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('journal_mode', { simple: true })).toBe('delete');
      if (s.source === 'goals/alpha/work.db')
        expect(db.prepare("SELECT count(*) AS n FROM commits WHERE operation_id = 'only-in-the-wal'").get()).toEqual({
          n: 1,
        });
      db.close();
      if (s.goal_id !== null) {
        // A Goal's snapshot is a work store its owner reads back whole, the WAL commit included.
        const work = readHistorical(copy, { goal_id: s.goal_id });
        expect([work.readable, work.history_count, work.findings]).toEqual([true, s.committed_transactions, []]);
        if (s.goal_id === 'alpha')
          expect(work.todos.map((t) => [t.todo_id, t.title, t.status])).toEqual([
            ['t1', 'finish the report', 'open'],
            ['t2', 'gather sources', 'done'],
            ['wal', 'only in the WAL', 'open'],
          ]);
      }
    }
    const alpha = snaps.find((s) => s.source === 'goals/alpha/work.db')!;
    expect([alpha.goal_id, alpha.committed_transactions]).toEqual(['alpha', 26]);
    expect(snaps.find((s) => s.source === 'goals/beta/work.db')!.committed_transactions).toBe(3);
    expect(snaps.find((s) => s.source === 'engine.db')!.goal_id).toBeNull();
  });

  it('embeds a verified configuration checkpoint built from the exact reads', async () => {
    const { manifest, entries, fixture } = await backupOf();
    const bytes = entries.find((e) => e.name === 'configuration-backup.json')!.data;
    // The config owner built it; the config owner's verifier is the one that accepts it.
    const v = verifyConfigurationCheckpoint(new Uint8Array(bytes));
    expect(v).toMatchObject({
      ok: true,
      goal_count: 2,
      machine_configuration_present: true,
      privacy_certified: false,
      activation_performed: false,
      readback_verified: true,
      findings: [],
    });
    const doc = JSON.parse(bytes.toString('utf8'));
    expect(doc.data.machine_configuration).toEqual(machineDoc);
    expect(doc.data.goals.map((g: { goal_id: string }) => g.goal_id)).toEqual(['alpha', 'beta']);
    // Each Goal's configuration is its complete registry row, as the registry owner wrote it.
    expect(doc.data.goals.map((g: { goal_configuration: unknown }) => g.goal_configuration)).toEqual([
      {
        goal_id: 'alpha',
        goal_instance_id: fixture.alpha.goal_instance_id,
        project_id: 'proj',
        status: 'active',
        route: 'goals/alpha',
      },
      {
        goal_id: 'beta',
        goal_instance_id: fixture.beta.goal_instance_id,
        project_id: 'proj',
        status: 'paused',
        route: 'goals/beta',
      },
    ]);
    expect(manifest.configuration_checkpoint).toEqual({
      archive_path: 'configuration-backup.json',
      sha256: v.sha256,
      file_sha256: entries[0]!.sha256,
      size_bytes: bytes.byteLength,
    });
    expect(manifest.execution.configuration_backup).toMatchObject({ ok: true, sha256: v.sha256 });
    // The copied owner sources are byte-identical to the reads the plan decoded.
    for (const w of manifest.source_witnesses) {
      expect(w.present).toBe(true);
      expect(w.copied_sha256).toBe(w.read_sha256);
      expect(entries.find((e) => e.name === w.archive_path)!.sha256).toBe(w.read_sha256);
    }
  });

  it('the embedded manifest is the external one with the archive-dependent fields null', async () => {
    const { manifest, entries } = await backupOf();
    const embeddedEntry = entries.find((e) => e.name === 'manifest.json')!;
    const embedded = JSON.parse(embeddedEntry.data.toString('utf8')) as BackupManifest;
    expect(manifest.execution.embedded_manifest).toEqual({
      archive_path: 'manifest.json',
      sha256: embeddedEntry.sha256,
      size_bytes: embeddedEntry.size,
    });
    expect(embedded.execution).toMatchObject({
      archive_sha256: null,
      archive_size_bytes: null,
      archive_expanded_bytes: null,
      archive_to_logical_ratio: null,
      embedded_manifest: null,
    });
    const { execution: e1, ...rest1 } = manifest;
    const { execution: e2, ...rest2 } = embedded;
    expect(rest2).toEqual(rest1);
    const strip = (e: BackupManifest['execution']) => ({
      ...e,
      archive_sha256: null,
      archive_size_bytes: null,
      archive_expanded_bytes: null,
      archive_to_logical_ratio: null,
      embedded_manifest: null,
    });
    expect(strip(e2)).toEqual(strip(e1));
  });

  it('states the capture facts exactly, and the producer, schema, Goals and routes', async () => {
    const { manifest } = await backupOf();
    expect(manifest.capture).toEqual({
      profile: 'legacy_best_effort_online',
      cross_owner_point_in_time: false,
      sqlite: 'component_local_online_snapshot',
      files: 'best_effort_live_traversal',
    });
    expect(manifest.capture).toEqual(CAPTURE_FACTS);
    expect(manifest).toMatchObject({
      schema_version: 'loopx_state_backup_v0',
      backup_id: 'b1',
      producer_version: LOOPX_VERSION,
      runtime_root: 'runtime-root',
      privacy_certified: false,
    });
    expect(Date.parse(manifest.created_at)).not.toBeNaN();
    expect(manifest.goals.map((g) => [g.goal_id, g.route, g.archive_route])).toEqual([
      ['alpha', 'goals/alpha', 'runtime-root/goals/alpha'],
      ['beta', 'goals/beta', 'runtime-root/goals/beta'],
    ]);
    expect(manifest.registry_discovery).toMatchObject({
      goal_count: 2,
      project_count: 1,
      included_route_count: 2,
      missing_route_count: 0,
      unregistered_goal_directory_count: 1,
    });
    expect(manifest.missing.map((m) => m.reason).sort()).toEqual(['special_file_not_captured', 'symlink_not_followed']);
    expect(manifest.summary.total_stats.symlinks).toBe(1);
  });

  it('no manifest holds an absolute path', async () => {
    const { base, manifest, entries } = await backupOf();
    const embedded = JSON.parse(entries.find((e) => e.name === 'manifest.json')!.data.toString('utf8'));
    for (const doc of [manifest, embedded]) {
      for (const s of jsonStrings(doc)) {
        expect(s.startsWith('/'), s).toBe(false);
        expect(s.includes(base), s).toBe(false);
      }
    }
  });

  it('captures automations and skills only when asked', async () => {
    const { manifest, entries } = await backupOf({ includeAutomations: true });
    const names = entries.map(normalized);
    expect(names).toContain('runtime-root/automations/heartbeat.json');
    expect(names).not.toContain('runtime-root/skills');
    expect(manifest.included.map((t) => t.key)).toEqual(['runtime_root', 'automations']);
    expect(manifest.options).toEqual({ include_automations: true, include_skills: false });
  });

  it('a missing machine configuration is captured as a witnessed absence', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { machine: false, specials: false });
    await create(plan(root, { outputDir: join(base, 'out'), backupId: 'nomachine' }));
    const manifest = JSON.parse(readFileSync(join(base, 'out', 'nomachine.manifest.json'), 'utf8')) as BackupManifest;
    expect(manifest.source_witnesses.find((w) => w.owner === 'config')).toEqual({
      owner: 'config',
      source: 'machine/configuration.json',
      archive_path: 'runtime-root/machine/configuration.json',
      present: false,
      revision: null,
      read_sha256: null,
      read_size_bytes: null,
      copied_sha256: null,
    });
    expect(manifest.execution.configuration_backup.machine_configuration_present).toBe(false);
  });

  it('the default backup id is the UTC time and the default output directory is <root>/backups', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const p = plan(root, { now: new Date('2026-03-04T05:06:07.891Z') });
    expect(p.backupId).toBe('20260304T050607Z');
    await create(p);
    expect(existsSync(join(root, 'backups', '20260304T050607Z.tar.gz'))).toBe(true);
    expect(existsSync(join(root, 'backups', '20260304T050607Z.manifest.json'))).toBe(true);
  });
});

describe('a database that cannot be snapshotted', () => {
  it('refuses the backup instead of copying its raw bytes', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    // A SQLite header followed by garbage: recognized as a database, but not a readable one.
    const corrupt = Buffer.alloc(8192, 0xab);
    Buffer.from('SQLite format 3\0', 'latin1').copy(corrupt);
    writeFileSync(join(root, 'goals/alpha/docs/broken.db'), corrupt);
    const out = join(base, 'out');
    await expect(create(plan(root, { outputDir: out, backupId: 'b' }), { format: 'v0' })).rejects.toMatchObject({
      code: 'backup_sqlite_snapshot_failed',
      details: { source: 'goals/alpha/docs/broken.db' },
    });
    expect(readdirSync(out)).toEqual([]);
  });
});

describe('backup-state create with Goals registered out of id order', () => {
  it('backs up a registry whose Goals are in creation order, not id order (the checkpoint sorts them)', async () => {
    const { openFileRegistry } = await import('../../src/owners/registry/index.js');
    const { openFileGoalStore } = await import('../../src/owners/goal/index.js');
    const { mkdirSync } = await import('node:fs');
    const base = tempBase();
    const root = join(base, 'root');
    mkdirSync(root, { mode: 0o700 });
    const goals = openFileGoalStore(root, { registry: openFileRegistry(root) });
    goals.create('beta', 'Second by id, created first');
    goals.create('alpha', 'First by id, created second');
    const result = await create(plan(root, { outputDir: join(base, 'out'), backupId: 'order' }));
    expect(result.manifest_doc.goals.map((g) => g.goal_id).sort()).toEqual(['alpha', 'beta']);
    const checkpoint = verifyConfigurationCheckpoint(
      new Uint8Array(
        (await readArchive(join(base, 'out', 'order.tar.gz'))).find((e) => e.name === 'configuration-backup.json')!
          .data,
      ),
    );
    expect(checkpoint).toMatchObject({ ok: true, goal_count: 2 });
  });
});
