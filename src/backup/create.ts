/**
 * backup-state create: capture a plan into `<backup-id>.tar.gz` and `<backup-id>.manifest.json`.
 *
 * Order: refuse early what the plan already breaks (capacity, occupied names); re-read the owner
 * sources and refuse drift (routes, bytes, appearance, removal); stream the configuration
 * checkpoint (built from the plan's exact reads and verified), every planned member (SQLite
 * databases through online snapshots into the private staging directory, other files hashed while
 * copied) and the embedded manifest into the archive; refuse when a copied owner source differs
 * from its exact read (A→B, A→B→A), appeared or vanished, and when a §12 bound is exceeded; then
 * publish without overwriting. Any refusal leaves nothing published and removes only the staging
 * directory this attempt created; a full output file system is `backup_capacity_free_space`. It never truncates history or claims more than CAPTURE_FACTS.
 */
import { createHash } from 'node:crypto';
import { lstatSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../core/index.js';
import { countSqliteTableRows, isOutOfSpace, snapshotSqliteDatabase, type SqliteSnapshotFacts } from '../store/index.js';
import { categoryOf, type MissingEntry } from './discover.js';
import {
  capacityExceeded,
  configurationCheckpointInvalid,
  memberTruncated,
  outOfSpace,
  routesChanged,
  sourceAppeared,
  sourceChanged,
  sourceRemoved,
  sqliteSnapshotFailed,
} from './errors.js';
import { BACKUP_LIMITS, limitsRecord, type BackupLimitName } from './limits.js';
import {
  BACKUP_SCHEMA,
  CAPTURE_FACTS,
  manifestBytes,
  producerVersion,
  withArchiveFacts,
  type BackupManifest,
  type FileMemberRecord,
  type IncludedTarget,
  type ManifestMember,
  type SourceWitness,
  type SqliteSnapshotRecord,
  type Stats,
} from './manifest.js';
import { ARCHIVE_CONFIGURATION_BACKUP, ARCHIVE_MANIFEST, ARCHIVE_ROOT, archivePathOf } from './paths.js';
import { planCapacityRefusals, workDbGoalOf, type BackupPlan } from './plan.js';
import { assertNamesFree, createStaging, prepareOutputDir, publishPair, removeStaging, writeNewFile } from './publish.js';
import { WITNESSED_SOURCES, type ConfigurationCheckpointVerification, type MachineConfigurationRead, type RegistryRead } from './sources.js';
import { ArchiveWriter, ShortReadError } from './tar-writer.js';

/** One step of the capture, as hooks see it. `path` is relative to the root. */
export interface CaptureStep {
  readonly path: string;
  readonly archive_path: string;
  readonly kind: 'directory' | 'file' | 'sqlite' | 'absence_witness';
}

/** Test hooks: mutate sources at exact moments (latches, not sleeps). Never used in production. */
export interface CreateHooks {
  afterPlan?(plan: BackupPlan): void | Promise<void>;
  beforeCopy?(step: CaptureStep): void | Promise<void>;
  afterCopy?(step: CaptureStep): void | Promise<void>;
  beforePublish?(): void | Promise<void>;
}

export interface BackupProgress {
  readonly phase: 'capture' | 'publish' | 'done';
  readonly members_done: number;
  readonly members_total: number;
  readonly bytes_done: number;
  readonly bytes_total: number;
}

export interface CreateOptions {
  readonly hooks?: CreateHooks;
  readonly onProgress?: (p: BackupProgress) => void;
  /** gzip level (1–9); default 6, gzip's own default. */
  readonly gzipLevel?: number;
  readonly now?: () => Date;
}

export interface BackupResult {
  readonly backup_id: string;
  readonly archive: { readonly name: string; readonly sha256: string; readonly size_bytes: number };
  readonly manifest: { readonly name: string; readonly sha256: string; readonly size_bytes: number };
  readonly manifest_doc: BackupManifest;
}

const sha256Hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
const errnoOf = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;

/** Refuse when the live owner sources no longer say what the plan read (discovery drift). */
function assertNoDrift(p: BackupPlan): void {
  const registryNow: RegistryRead = p.sources.readRegistryExact();
  const machineNow: MachineConfigurationRead = p.sources.readMachineConfigurationExact();
  const during = 'after the plan was made';
  const reg = p.registryRead;
  if (!reg.absent && registryNow.absent) throw sourceRemoved(WITNESSED_SOURCES.registry, during);
  if (reg.absent && !registryNow.absent) throw sourceAppeared(WITNESSED_SOURCES.registry, during);
  if (!reg.absent && !registryNow.absent) {
    const key = (g: { goal_id: string; goal_instance_id?: string; route: string }) => `${g.goal_id}\0${g.goal_instance_id ?? ''}\0${g.route}`;
    const before = new Set(reg.value.goals.map(key));
    const after = new Set(registryNow.value.goals.map(key));
    const changed = [...before].filter((k) => !after.has(k)).length + [...after].filter((k) => !before.has(k)).length;
    if (changed > 0) throw routesChanged(changed);
    if (!equalBytes(reg.bytes, registryNow.bytes)) throw sourceChanged(WITNESSED_SOURCES.registry, during);
  }
  const mac = p.machineRead;
  if (!mac.absent && machineNow.absent) throw sourceRemoved(WITNESSED_SOURCES.machineConfiguration, during);
  if (mac.absent && !machineNow.absent) throw sourceAppeared(WITNESSED_SOURCES.machineConfiguration, during);
  if (!mac.absent && !machineNow.absent && !equalBytes(mac.bytes, machineNow.bytes)) throw sourceChanged(WITNESSED_SOURCES.machineConfiguration, during);
}

/** Build the configuration checkpoint from the plan's exact reads and check it says exactly what they say. */
function configurationCheckpoint(p: BackupPlan): { bytes: Uint8Array; verification: ConfigurationCheckpointVerification } {
  const bytes = p.sources.buildConfigurationCheckpoint(p.registryRead, p.machineRead);
  const v = p.sources.verifyConfigurationCheckpoint(bytes);
  if (!v.ok) throw configurationCheckpointInvalid(`verification failed (${v.problems.join(', ')})`);
  const goals = p.registryRead.absent ? [] : p.registryRead.value.goals;
  if (v.goal_count !== goals.length) throw configurationCheckpointInvalid('its Goals differ from the registry read');
  if (v.machine_configuration_present !== !p.machineRead.absent) throw configurationCheckpointInvalid('its machine configuration presence differs from the read');
  let doc: { data?: { machine_configuration?: unknown; goals?: Array<{ goal_id?: unknown }> } };
  try {
    doc = JSON.parse(new TextDecoder().decode(bytes)) as typeof doc;
  } catch {
    throw configurationCheckpointInvalid('it is not JSON');
  }
  const ids = (doc.data?.goals ?? []).map((g) => g.goal_id);
  // The same Goals, whatever their order (the config owner sorts them; the registry keeps creation order).
  if (canonicalJson([...ids].sort()) !== canonicalJson(goals.map((g) => g.goal_id).sort())) throw configurationCheckpointInvalid('its Goals differ from the registry read');
  const machine = p.machineRead.absent ? null : (JSON.parse(new TextDecoder().decode(p.machineRead.bytes)) as unknown);
  if (canonicalJson(doc.data?.machine_configuration ?? null) !== canonicalJson(machine)) throw configurationCheckpointInvalid('its machine configuration differs from the read');
  return { bytes, verification: v };
}

const emptyStats = (): Stats => ({ paths: 0, files: 0, directories: 0, symlinks: 0, bytes: 0 });

export async function create(p: BackupPlan, options: CreateOptions = {}): Promise<BackupResult> {
  try {
    return await capture(p, options);
  } catch (e) {
    // A full output file system, wherever it struck (archive, SQLite snapshot, manifest, link), is
    // the one capacity refusal — never an internal error or a verdict on a source.
    throw isOutOfSpace(e) ? outOfSpace() : e;
  }
}

async function capture(p: BackupPlan, options: CreateOptions): Promise<BackupResult> {
  const hooks = options.hooks ?? {};
  const now = options.now ?? (() => new Date());
  await hooks.afterPlan?.(p);

  const early = planCapacityRefusals(p)[0];
  if (early) throw capacityExceeded(early.limit_name, early.observed, early.subject);
  prepareOutputDir(p.outputDir);
  assertNamesFree(p.outputDir, [p.archiveName, p.manifestName]);
  assertNoDrift(p);

  const started = now();
  const createdAt = started.toISOString();
  // Every member carries the capture's start second as mtime: source mtimes are not recorded.
  const mtime = new Date(Math.floor(started.getTime() / 1000) * 1000);
  const staging = createStaging(p.outputDir, p.backupId);
  const stagedArchive = join(staging, 'archive.tar.gz');
  const stagedManifest = join(staging, 'manifest.json');
  const writer = ArchiveWriter.create(stagedArchive, mtime, options.gzipLevel ?? 6);
  let published = false;
  try {
    const members: ManifestMember[] = [];
    const fileMembers: FileMemberRecord[] = [];
    const snapshots: SqliteSnapshotRecord[] = [];
    const missing: MissingEntry[] = [...p.missing];
    const warnings = [...p.warnings];
    const witnesses = new Map<string, SourceWitness>();
    const copiedWitness = new Map<string, { archive_path: string; size_bytes: number; sha256: string }>();
    let regularBytes = 0;
    let snapshotSeq = 0;
    const bytesTotal = p.members.reduce((n, m) => n + m.size_bytes, 0);
    let bytesDone = 0;
    let membersDone = 0;
    const progress = (phase: BackupProgress['phase']) =>
      options.onProgress?.({ phase, members_done: membersDone, members_total: p.members.length, bytes_done: bytesDone, bytes_total: bytesTotal });
    const check = (limit: BackupLimitName, observed: number, subject?: string) => {
      if (observed > BACKUP_LIMITS[limit]) throw capacityExceeded(limit, observed, subject);
    };
    // Live bounds while copying: a file that grew since the plan is refused before or while it is copied, never cut short.
    const watch = (withProgress: boolean) => ({
      onSize: (size: number) => check('regularFileBytes', regularBytes + size),
      onChunk: (n: number) => {
        regularBytes += n;
        check('expandedBytes', writer.expandedBytes);
        check('archiveBytes', writer.archiveBytes);
        if (withProgress) {
          bytesDone += n;
          progress('capture');
        }
      },
    });
    const lost = (path: string, reason: string) => {
      missing.push({ key: `member:${path}`, source_path: path, reason });
      warnings.push({ code: reason, source_path: path });
    };

    // The configuration checkpoint first: it depends only on the plan's exact reads.
    const checkpoint = configurationCheckpoint(p);
    const checkpointEntry = await writer.buffer(ARCHIVE_CONFIGURATION_BACKUP, checkpoint.bytes);
    regularBytes += checkpointEntry.size_bytes;
    members.push({ path: ARCHIVE_CONFIGURATION_BACKUP, type: 'file', size_bytes: checkpointEntry.size_bytes, sha256: checkpointEntry.sha256, origin: 'configuration_checkpoint' });
    fileMembers.push({ archive_path: ARCHIVE_CONFIGURATION_BACKUP, size_bytes: checkpointEntry.size_bytes, sha256: checkpointEntry.sha256 });

    // The owner sources' witnesses: a present read is compared with its copied member; an absent one is re-checked in place.
    const exactReads = new Map<string, { owner: SourceWitness['owner']; read: RegistryRead | MachineConfigurationRead }>([
      [WITNESSED_SOURCES.registry, { owner: 'registry', read: p.registryRead }],
      [WITNESSED_SOURCES.machineConfiguration, { owner: 'config', read: p.machineRead }],
    ]);
    const steps: CaptureStep[] = p.members.map((m) => ({ path: m.path, archive_path: m.archive_path, kind: m.type === 'directory' ? 'directory' : m.sqlite ? 'sqlite' : 'file' }));
    for (const [source, { read }] of exactReads) if (read.absent) steps.push({ path: source, archive_path: archivePathOf(source), kind: 'absence_witness' });
    steps.sort((a, b) => (a.archive_path < b.archive_path ? -1 : a.archive_path > b.archive_path ? 1 : 0));

    for (const step of steps) {
      await hooks.beforeCopy?.(step);
      const abs = step.path === '' ? p.root : join(p.root, step.path);
      const exact = exactReads.get(step.path);
      if (step.kind === 'absence_witness') {
        let exists = true;
        try {
          lstatSync(abs);
        } catch (e) {
          if (errnoOf(e) !== 'ENOENT' && errnoOf(e) !== 'ENOTDIR') throw e;
          exists = false;
        }
        if (exists) throw sourceAppeared(step.path, 'during capture');
        witnesses.set(step.path, { owner: exact!.owner, source: step.path, archive_path: step.archive_path, present: false, revision: null, read_sha256: null, read_size_bytes: null, copied_sha256: null });
      } else if (step.kind === 'directory') {
        let st;
        try {
          st = lstatSync(abs);
        } catch (e) {
          if (errnoOf(e) !== 'ENOENT') throw e;
        }
        if (!st) lost(step.path, 'removed_during_capture');
        else if (!st.isDirectory()) lost(step.path, 'type_changed_during_capture');
        else {
          await writer.directory(step.archive_path);
          members.push({ path: step.archive_path, type: 'directory', size_bytes: 0, sha256: null, origin: 'runtime_root' });
        }
        membersDone++;
      } else if (step.kind === 'file') {
        let copied;
        try {
          copied = await writer.file(step.archive_path, abs, watch(true));
        } catch (e) {
          if (e instanceof ShortReadError) throw memberTruncated(step.archive_path);
          const code = errnoOf(e);
          const gone = code === 'ENOENT' || code === 'ENOTDIR';
          const typeChanged = code === 'ELOOP' || code === 'ENOTREGULAR';
          const unreadable = code === 'EACCES' || code === 'EPERM';
          if (exact && gone) throw sourceRemoved(step.path, 'during capture');
          if (exact && (typeChanged || unreadable)) throw sourceChanged(step.path, 'during capture');
          if (!gone && !typeChanged && !unreadable) throw e;
          // Best-effort traversal: an ordinary file that moved is recorded as missing, never silently dropped.
          lost(step.path, gone ? 'removed_during_capture' : typeChanged ? 'type_changed_during_capture' : 'unreadable');
        }
        if (copied) {
          if (exact) copiedWitness.set(step.path, { archive_path: step.archive_path, ...copied });
          members.push({ path: step.archive_path, type: 'file', size_bytes: copied.size_bytes, sha256: copied.sha256, origin: 'runtime_root' });
          fileMembers.push({ archive_path: step.archive_path, size_bytes: copied.size_bytes, sha256: copied.sha256 });
        }
        membersDone++;
      } else {
        const planned = p.members.find((m) => m.path === step.path)!;
        let gone: 'removed_during_capture' | 'type_changed_during_capture' | undefined;
        try {
          if (!lstatSync(abs).isFile()) gone = 'type_changed_during_capture';
        } catch (e) {
          if (errnoOf(e) !== 'ENOENT' && errnoOf(e) !== 'ENOTDIR') throw e;
          gone = 'removed_during_capture';
        }
        if (gone) {
          lost(step.path, gone);
          bytesDone += planned.size_bytes;
        } else {
          const snapPath = join(staging, `sqlite-${++snapshotSeq}.db`);
          let facts: SqliteSnapshotFacts;
          try {
            facts = await snapshotSqliteDatabase(abs, snapPath);
          } catch (e) {
            throw sqliteSnapshotFailed(step.path, e);
          }
          const goalId = workDbGoalOf(p, step.path) ?? null;
          let commits: number | null = null;
          if (goalId !== null) {
            commits = countSqliteTableRows(snapPath, 'commits') ?? null;
            if (commits !== null) check('goalCommittedTransactions', commits, goalId);
          }
          const copied = await writer.file(step.archive_path, snapPath, watch(false));
          unlinkSync(snapPath);
          bytesDone += planned.size_bytes;
          progress('capture');
          snapshots.push({
            source: step.path,
            archive_path: step.archive_path,
            snapshot_sha256: copied.sha256,
            snapshot_size_bytes: copied.size_bytes,
            integrity: facts.integrity,
            goal_id: goalId,
            committed_transactions: commits,
            runtime_identity: { node_version: process.version, sqlite_version: facts.sqliteVersion, sqlite_source_id: facts.sqliteSourceId },
          });
          members.push({ path: step.archive_path, type: 'file', size_bytes: copied.size_bytes, sha256: copied.sha256, origin: 'sqlite_snapshot' });
          fileMembers.push({ archive_path: step.archive_path, size_bytes: copied.size_bytes, sha256: copied.sha256 });
        }
        membersDone++;
      }
      await hooks.afterCopy?.(step);
      check('expandedBytes', writer.expandedBytes);
      check('archiveBytes', writer.archiveBytes);
      progress('capture');
    }
    // Before publication, every exact read is checked against the bytes actually copied into the
    // archive (never against a re-read of the live file, which cannot see A→B→A).
    for (const [source, { owner, read }] of exactReads) {
      const copy = copiedWitness.get(source);
      if (read.absent) {
        if (copy) throw sourceAppeared(source, 'during capture');
        if (!witnesses.has(source)) throw sourceAppeared(source, 'during capture');
        continue;
      }
      if (!copy) throw sourceRemoved(source, 'during capture');
      const readSha = sha256Hex(read.bytes);
      if (copy.sha256 !== readSha || copy.size_bytes !== read.bytes.byteLength) throw sourceChanged(source, 'during capture');
      witnesses.set(source, { owner, source, archive_path: copy.archive_path, present: true, revision: read.revision, read_sha256: readSha, read_size_bytes: read.bytes.byteLength, copied_sha256: copy.sha256 });
    }
    // The manifest names each included Goal's frozen archive route: it must be in the archive.
    const capturedDirectories = new Set(members.filter((m) => m.type === 'directory').map((m) => m.path));
    for (const g of p.goals) if (g.archive_route !== null && !capturedDirectories.has(g.archive_route)) throw sourceRemoved(g.route ?? g.goal_id, 'during capture');
    check('members', members.length + 1);

    const ended = now();
    const embedded = buildManifest(p, {
      createdAt,
      endedAt: ended.toISOString(),
      mtime: mtime.toISOString(),
      members,
      fileMembers,
      snapshots,
      missing,
      warnings,
      witnesses: [...witnesses.values()].sort((a, b) => (a.source < b.source ? -1 : 1)),
      checkpoint: { entry: checkpointEntry, verification: checkpoint.verification },
    });
    const embeddedBytes = manifestBytes(embedded);
    check('manifestBytes', embeddedBytes.byteLength, ARCHIVE_MANIFEST);
    await writer.buffer(ARCHIVE_MANIFEST, embeddedBytes);
    const archive = await writer.finish();
    check('archiveBytes', archive.size_bytes);
    check('expandedBytes', archive.expanded_bytes);
    check('expansionRatio', archive.size_bytes > 0 ? Math.ceil(archive.expanded_bytes / archive.size_bytes) : 0);

    const external = withArchiveFacts(embedded, {
      sha256: archive.sha256,
      size_bytes: archive.size_bytes,
      expanded_bytes: archive.expanded_bytes,
      embedded_manifest: { archive_path: ARCHIVE_MANIFEST, sha256: sha256Hex(embeddedBytes), size_bytes: embeddedBytes.byteLength },
    });
    const externalBytes = manifestBytes(external);
    check('manifestBytes', externalBytes.byteLength, p.manifestName);
    writeNewFile(stagedManifest, externalBytes);

    progress('publish');
    await hooks.beforePublish?.();
    publishPair(p.outputDir, { manifestPath: stagedManifest, archivePath: stagedArchive }, { manifest: p.manifestName, archive: p.archiveName });
    published = true;
    progress('done');
    return {
      backup_id: p.backupId,
      archive: { name: p.archiveName, sha256: archive.sha256, size_bytes: archive.size_bytes },
      manifest: { name: p.manifestName, sha256: sha256Hex(externalBytes), size_bytes: externalBytes.byteLength },
      manifest_doc: external,
    };
  } finally {
    if (!published) await writer.abort();
    removeStaging(staging);
  }
}

interface Captured {
  readonly createdAt: string;
  readonly endedAt: string;
  readonly mtime: string;
  readonly members: ManifestMember[];
  readonly fileMembers: FileMemberRecord[];
  readonly snapshots: SqliteSnapshotRecord[];
  readonly missing: MissingEntry[];
  readonly warnings: BackupPlan['warnings'][number][];
  readonly witnesses: SourceWitness[];
  readonly checkpoint: { entry: { size_bytes: number; sha256: string }; verification: ConfigurationCheckpointVerification };
}

/** The embedded manifest (archive-dependent fields null). */
function buildManifest(p: BackupPlan, c: Captured): BackupManifest {
  const rootPrefix = `${ARCHIVE_ROOT}/`;
  const statsOf = (filter: (relative: string) => boolean): Stats => {
    const s = emptyStats();
    for (const m of c.members) {
      if (m.origin === 'configuration_checkpoint') continue;
      const rel = m.path === ARCHIVE_ROOT ? '' : m.path.slice(rootPrefix.length);
      if (!filter(rel)) continue;
      s.paths++;
      if (m.type === 'file') {
        s.files++;
        s.bytes += m.size_bytes;
      } else s.directories++;
    }
    s.symlinks = c.missing.filter((x) => x.reason === 'symlink_not_followed' && x.source_path !== null && filter(x.source_path)).length;
    return s;
  };
  const total = statsOf(() => true);
  const included: IncludedTarget[] = [{ key: 'runtime_root', source_path: '.', archive_path: ARCHIVE_ROOT, stats: total }];
  for (const [key, dir, wanted] of [['automations', 'automations', p.options.include_automations], ['skills', 'skills', p.options.include_skills]] as const) {
    if (wanted && c.members.some((m) => m.path === archivePathOf(dir))) {
      included.push({ key, source_path: dir, archive_path: archivePathOf(dir), stats: statsOf((r) => r === dir || r.startsWith(`${dir}/`)) });
    }
  }
  const categoryStats: Record<string, Stats> = {};
  for (const m of c.members) {
    if (m.origin === 'configuration_checkpoint') continue;
    const rel = m.path === ARCHIVE_ROOT ? '' : m.path.slice(rootPrefix.length);
    const s = (categoryStats[categoryOf(rel)] ??= emptyStats());
    s.paths++;
    if (m.type === 'file') {
      s.files++;
      s.bytes += m.size_bytes;
    } else s.directories++;
  }
  const goalsMissing = p.goals.filter((g) => g.route_status !== 'included').length;
  return {
    ok: true,
    schema_version: BACKUP_SCHEMA,
    mode: 'state_backup',
    dry_run: false,
    backup_id: p.backupId,
    producer: 'loopx',
    producer_version: producerVersion(),
    created_at: c.createdAt,
    runtime_root: ARCHIVE_ROOT,
    options: p.options,
    capture: CAPTURE_FACTS,
    privacy_certified: false,
    registry_discovery: {
      goal_count: p.goals.length,
      project_count: p.projectCount,
      route_count: p.goals.length,
      included_route_count: p.goals.length - goalsMissing,
      missing_route_count: goalsMissing,
      unregistered_goal_directory_count: p.unregisteredGoalDirectories.length,
    },
    goals: p.goals,
    source_witnesses: c.witnesses,
    configuration_checkpoint: {
      archive_path: ARCHIVE_CONFIGURATION_BACKUP,
      sha256: c.checkpoint.verification.sha256,
      file_sha256: c.checkpoint.entry.sha256,
      size_bytes: c.checkpoint.entry.size_bytes,
    },
    included,
    missing: c.missing,
    excluded: p.excluded,
    warnings: c.warnings,
    summary: {
      included_target_count: included.length,
      missing_target_count: c.missing.length,
      warning_count: c.warnings.length,
      total_stats: total,
      logical_source_bytes: total.bytes,
      category_stats: categoryStats,
    },
    members: c.members,
    limits: limitsRecord(),
    execution: {
      archive_path: p.archiveName,
      manifest_path: p.manifestName,
      archive_sha256: null,
      archive_size_bytes: null,
      archive_expanded_bytes: null,
      archive_to_logical_ratio: null,
      embedded_manifest: null,
      member_count: c.members.length + 1,
      capture_interval: { started_at: c.createdAt, ended_at: c.endedAt },
      tar: { uid: 0, gid: 0, file_mode: '0600', directory_mode: '0700', mtime: c.mtime, compression: 'gzip' },
      configuration_backup: { ...c.checkpoint.verification, archive_path: ARCHIVE_CONFIGURATION_BACKUP },
      sqlite_snapshots: c.snapshots,
      file_members: c.fileMembers,
    },
  };
}
