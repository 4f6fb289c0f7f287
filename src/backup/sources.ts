/**
 * What the backup producer needs from the owners it does not own: the registry's and the machine
 * configuration's exact reads, and the configuration checkpoint built from them. This file is the
 * contract and a default file-based implementation over a runtime root's `registry.json` and
 * `machine/configuration.json` (LAYOUT); the real registry and config owners implement the same
 * interface.
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
import { closeSync, fstatSync, lstatSync, openSync, readSync, constants } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../core/canonical-json.js';
import { sha256Hex } from '../core/digest.js';
import { GOAL_ID, LAYOUT } from '../owners/index.js';
import { buildConfigurationBackup, verifyConfigurationBackup, type ConfigurationCheckpointVerification } from './configuration-checkpoint.js';
import { sourceUnusable } from './errors.js';

export type { ConfigurationCheckpointVerification } from './configuration-checkpoint.js';

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

const MAX_SOURCE_BYTES = 16 * 1024 * 1024;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const isObject = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Read a regular file's bytes once, without following a symlink; `undefined` when it does not exist. */
function readExactBytes(root: string, relative: string): Uint8Array | undefined {
  const parts = relative.split('/');
  // Intermediate directories must be real directories: a symlinked parent would read state from outside the root.
  for (let i = 1; i < parts.length; i++) {
    const parent = join(root, ...parts.slice(0, i));
    let st;
    try {
      st = lstatSync(parent);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw sourceUnusable(relative, 'its directory cannot be read', e);
    }
    if (!st.isDirectory()) throw sourceUnusable(relative, 'its directory is not a plain directory');
  }
  let fd: number;
  try {
    fd = openSync(join(root, relative), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw sourceUnusable(relative, 'it is a symbolic link');
    throw sourceUnusable(relative, 'it cannot be opened', e);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw sourceUnusable(relative, 'it is not a regular file');
    if (st.size > MAX_SOURCE_BYTES) throw sourceUnusable(relative, 'it is larger than 16 MiB');
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(64 * 1024);
      const n = readSync(fd, buf, 0, buf.byteLength, null);
      if (n === 0) break;
      total += n;
      if (total > MAX_SOURCE_BYTES) throw sourceUnusable(relative, 'it is larger than 16 MiB');
      chunks.push(buf.subarray(0, n));
    }
    return new Uint8Array(Buffer.concat(chunks, total));
  } finally {
    closeSync(fd);
  }
}

function decodeJson(relative: string, bytes: Uint8Array): Json {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Json;
  } catch (e) {
    throw sourceUnusable(relative, 'it is not UTF-8 JSON', e);
  }
}

const revisionOf = (relative: string, value: Json): string => {
  try {
    return `sha256:${sha256Hex(canonicalJson(value))}`;
  } catch (e) {
    throw sourceUnusable(relative, 'it has no canonical JSON form', e);
  }
};

/** Decode registry bytes into the complete Goal rows and the producer's view of them. */
function decodeRegistry(bytes: Uint8Array): { value: RegistryValue; rows: Array<{ goal_id: string; row: Json }>; json: Json } {
  const rel = WITNESSED_SOURCES.registry;
  const json = decodeJson(rel, bytes);
  if (!isObject(json)) throw sourceUnusable(rel, 'it is not a JSON object');
  if (!Array.isArray(json.goals)) throw sourceUnusable(rel, 'it has no goals array');
  if (json.projects !== undefined && !Array.isArray(json.projects)) throw sourceUnusable(rel, 'its projects field is not an array');
  const goals: RegistryGoalRoute[] = [];
  const rows: Array<{ goal_id: string; row: Json }> = [];
  const seen = new Set<string>();
  for (const row of json.goals) {
    if (!isObject(row)) throw sourceUnusable(rel, 'a Goal row is not an object');
    const { goal_id: id, goal_instance_id: instance, route } = row;
    if (typeof id !== 'string' || !GOAL_ID.test(id) || id.includes('..')) throw sourceUnusable(rel, 'a Goal row has no valid goal_id');
    if (seen.has(id)) throw sourceUnusable(rel, `Goal ${id} is registered twice`);
    seen.add(id);
    if (instance !== undefined && typeof instance !== 'string') throw sourceUnusable(rel, `Goal ${id} has an invalid goal_instance_id`);
    if (typeof route !== 'string' || route.length === 0) throw sourceUnusable(rel, `Goal ${id} has no route`);
    goals.push({ goal_id: id, ...(instance !== undefined ? { goal_instance_id: instance } : {}), route });
    rows.push({ goal_id: id, row });
  }
  return { value: { goals, projects: (json.projects as Json[] | undefined) ?? [] }, rows, json };
}

function decodeMachineConfiguration(bytes: Uint8Array): Json {
  const json = decodeJson(WITNESSED_SOURCES.machineConfiguration, bytes);
  if (!isObject(json)) throw sourceUnusable(WITNESSED_SOURCES.machineConfiguration, 'it is not a JSON object');
  return json;
}

/** The default sources: the root's registry.json and machine/configuration.json, read as files. */
export function fileBackupSources(root: string): BackupSources {
  return {
    readRegistryExact(): RegistryRead {
      const bytes = readExactBytes(root, WITNESSED_SOURCES.registry);
      if (bytes === undefined) return { absent: true };
      const { value, json } = decodeRegistry(bytes);
      return { bytes, revision: revisionOf(WITNESSED_SOURCES.registry, json), value };
    },
    readMachineConfigurationExact(): MachineConfigurationRead {
      const bytes = readExactBytes(root, WITNESSED_SOURCES.machineConfiguration);
      if (bytes === undefined) return { absent: true };
      return { bytes, revision: revisionOf(WITNESSED_SOURCES.machineConfiguration, decodeMachineConfiguration(bytes)) };
    },
    buildConfigurationCheckpoint(registry: RegistryRead, machine: MachineConfigurationRead): Uint8Array {
      // Decoded from the retained bytes, never from the live files.
      const rows = registry.absent ? [] : decodeRegistry(registry.bytes).rows;
      const machineConfiguration = machine.absent ? null : decodeMachineConfiguration(machine.bytes);
      return buildConfigurationBackup(machineConfiguration, rows);
    },
    verifyConfigurationCheckpoint: verifyConfigurationBackup,
  };
}
