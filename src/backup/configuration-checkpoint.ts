/**
 * The configuration checkpoint envelope `loopx_configuration_backup_v0` (configuration-backup.json)
 * built from the plan's exact registry and machine-configuration reads, and its verifier. The
 * envelope is inert data: it selects, registers and activates nothing. Its `sha256` is the SHA-256
 * of the canonical JSON (RFC 8785) of the envelope without that field.
 */
import { canonicalJson } from '../core/canonical-json.js';
import { sha256Hex } from '../core/digest.js';

export const CONFIGURATION_BACKUP_SCHEMA = 'loopx_configuration_backup_v0';

export interface ConfigurationCheckpointVerification {
  readonly ok: boolean;
  /** The envelope's digest (recomputed; equal to its `sha256` field when ok). */
  readonly sha256: string;
  readonly goal_count: number;
  readonly machine_configuration_present: boolean;
  readonly privacy_certified: false;
  readonly activation_performed: false;
  /** The bytes were decoded back and re-encoded to the same canonical form. */
  readonly readback_verified: boolean;
  /** Why it is not ok (empty when ok). */
  readonly problems: readonly string[];
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Canonical bytes of the envelope over a machine configuration (or null) and complete registry Goal rows. */
export function buildConfigurationBackup(machineConfiguration: Json | null, goalRows: ReadonlyArray<{ goal_id: string; row: Json }>): Uint8Array {
  const body = {
    schema_version: CONFIGURATION_BACKUP_SCHEMA,
    privacy_certified: false,
    activation_performed: false,
    data: {
      machine_configuration: machineConfiguration,
      goals: goalRows.map((g) => ({ goal_id: g.goal_id, goal_configuration: g.row })),
    },
  };
  const sha256 = sha256Hex(canonicalJson(body));
  return new TextEncoder().encode(canonicalJson({ ...body, sha256 }));
}

export function verifyConfigurationBackup(bytes: Uint8Array): ConfigurationCheckpointVerification {
  const problems: string[] = [];
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return { ok: false, sha256: sha256Hex(bytes), goal_count: 0, machine_configuration_present: false, privacy_certified: false, activation_performed: false, readback_verified: false, problems: ['not_json'] };
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(doc)) problems.push('not_an_object');
  const d = isObject(doc) ? doc : {};
  const known = new Set(['schema_version', 'privacy_certified', 'activation_performed', 'data', 'sha256']);
  for (const k of Object.keys(d)) if (!known.has(k)) problems.push(`unknown_field:${k}`);
  if (d.schema_version !== CONFIGURATION_BACKUP_SCHEMA) problems.push('schema_version');
  if (d.privacy_certified !== false) problems.push('privacy_certified');
  if (d.activation_performed !== false) problems.push('activation_performed');
  const data = isObject(d.data) ? d.data : undefined;
  if (!data) problems.push('data');
  const goals = data && Array.isArray(data.goals) ? data.goals : undefined;
  if (!goals) problems.push('data.goals');
  const ids = new Set<string>();
  for (const g of goals ?? []) {
    if (!isObject(g) || typeof g.goal_id !== 'string' || !isObject(g.goal_configuration)) {
      problems.push('data.goals.row');
      continue;
    }
    if (ids.has(g.goal_id)) problems.push('data.goals.duplicate');
    ids.add(g.goal_id);
  }
  const machinePresent = data !== undefined && data.machine_configuration !== null && data.machine_configuration !== undefined;
  if (data && machinePresent && !isObject(data.machine_configuration)) problems.push('data.machine_configuration');
  const { sha256: claimed, ...body } = d;
  let recomputed = sha256Hex(bytes);
  let readback = false;
  try {
    recomputed = sha256Hex(canonicalJson(body));
    // Canonical JSON, optionally followed by one newline (the config owner writes one).
    const text = new TextDecoder().decode(bytes);
    readback = canonicalJson(d) === (text.endsWith('\n') ? text.slice(0, -1) : text);
  } catch {
    problems.push('not_canonical_json');
  }
  if (claimed !== recomputed) problems.push('sha256');
  if (!readback) problems.push('readback');
  return {
    ok: problems.length === 0,
    sha256: recomputed,
    goal_count: goals?.length ?? 0,
    machine_configuration_present: machinePresent,
    privacy_certified: false,
    activation_performed: false,
    readback_verified: readback,
    problems,
  };
}
