/**
 * What the backup producer needs from the owners it does not own: the registry's and the machine
 * configuration's exact reads, and the configuration checkpoint built from them. This file is the
 * contract; `ownerBackupSources` (owner-sources.ts) implements it with the registry and config
 * owners, which alone decide those formats.
 *
 * Contract (failure modes):
 * - An exact read reads the source's bytes ONCE and decodes exactly those bytes; it never reads the
 *   file again. The producer compares the archive's copied bytes with `bytes`, so a read that
 *   re-reads would let A→B→A through.
 * - `{absent: true}` means an owner-confirmed absence (the file does not exist). A source that
 *   exists but is not a regular file (a symlink, a directory, a special file), cannot be read, or
 *   does not decode is NOT absent: the read throws `backup_source_unusable`.
 * - `revision` is `sha256:` + the SHA-256 of the canonical JSON (RFC 8785) of the decoded value.
 * - `buildConfigurationCheckpoint` is a pure function of the two reads (no I/O) and returns the
 *   bytes of `configuration-backup.json`; `verifyConfigurationCheckpoint` never throws — problems
 *   are reported as `ok: false`.
 */
import { LAYOUT } from '../owners/index.js';

export interface ConfigurationCheckpointVerification {
  readonly ok: boolean;
  /** The checkpoint's recomputed digest. */
  readonly sha256: string;
  readonly goal_count: number;
  readonly machine_configuration_present: boolean;
  readonly privacy_certified: false;
  readonly activation_performed: false;
  readonly readback_verified: boolean;
  /** Finding codes when not ok (empty when ok). */
  readonly problems: readonly string[];
}

/** One Goal row of the registry, as the producer needs it. `route` is the Goal's directory, relative to the root. */
export interface RegistryGoalRoute {
  readonly goal_id: string;
  readonly goal_instance_id?: string;
  readonly route: string;
}

export interface RegistryValue {
  readonly goals: readonly RegistryGoalRoute[];
  readonly projects: readonly unknown[];
}

export interface ExactAbsence {
  readonly absent: true;
}

export interface ExactRegistryRead {
  readonly absent?: false;
  readonly bytes: Uint8Array;
  readonly revision: string;
  readonly value: RegistryValue;
}

export interface ExactMachineConfigurationRead {
  readonly absent?: false;
  readonly bytes: Uint8Array;
  readonly revision: string;
}

export type RegistryRead = ExactRegistryRead | ExactAbsence;
export type MachineConfigurationRead = ExactMachineConfigurationRead | ExactAbsence;

export interface BackupSources {
  readRegistryExact(): RegistryRead;
  readMachineConfigurationExact(): MachineConfigurationRead;
  buildConfigurationCheckpoint(registry: RegistryRead, machine: MachineConfigurationRead): Uint8Array;
  verifyConfigurationCheckpoint(bytes: Uint8Array): ConfigurationCheckpointVerification;
}

/** The root-relative files whose exact reads the producer witnesses (fixed by LAYOUT). */
export const WITNESSED_SOURCES = {
  registry: LAYOUT.registry.split('\\').join('/'),
  machineConfiguration: LAYOUT.machineConfiguration.split('\\').join('/'),
} as const;
