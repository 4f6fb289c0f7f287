/**
 * The `loopx_state_backup_v0` manifest. One payload, two copies: the embedded `manifest.json`
 * (written into the tar before the archive digest exists) and the external
 * `<backup-id>.manifest.json`. They are equal except for the archive-dependent fields, which are
 * null in the embedded copy: `execution.archive_sha256`, `execution.archive_size_bytes`,
 * `execution.archive_expanded_bytes`, `execution.archive_to_logical_ratio` and
 * `execution.embedded_manifest`. Every path in it is relative (to the root, the archive or the
 * output directory); it never holds an absolute path.
 */
import { LOOPX_VERSION } from '../core/index.js';
import type { ServiceReference } from '../owners/index.js';
import type { BackupWarning, ExcludedEntry, MissingEntry } from './discover.js';
import type { ConfigurationCheckpointVerification } from './sources.js';
import type { PlannedGoal } from './plan.js';
import type { CaptureProfile, DowngradeCode } from './profiles.js';

export const BACKUP_SCHEMA = 'loopx_state_backup_v0';
/** The manifest revision that declares its components and capture profiles (written by default). */
export const BACKUP_SCHEMA_V1 = 'loopx_state_backup_v1';
export type BackupFormat = 'v0' | 'v1';

/** What this producer captures, stated exactly — it never claims more. */
export const CAPTURE_FACTS = Object.freeze({
  profile: 'legacy_best_effort_online',
  cross_owner_point_in_time: false,
  sqlite: 'component_local_online_snapshot',
  files: 'best_effort_live_traversal',
} as const);

export type MemberOrigin =
  'runtime_root' | 'sqlite_snapshot' | 'configuration_checkpoint' | 'owner_export' | 'failure_observation';

export interface ManifestMember {
  /** Normalized archive path (no trailing slash). */
  readonly path: string;
  readonly type: 'directory' | 'file';
  readonly size_bytes: number;
  /** null for directories. */
  readonly sha256: string | null;
  readonly origin: MemberOrigin;
}

export interface FileMemberRecord {
  readonly archive_path: string;
  readonly size_bytes: number;
  readonly sha256: string;
}

export interface SqliteSnapshotRecord {
  /** Relative to the root. */
  readonly source: string;
  readonly archive_path: string;
  readonly snapshot_sha256: string;
  readonly snapshot_size_bytes: number;
  readonly integrity: 'ok';
  /** The Goal whose work database this is, if it is one. */
  readonly goal_id: string | null;
  /** Rows of its `commits` table (work databases), else null. */
  readonly committed_transactions: number | null;
  readonly runtime_identity: {
    readonly node_version: string;
    readonly sqlite_version: string;
    readonly sqlite_source_id: string;
  };
}

export interface SourceWitness {
  readonly owner: 'registry' | 'config';
  /** Relative to the root. */
  readonly source: string;
  readonly archive_path: string;
  readonly present: boolean;
  readonly revision: string | null;
  /** SHA-256 and size of the exact read the plan decoded (null when absent). */
  readonly read_sha256: string | null;
  readonly read_size_bytes: number | null;
  /** SHA-256 of the bytes copied into the archive; equal to read_sha256, or the backup was refused. */
  readonly copied_sha256: string | null;
}

export interface Stats {
  paths: number;
  files: number;
  directories: number;
  symlinks: number;
  bytes: number;
}

export interface IncludedTarget {
  readonly key: string;
  readonly source_path: string;
  readonly archive_path: string;
  readonly stats: Stats;
}

export interface BackupManifest {
  readonly ok: true;
  readonly schema_version: typeof BACKUP_SCHEMA | typeof BACKUP_SCHEMA_V1;
  readonly mode: 'state_backup';
  readonly dry_run: false;
  readonly backup_id: string;
  readonly producer: 'loopx';
  readonly producer_version: string;
  readonly created_at: string;
  readonly runtime_root: string;
  readonly options: { readonly include_automations: boolean; readonly include_skills: boolean };
  /** v0: CAPTURE_FACTS. v1: the set's requested and achieved profiles (`RecoverySetCapture`). */
  readonly capture: typeof CAPTURE_FACTS | RecoverySetCapture;
  /** v1 only: one component per owner boundary. */
  readonly components?: readonly ManifestComponent[];
  /** v1 only: each Goal's required-owner closure. */
  readonly goal_closures?: readonly GoalClosure[];
  readonly privacy_certified: false;
  readonly registry_discovery: {
    readonly goal_count: number;
    readonly project_count: number;
    readonly route_count: number;
    readonly included_route_count: number;
    readonly missing_route_count: number;
    readonly unregistered_goal_directory_count: number;
  };
  readonly goals: readonly PlannedGoal[];
  readonly source_witnesses: readonly SourceWitness[];
  readonly configuration_checkpoint: {
    readonly archive_path: string;
    readonly sha256: string;
    readonly file_sha256: string;
    readonly size_bytes: number;
  };
  readonly included: readonly IncludedTarget[];
  readonly missing: readonly MissingEntry[];
  readonly excluded: readonly ExcludedEntry[];
  readonly warnings: readonly BackupWarning[];
  readonly summary: {
    readonly included_target_count: number;
    readonly missing_target_count: number;
    readonly warning_count: number;
    readonly total_stats: Stats;
    readonly logical_source_bytes: number;
    readonly category_stats: Record<string, Stats>;
  };
  readonly members: readonly ManifestMember[];
  readonly limits: Record<string, number>;
  readonly execution: {
    readonly archive_path: string;
    readonly manifest_path: string;
    readonly archive_sha256: string | null;
    readonly archive_size_bytes: number | null;
    readonly archive_expanded_bytes: number | null;
    readonly archive_to_logical_ratio: number | null;
    readonly embedded_manifest: {
      readonly archive_path: string;
      readonly sha256: string;
      readonly size_bytes: number;
    } | null;
    readonly member_count: number;
    readonly capture_interval: { readonly started_at: string; readonly ended_at: string };
    readonly tar: {
      readonly uid: 0;
      readonly gid: 0;
      readonly file_mode: '0600';
      readonly directory_mode: '0700';
      readonly mtime: string;
      readonly compression: 'gzip';
    };
    readonly configuration_backup: ConfigurationCheckpointVerification & { readonly archive_path: string };
    readonly sqlite_snapshots: readonly SqliteSnapshotRecord[];
    readonly file_members: readonly FileMemberRecord[];
  };
}

/** One position of a live owner as the capture observed it (the owner's revision domain). */
export interface PointRecord {
  readonly revision: string | null;
  readonly cursor: number | null;
  readonly at: string;
}

/** A downgrade or hold of a component (or, with component_id null, of the set). */
export interface DowngradeFinding {
  readonly code: DowngradeCode;
  readonly component_id: string | null;
  readonly severity: 'hold' | 'warning';
  readonly next_action: string;
}

/** One component of a v1 recovery set: one owner boundary (RFC field table, plus capture evidence). */
export interface ManifestComponent {
  /** Stable within this set; keyed per backup, never a live owner identity and never a Goal id. */
  readonly component_id: string;
  readonly owner_kind: string;
  /** `machine`, or `goal:<tag>` with the same keyed tag for every component of one Goal. */
  readonly logical_scope: string;
  /** Private (the manifest is private): the Goal the component belongs to. */
  readonly goal_id: string | null;
  /** Exact normalized archive paths of the owner's captured members. */
  readonly archive_members: readonly string[];
  /** The owner's canonical export (JSON lines), or null when there is nothing captured. */
  readonly export_member: string | null;
  /**
   * Where the export's records are: `in_export` — the member holds the header, every record and the
   * seal; `from_copy` — the records are the owner's reading of its archived members, so the member
   * holds only the header and the seal, and verification rebuilds the records from the copy and
   * checks them against that seal (and the seal against `content_digest`). Null without an export.
   */
  readonly export_items: 'in_export' | 'from_copy' | null;
  /**
   * Set when the component's state was read from the root's database service (`postgresql`), not
   * its files: its export holds every record and it has no member. Absent otherwise.
   */
  readonly provider?: string;
  readonly required: boolean;
  /**
   * `captured`; `absent` — a machine owner that holds no state here (its store was never created);
   * `missing` — a registered Goal's own store is not there (held); `unreadable` — its owner could not capture it (held).
   */
  readonly state: 'captured' | 'absent' | 'missing' | 'unreadable';
  /** The export's format (decoder boundary). */
  readonly schema_version: string | null;
  readonly producer_version: string;
  /** The achieved profile (equal to achieved_profile). */
  readonly capture_profile: CaptureProfile;
  readonly requested_profile: CaptureProfile;
  readonly achieved_profile: CaptureProfile;
  readonly source_identity: string | null;
  readonly source_revision: string | null;
  readonly cursor: number | null;
  /** SHA-256 of the export's seal, which chains every record. */
  readonly content_digest: string | null;
  readonly record_count: number | null;
  readonly dependency_ids: readonly string[];
  readonly verification_profile: string;
  /** The live owner before and after its own capture. */
  readonly capture_interval: { readonly start: PointRecord | null; readonly end: PointRecord | null };
  /** Operations begun and unsettled in the captured state (the effect owner's dispatched effects). */
  readonly in_flight: number;
  readonly skew: ComponentSkew;
  readonly downgrades: readonly DowngradeCode[];
}

/** How far a component moved: during its own capture, and from its capture to the set's end re-check. */
export interface ComponentSkew {
  readonly moved_during_capture: boolean;
  readonly moved_before_set_end: boolean;
  readonly set_end: PointRecord | null;
  /** set_end.cursor − captured cursor, where both have cursors. */
  readonly cursor_delta: number | null;
}

export interface GoalClosure {
  /** Private. */
  readonly goal_id: string;
  readonly logical_scope: string;
  /** Every component the Goal's recovery requires (its own and the machine owners'), dependencies included. */
  readonly required_component_ids: readonly string[];
}

export interface RecoverySetCapture {
  /** The achieved profile (the field v0 readers know as `profile`). */
  readonly profile: CaptureProfile;
  readonly requested_profile: CaptureProfile;
  readonly achieved_profile: CaptureProfile;
  readonly cross_owner_point_in_time: boolean;
  readonly sqlite: 'owner_capture_online_snapshot';
  readonly files: 'owner_capture_with_traversal_remainder';
  readonly interval: { readonly start: string; readonly end: string };
  /** Quiescent: the epoch admission was closed under, and whether every writer drained. */
  readonly quiescence: { readonly epoch: string; readonly drained: boolean; readonly waited_ms: number } | null;
  /** Crash-consistent: the one failure observation the components were captured from. */
  readonly failure_observation: FailureObservation | null;
  /**
   * The database service the root's Goal state lives in, when it is one: a reference to it (the
   * provider, schema, server identity and the one snapshot every served component was read in) —
   * never its URL or a credential. Absent for a root on SQLite.
   */
  readonly service?: ServiceReference;
  /**
   * The services Goals' work was read from apart from the root's store (`goal create
   * --work-provider postgresql`): one reference — and one snapshot — per schema, with the Goals
   * read in it. Absent when no Goal keeps its work in a schema other than the root's.
   */
  readonly goal_services?: readonly (ServiceReference & { readonly goal_ids: readonly string[] })[];
  /** Every component, moved or not (the complete skew inventory). */
  readonly skew_inventory: readonly {
    readonly component_id: string;
    readonly moved: boolean;
    readonly cursor_delta: number | null;
  }[];
  readonly downgrades: readonly DowngradeFinding[];
}

export interface FailureObservation {
  readonly observed_at: string;
  /** What proved the source stopped. */
  readonly proof: { readonly root_locks_free: number; readonly other_processes_with_open_files: 0 };
  /**
   * The exact durable bytes observed (databases with their journals), root-relative, each archived
   * as it was under an opaque name (`failure-observation/<n>.bin`: a journal never sits beside its
   * database in the archive), so the verifier can replay each owner's crash recovery from them.
   */
  readonly files: readonly {
    readonly path: string;
    readonly size_bytes: number;
    readonly sha256: string;
    readonly archive_member: string;
  }[];
  /** Per component, the observed files its owner's state is (root-relative). */
  readonly component_files: Readonly<Record<string, readonly string[]>>;
}

export interface ArchiveFacts {
  readonly sha256: string;
  readonly size_bytes: number;
  readonly expanded_bytes: number;
  readonly embedded_manifest: { readonly archive_path: string; readonly sha256: string; readonly size_bytes: number };
}

export const producerVersion = (): string => LOOPX_VERSION;

/** The external manifest: the embedded payload plus the archive facts. */
export function withArchiveFacts(embedded: BackupManifest, facts: ArchiveFacts): BackupManifest {
  const logical = embedded.summary.logical_source_bytes;
  return {
    ...embedded,
    execution: {
      ...embedded.execution,
      archive_sha256: facts.sha256,
      archive_size_bytes: facts.size_bytes,
      archive_expanded_bytes: facts.expanded_bytes,
      archive_to_logical_ratio: logical > 0 ? Math.round((facts.size_bytes / logical) * 1e6) / 1e6 : null,
      embedded_manifest: facts.embedded_manifest,
    },
  };
}

/** The serialized form of both copies: two-space JSON and a final newline. */
export const manifestBytes = (m: BackupManifest): Uint8Array =>
  new TextEncoder().encode(`${JSON.stringify(m, null, 2)}\n`);
