/**
 * Public API of backup: `loopx backup-state` plan/create, the producer of `loopx_state_backup_v1`
 * archives (components captured through their owners, declared capture profiles) and, on request,
 * of the legacy `loopx_state_backup_v0`.
 *
 *   plan(root, options)   discover, freeze routes, retain the owner sources' exact reads; writes nothing
 *   describePlan(plan)    the plan's public view (counts, relative paths, no absolute path)
 *   create(plan, options) capture, verify, publish `<id>.tar.gz` + `<id>.manifest.json` without overwriting
 */
export {
  plan,
  describePlan,
  planCapacityRefusals,
  defaultBackupId,
  archiveNameOf,
  manifestNameOf,
  BACKUP_ID,
} from './plan.js';
export type { BackupPlan, PlanOptions, PlannedGoal, PlanSummary, RouteStatus, CapacityRefusal } from './plan.js';
export { create } from './create.js';
export type { BackupProgress, BackupResult, CaptureStep, CreateHooks, CreateOptions } from './create.js';
export { BACKUP_SCHEMA, BACKUP_SCHEMA_V1, CAPTURE_FACTS } from './manifest.js';
export type {
  BackupFormat,
  BackupManifest,
  ComponentSkew,
  DowngradeFinding,
  FileMemberRecord,
  GoalClosure,
  ManifestComponent,
  ManifestMember,
  MemberOrigin,
  RecoverySetCapture,
  SourceWitness,
  SqliteSnapshotRecord,
} from './manifest.js';
export {
  CAPTURE_PROFILES,
  DOWNGRADE_CODES,
  DOWNGRADE_NEXT,
  parseProfile,
  weakestProfile,
  type CaptureProfile,
  type DowngradeCode,
} from './profiles.js';
export { ARCHIVE_EXPORTS } from './components.js';
export { ARCHIVE_OBSERVATION, BACKUP_CAPTURE_FAULT, proveStopped } from './set-capture.js';
export { WITNESSED_SOURCES } from './sources.js';
export { ownerBackupSources } from './owner-sources.js';
export type {
  BackupSources,
  ConfigurationCheckpointVerification,
  ExactAbsence,
  ExactMachineConfigurationRead,
  ExactRegistryRead,
  MachineConfigurationRead,
  RegistryGoalRoute,
  RegistryRead,
  RegistryValue,
} from './sources.js';
export { BACKUP_ERRORS, formatProfileConflict } from './errors.js';
export { BACKUP_LIMITS, CAPACITY_CODES, type BackupLimitName } from './limits.js';
export { BACKUP_FAULT_POINTS } from './publish.js';
export {
  ARCHIVE_ROOT,
  ARCHIVE_CONFIGURATION_BACKUP,
  ARCHIVE_MANIFEST,
  SQLITE_SIDECAR_SUFFIXES,
  foldPath,
  sqliteSidecarBase,
} from './paths.js';
export type { BackupWarning, ExcludedEntry, MemberCategory, MissingEntry, PlannedMember } from './discover.js';
