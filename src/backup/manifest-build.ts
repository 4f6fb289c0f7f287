/**
 * The embedded manifest of a capture: what `create` captured (members, file records, SQLite
 * snapshots, witnesses, the configuration checkpoint) counted per target and per category and
 * written as `loopx_state_backup_manifest_v0`, with the archive-dependent fields left null until
 * the archive is sealed (`withArchiveFacts`).
 */
import { categoryOf, type MissingEntry } from './discover.js';
import { limitsRecord } from './limits.js';
import {
  BACKUP_SCHEMA,
  BACKUP_SCHEMA_V1,
  CAPTURE_FACTS,
  producerVersion,
  type BackupManifest,
  type FileMemberRecord,
  type IncludedTarget,
  type ManifestMember,
  type SourceWitness,
  type SqliteSnapshotRecord,
  type Stats,
} from './manifest.js';
import { ARCHIVE_CONFIGURATION_BACKUP, ARCHIVE_ROOT, archivePathOf } from './paths.js';
import type { BackupPlan } from './plan.js';
import type { ConfigurationCheckpointVerification } from './sources.js';
import type { CapturedSet } from './set-capture.js';

export const emptyStats = (): Stats => ({ paths: 0, files: 0, directories: 0, symlinks: 0, bytes: 0 });

export interface Captured {
  readonly createdAt: string;
  readonly endedAt: string;
  readonly mtime: string;
  readonly members: ManifestMember[];
  readonly fileMembers: FileMemberRecord[];
  readonly snapshots: SqliteSnapshotRecord[];
  readonly missing: MissingEntry[];
  readonly warnings: BackupPlan['warnings'][number][];
  readonly witnesses: SourceWitness[];
  readonly checkpoint: {
    entry: { size_bytes: number; sha256: string };
    verification: ConfigurationCheckpointVerification;
  };
  /** v1: the owner-captured set; absent for a v0 manifest. */
  readonly set?: CapturedSet | undefined;
}

const ROOT_PREFIX = `${ARCHIVE_ROOT}/`;
const relativeOf = (m: ManifestMember): string => (m.path === ARCHIVE_ROOT ? '' : m.path.slice(ROOT_PREFIX.length));

/** Counts of the captured root members (not the checkpoint) whose root-relative path passes `filter`. */
function statsOf(c: Captured, filter: (relative: string) => boolean): Stats {
  const s = emptyStats();
  for (const m of c.members) {
    if (m.origin === 'configuration_checkpoint' || m.origin === 'owner_export' || m.origin === 'failure_observation')
      continue;
    const rel = relativeOf(m);
    if (!filter(rel)) continue;
    s.paths++;
    if (m.type === 'file') {
      s.files++;
      s.bytes += m.size_bytes;
    } else s.directories++;
  }
  s.symlinks = c.missing.filter(
    (x) => x.reason === 'symlink_not_followed' && x.source_path !== null && filter(x.source_path),
  ).length;
  return s;
}

/** The runtime root, and automations and skills when the options asked for them and they were captured. */
function includedTargets(p: BackupPlan, c: Captured, total: Stats): IncludedTarget[] {
  const included: IncludedTarget[] = [
    { key: 'runtime_root', source_path: '.', archive_path: ARCHIVE_ROOT, stats: total },
  ];
  for (const [key, dir, wanted] of [
    ['automations', 'automations', p.options.include_automations],
    ['skills', 'skills', p.options.include_skills],
  ] as const) {
    if (wanted && c.members.some((m) => m.path === archivePathOf(dir))) {
      included.push({
        key,
        source_path: dir,
        archive_path: archivePathOf(dir),
        stats: statsOf(c, (r) => r === dir || r.startsWith(`${dir}/`)),
      });
    }
  }
  return included;
}

function categoryStatsOf(c: Captured): Record<string, Stats> {
  const categoryStats: Record<string, Stats> = {};
  for (const m of c.members) {
    if (m.origin === 'configuration_checkpoint' || m.origin === 'owner_export' || m.origin === 'failure_observation')
      continue;
    const s = (categoryStats[categoryOf(relativeOf(m))] ??= emptyStats());
    s.paths++;
    if (m.type === 'file') {
      s.files++;
      s.bytes += m.size_bytes;
    } else s.directories++;
  }
  return categoryStats;
}

/** The embedded manifest (archive-dependent fields null). */
export function buildManifest(p: BackupPlan, c: Captured): BackupManifest {
  const total = statsOf(c, () => true);
  const included = includedTargets(p, c, total);
  const goalsMissing = p.goals.filter((g) => g.route_status !== 'included').length;
  return {
    ok: true,
    schema_version: c.set ? BACKUP_SCHEMA_V1 : BACKUP_SCHEMA,
    mode: 'state_backup',
    dry_run: false,
    backup_id: p.backupId,
    producer: 'loopx',
    producer_version: producerVersion(),
    created_at: c.createdAt,
    runtime_root: ARCHIVE_ROOT,
    options: p.options,
    capture: c.set ? c.set.capture : CAPTURE_FACTS,
    ...(c.set ? { components: c.set.components, goal_closures: c.set.closures } : {}),
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
      category_stats: categoryStatsOf(c),
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
