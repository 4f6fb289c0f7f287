/**
 * The capacity bounds of RFC complete-state-recovery §12 ("M1 capacity-default decision") that the
 * producer enforces before publication. Exceeding any of them refuses the whole backup with the
 * code named here; nothing is truncated (in particular, history never is).
 */

const MiB = 1024 * 1024;

export const BACKUP_LIMITS = {
  /** Compressed archive (the .tar.gz). */
  archiveBytes: 128 * MiB,
  /** The uncompressed tar stream (headers, data, padding). */
  expandedBytes: 512 * MiB,
  /** Sum of the regular-file bytes the archive carries. */
  regularFileBytes: 512 * MiB,
  /** Expanded tar bytes per archive byte. */
  expansionRatio: 2_000,
  /** Tar members (directories and files, the embedded manifest and configuration checkpoint included). */
  members: 20_000,
  pathComponents: 64,
  /** Unicode code points of a whole archive path. */
  pathChars: 1_024,
  pathComponentBytes: 255,
  goals: 128,
  sqliteFiles: 128,
  /** Rows of the `commits` table of one Goal's work.db. */
  goalCommittedTransactions: 20_000,
  /** External and embedded manifest, each. */
  manifestBytes: 16 * MiB,
} as const;

export type BackupLimitName = keyof typeof BACKUP_LIMITS;

/** The typed refusal code of each limit. */
export const CAPACITY_CODES = {
  archiveBytes: 'backup_capacity_archive_bytes',
  expandedBytes: 'backup_capacity_expanded_bytes',
  regularFileBytes: 'backup_capacity_regular_file_bytes',
  expansionRatio: 'backup_capacity_expansion_ratio',
  members: 'backup_capacity_members',
  pathComponents: 'backup_capacity_path_components',
  pathChars: 'backup_capacity_path_chars',
  pathComponentBytes: 'backup_capacity_path_component_bytes',
  goals: 'backup_capacity_goals',
  sqliteFiles: 'backup_capacity_sqlite_files',
  goalCommittedTransactions: 'backup_capacity_goal_history',
  manifestBytes: 'backup_capacity_manifest_bytes',
} as const satisfies Readonly<Record<BackupLimitName, string>>;

/** Limits as the manifest records them (snake_case, the values in force for this producer). */
export const limitsRecord = (): Record<string, number> => ({
  archive_bytes: BACKUP_LIMITS.archiveBytes,
  expanded_bytes: BACKUP_LIMITS.expandedBytes,
  regular_file_bytes: BACKUP_LIMITS.regularFileBytes,
  expansion_ratio: BACKUP_LIMITS.expansionRatio,
  members: BACKUP_LIMITS.members,
  path_components: BACKUP_LIMITS.pathComponents,
  path_chars: BACKUP_LIMITS.pathChars,
  path_component_bytes: BACKUP_LIMITS.pathComponentBytes,
  goals: BACKUP_LIMITS.goals,
  sqlite_files: BACKUP_LIMITS.sqliteFiles,
  goal_committed_transactions: BACKUP_LIMITS.goalCommittedTransactions,
  manifest_bytes: BACKUP_LIMITS.manifestBytes,
});
