/**
 * The configuration checkpoint envelope `loopx_configuration_backup_v0`
 * (`configuration-backup.json`). Built only from exact reads — the bytes an owner decoded — so
 * the checkpoint can never describe a different version than the raw copy beside it; it never
 * reads a live path. Inert: it carries no authority and claims neither privacy nor activation.
 */
import { canonicalJson, sha256Hex, internal, isLoopxError, rejected } from '../../core/index.js';
import { decodeRegistry, registryRevision, validateRegistryGoal, type RegistryExactRead } from '../registry/index.js';
import {
  configRevision,
  decodeMachineConfiguration,
  isPlainObject,
  parseJsonBytes,
  validateMachineConfiguration,
} from './codec.js';
import {
  CHECKPOINT_SCHEMA,
  type BuiltCheckpoint,
  type CheckpointFinding,
  type CheckpointFindingCode,
  type CheckpointVerification,
  type ConfigExactRead,
  type ConfigurationCheckpoint,
  type MachineConfiguration,
} from './contract.js';

export const CHECKPOINT_MAX_BYTES = 16 * 1024 * 1024;

const sourceMismatch = (what: string) =>
  rejected(
    'checkpoint_source_mismatch',
    `The ${what} read given to the checkpoint is not an exact read: its bytes do not decode to its value.`,
    {
      nextAction: 'take a fresh exact read from the owner and build the checkpoint from it',
    },
  );

const sameJson = (a: unknown, b: unknown): boolean => canonicalJson(a) === canonicalJson(b);

/** Re-decode the witness bytes and insist they are what the read claims. */
function machineFromRead(read: ConfigExactRead): MachineConfiguration | null {
  if (read.absent) {
    if (read.bytes !== null || read.value !== null || read.revision !== 'absent')
      throw sourceMismatch('machine configuration');
    return null;
  }
  let decoded: MachineConfiguration;
  try {
    decoded = decodeMachineConfiguration(read.bytes);
  } catch {
    throw sourceMismatch('machine configuration');
  }
  if (!sameJson(decoded, read.value) || configRevision(decoded) !== read.revision)
    throw sourceMismatch('machine configuration');
  return decoded;
}

function registryFromRead(read: RegistryExactRead) {
  if (read.absent) {
    if (read.bytes !== null || read.revision !== 'absent') throw sourceMismatch('registry');
    return [];
  }
  let decoded;
  try {
    decoded = decodeRegistry(read.bytes);
  } catch {
    throw sourceMismatch('registry');
  }
  if (!sameJson(decoded, read.value) || registryRevision(read.bytes) !== read.revision)
    throw sourceMismatch('registry');
  return decoded.goals;
}

export interface CheckpointSources {
  readonly machineConfiguration: ConfigExactRead;
  readonly registry: RegistryExactRead;
}

export function buildConfigurationCheckpoint(sources: CheckpointSources): BuiltCheckpoint {
  const machine = machineFromRead(sources.machineConfiguration);
  const goals = [...registryFromRead(sources.registry)]
    .sort((a, b) => (a.goal_id < b.goal_id ? -1 : a.goal_id > b.goal_id ? 1 : 0))
    .map((row) => ({ goal_id: row.goal_id, goal_configuration: row }));
  const body = {
    schema_version: CHECKPOINT_SCHEMA,
    privacy_certified: false,
    activation_performed: false,
    data: { machine_configuration: machine, goals },
  } as const;
  const checkpoint: ConfigurationCheckpoint = { ...body, sha256: sha256Hex(canonicalJson(body)) };
  const bytes = new TextEncoder().encode(`${canonicalJson(checkpoint)}\n`);
  const verification = verifyConfigurationCheckpoint(bytes);
  if (!verification.ok || verification.sha256 !== checkpoint.sha256) {
    throw internal('checkpoint_readback_failed', 'The configuration checkpoint did not verify after encoding.', {
      nextAction: 'report this as a loopx bug',
    });
  }
  return { bytes, sha256: checkpoint.sha256, checkpoint, verification };
}

const NEXT: Record<CheckpointFindingCode, string> = {
  checkpoint_too_large: 'use a checkpoint produced by loopx (at most 16 MiB)',
  checkpoint_not_json: 'use an intact copy of the backup',
  checkpoint_unknown_schema: 'verify with a loopx version that knows this checkpoint schema',
  checkpoint_unknown_field: 'verify with a loopx version that knows these fields, or use an intact copy',
  checkpoint_malformed: 'use an intact copy of the backup',
  checkpoint_digest_mismatch: 'the checkpoint was altered; use an intact copy of the backup',
  checkpoint_privacy_certified_invalid:
    'the checkpoint claims a privacy certification loopx never grants; use an intact copy',
  checkpoint_activation_performed_invalid:
    'the checkpoint claims an activation loopx never performs; use an intact copy',
};

const subjectKey = (k: string): string => (/^[a-z_][a-z0-9_]{0,63}$/.test(k) ? k : '<unrecognized>');

type AddFinding = (code: CheckpointFindingCode, subject: string) => void;

/** `$.data.machine_configuration`: present, and null or a valid machine configuration. Returns whether one is present. */
function checkMachineConfiguration(data: Record<string, unknown>, add: AddFinding): boolean {
  const mc = data.machine_configuration;
  if (!('machine_configuration' in data)) {
    add('checkpoint_malformed', '$.data.machine_configuration');
    return false;
  }
  if (mc === null) return false;
  try {
    validateMachineConfiguration(mc);
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    add(
      e.code === 'config_unknown_schema' ? 'checkpoint_unknown_field' : 'checkpoint_malformed',
      '$.data.machine_configuration',
    );
  }
  return true;
}

/** `$.data.goals`: each a known-shaped, valid registry Goal whose id is its configuration's and unique. Returns how many there are. */
function checkGoals(goals: unknown, add: AddFinding): number {
  if (!Array.isArray(goals)) {
    add('checkpoint_malformed', '$.data.goals');
    return 0;
  }
  const seen = new Set<string>();
  goals.forEach((g: unknown, i) => {
    const at = `$.data.goals[${i}]`;
    if (!isPlainObject(g)) return add('checkpoint_malformed', at);
    for (const k of Object.keys(g))
      if (k !== 'goal_id' && k !== 'goal_configuration') add('checkpoint_unknown_field', `${at}.${subjectKey(k)}`);
    try {
      const row = validateRegistryGoal(g.goal_configuration);
      if (g.goal_id !== row.goal_id || seen.has(row.goal_id)) add('checkpoint_malformed', `${at}.goal_id`);
      seen.add(row.goal_id);
    } catch (e) {
      if (!isLoopxError(e)) throw e;
      add(
        e.code === 'registry_unknown_schema' ? 'checkpoint_unknown_field' : 'checkpoint_malformed',
        `${at}.goal_configuration`,
      );
    }
  });
  return goals.length;
}

/** `$.data`: only known fields, its machine configuration and its Goals. */
function checkData(data: unknown, add: AddFinding): { goalCount: number; machinePresent: boolean } {
  if (!isPlainObject(data)) {
    add('checkpoint_malformed', '$.data');
    return { goalCount: 0, machinePresent: false };
  }
  for (const k of Object.keys(data))
    if (k !== 'machine_configuration' && k !== 'goals') add('checkpoint_unknown_field', `$.data.${subjectKey(k)}`);
  const machinePresent = checkMachineConfiguration(data, add);
  const goalCount = checkGoals(data.goals, add);
  return { goalCount, machinePresent };
}

/** Verify checkpoint bytes; every finding is collected (none stops another unless nothing can be read). */
export function verifyConfigurationCheckpoint(bytes: Uint8Array): CheckpointVerification {
  const findings: CheckpointFinding[] = [];
  const add: AddFinding = (code, subject) => {
    findings.push({ code, severity: 'error', subject, next_action: NEXT[code] });
  };
  const result = (extra: Partial<CheckpointVerification> = {}): CheckpointVerification => ({
    sha256: null,
    goal_count: 0,
    machine_configuration_present: false,
    privacy_certified: false,
    activation_performed: false,
    readback_verified: false,
    ...extra,
    ok: findings.length === 0,
    findings,
  });

  if (bytes.byteLength > CHECKPOINT_MAX_BYTES) {
    add('checkpoint_too_large', '$');
    return result();
  }
  let doc: unknown;
  try {
    doc = parseJsonBytes(bytes);
  } catch {
    add('checkpoint_not_json', '$');
    return result();
  }
  if (!isPlainObject(doc)) {
    add('checkpoint_malformed', '$');
    return result();
  }
  if (doc.schema_version !== CHECKPOINT_SCHEMA) {
    add('checkpoint_unknown_schema', '$.schema_version');
    return result();
  }
  const top = ['schema_version', 'privacy_certified', 'activation_performed', 'data', 'sha256'];
  for (const k of Object.keys(doc)) if (!top.includes(k)) add('checkpoint_unknown_field', `$.${subjectKey(k)}`);
  if (doc.privacy_certified !== false) add('checkpoint_privacy_certified_invalid', '$.privacy_certified');
  if (doc.activation_performed !== false) add('checkpoint_activation_performed_invalid', '$.activation_performed');

  const { goalCount, machinePresent } = checkData(doc.data, add);

  const stated = doc.sha256;
  if (typeof stated !== 'string' || !/^[0-9a-f]{64}$/.test(stated)) add('checkpoint_malformed', '$.sha256');
  let recomputed: string | null = null;
  try {
    const { sha256: _omit, ...rest } = doc;
    recomputed = sha256Hex(canonicalJson(rest));
  } catch {
    add('checkpoint_malformed', '$');
  }
  if (recomputed !== null && typeof stated === 'string' && /^[0-9a-f]{64}$/.test(stated) && stated !== recomputed)
    add('checkpoint_digest_mismatch', '$.sha256');

  return result({
    sha256: recomputed,
    goal_count: goalCount,
    machine_configuration_present: machinePresent,
    privacy_certified: doc.privacy_certified === true,
    activation_performed: doc.activation_performed === true,
    readback_verified: recomputed !== null && stated === recomputed,
  });
}
