/**
 * The typed refusals of backup-state plan/create. Every code is stable; callers branch on it.
 * Details carry only relative paths, counts and limits — never absolute paths or payloads.
 */
import { LoopxError, conflict, notFound, rejected, usageError } from '../core/index.js';
import { BACKUP_LIMITS, CAPACITY_CODES, type BackupLimitName } from './limits.js';

export const BACKUP_ERRORS = {
  rootMissing: 'backup_root_missing',
  rootInvalid: 'backup_root_invalid',
  backupIdInvalid: 'backup_id_invalid',
  outputDirInvalid: 'backup_output_dir_invalid',
  /** An owner-decoded source (registry, machine configuration) is not a readable regular file of its format. */
  sourceUnusable: 'backup_source_unusable',
  /** The bytes of an owner-decoded source differ from the plan's exact read (A→B, A→B→A). */
  sourceChanged: 'backup_source_changed',
  /** A source the plan read as absent exists. */
  sourceAppeared: 'backup_source_appeared',
  /** A source the plan read is gone. */
  sourceRemoved: 'backup_source_removed',
  /** The registry's Goals or routes differ from the plan's frozen routes. */
  routesChanged: 'backup_routes_changed',
  /** A regular file became shorter while it was copied. */
  memberTruncated: 'backup_member_truncated',
  sqliteSnapshotFailed: 'backup_sqlite_snapshot_failed',
  configurationCheckpointInvalid: 'backup_configuration_checkpoint_invalid',
  destinationOccupied: 'backup_destination_occupied',
  /** The output directory's file system filled (ENOSPC) or hit its quota (EDQUOT) while the backup was written. */
  outOfSpace: 'backup_capacity_free_space',
  /** Crash-consistent capture was asked for, but something still runs on the root. */
  crashSourceLive: 'backup_crash_source_live',
  /** Crash-consistent capture: the observed bytes changed while they were captured (the source was not stopped). */
  crashSourceMoved: 'backup_crash_source_moved',
  /** --require-profile: the set achieved less than the profile requested. */
  profileNotAchieved: 'backup_profile_not_achieved',
  /** A v0 backup declares no capture profile. */
  formatProfileConflict: 'backup_format_profile_conflict',
} as const;

const RETRY = 'run the same backup-state command again: it makes a fresh plan';

export const backupIdInvalid = (): LoopxError =>
  usageError(
    BACKUP_ERRORS.backupIdInvalid,
    'A backup id is 1–128 characters of A–Z, a–z, 0–9, ., _ and -, starting with a letter or digit.',
    'choose another --backup-id',
  );

export const rootMissing = (): LoopxError =>
  notFound(BACKUP_ERRORS.rootMissing, 'The runtime root does not exist.', {
    nextAction: 'check --root (or LOOPX_HOME)',
  });

export const rootInvalid = (): LoopxError =>
  rejected(BACKUP_ERRORS.rootInvalid, 'The runtime root is not a directory.', {
    nextAction: 'check --root (or LOOPX_HOME)',
  });

export const outputDirInvalid = (why: string): LoopxError =>
  rejected(BACKUP_ERRORS.outputDirInvalid, `The output directory cannot be used: ${why}.`, {
    nextAction: 'choose another --output-dir',
  });

export const sourceUnusable = (source: string, why: string, cause?: unknown): LoopxError =>
  rejected(BACKUP_ERRORS.sourceUnusable, `The owner source ${source} is unusable: ${why}.`, {
    nextAction: 'repair the source through its owner, then retry',
    details: { source },
    ...(cause !== undefined ? { cause } : {}),
  });

export const sourceChanged = (source: string, during: string): LoopxError =>
  rejected(BACKUP_ERRORS.sourceChanged, `The owner source ${source} changed ${during}; nothing was published.`, {
    nextAction: RETRY,
    details: { source },
  });

export const sourceAppeared = (source: string, during: string): LoopxError =>
  rejected(
    BACKUP_ERRORS.sourceAppeared,
    `The owner source ${source}, absent when planned, appeared ${during}; nothing was published.`,
    { nextAction: RETRY, details: { source } },
  );

export const sourceRemoved = (source: string, during: string): LoopxError =>
  rejected(BACKUP_ERRORS.sourceRemoved, `The owner source ${source} was removed ${during}; nothing was published.`, {
    nextAction: RETRY,
    details: { source },
  });

export const routesChanged = (changedGoals: number): LoopxError =>
  rejected(
    BACKUP_ERRORS.routesChanged,
    "The registry's Goals or routes changed after the plan froze them; nothing was published.",
    {
      nextAction: RETRY,
      details: { changed_goals: changedGoals },
    },
  );

export const memberTruncated = (archivePath: string): LoopxError =>
  rejected(
    BACKUP_ERRORS.memberTruncated,
    `A file became shorter while it was copied (${archivePath}); nothing was published.`,
    {
      nextAction: RETRY,
      details: { archive_path: archivePath },
    },
  );

export const sqliteSnapshotFailed = (source: string, cause: unknown): LoopxError =>
  rejected(
    BACKUP_ERRORS.sqliteSnapshotFailed,
    `The online snapshot of the SQLite database ${source} failed; nothing was published.`,
    {
      nextAction: 'check the database with its owner, then retry',
      details: { source, ...(cause instanceof LoopxError ? { reason: cause.code } : {}) },
      cause,
    },
  );

export const configurationCheckpointInvalid = (why: string): LoopxError =>
  rejected(
    BACKUP_ERRORS.configurationCheckpointInvalid,
    `The configuration checkpoint did not verify: ${why}; nothing was published.`,
    {
      nextAction: 'check the registry and machine configuration with their owners, then retry',
    },
  );

export const destinationOccupied = (names: readonly string[]): LoopxError =>
  conflict(
    BACKUP_ERRORS.destinationOccupied,
    "The backup's archive or manifest name is already taken in the output directory; loopx never replaces or deletes it.",
    {
      nextAction: 'choose a new --backup-id or --output-dir',
      details: { occupied: [...names] },
    },
  );

/** A §12 capacity refusal: the code names the limit; details carry the limit and what was observed. */
export const capacityExceeded = (limit: BackupLimitName, observed: number, subject?: string): LoopxError =>
  rejected(
    CAPACITY_CODES[limit],
    `The backup exceeds the ${limit} limit (${observed} > ${BACKUP_LIMITS[limit]}); nothing was published and nothing was truncated.`,
    {
      nextAction: 'reduce the state with its owners (or split it), then retry',
      details: { limit: BACKUP_LIMITS[limit], observed, ...(subject !== undefined ? { subject } : {}) },
    },
  );

export const outOfSpace = (): LoopxError =>
  rejected(
    BACKUP_ERRORS.outOfSpace,
    'The output directory ran out of space while the backup was written; nothing was published.',
    {
      nextAction:
        "free space on the output directory's file system (or choose another output directory), then run the same backup-state command again",
    },
  );

export const crashSourceLive = (why: string): LoopxError =>
  conflict(
    BACKUP_ERRORS.crashSourceLive,
    `A crash-consistent backup needs a stopped source, but ${why}; nothing was captured.`,
    {
      nextAction:
        'stop every loopx process using this root (the daemon included), then run the same backup-state command again',
    },
  );

export const crashSourceMoved = (): LoopxError =>
  conflict(
    BACKUP_ERRORS.crashSourceMoved,
    'The root changed while its crash-consistent observation was captured: it was not stopped; nothing was published.',
    {
      nextAction:
        'stop every loopx process using this root (the daemon included), then run the same backup-state command again',
    },
  );

export const profileNotAchieved = (requested: string, achieved: string, codes: readonly string[]): LoopxError =>
  rejected(
    BACKUP_ERRORS.profileNotAchieved,
    `The backup achieved the ${achieved} profile, not the ${requested} one required; nothing was published.`,
    {
      nextAction: 'clear what the downgrade codes name, then run the same backup-state command again',
      details: { requested, achieved, codes: [...new Set(codes)].sort() },
    },
  );

export const formatProfileConflict = (): LoopxError =>
  usageError(
    BACKUP_ERRORS.formatProfileConflict,
    'A v0 backup declares no capture profile; --profile and --require-profile need the default format.',
    'drop --format v0',
  );
