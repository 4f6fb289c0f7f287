/**
 * The one place the machine configuration, its transaction receipts and apply intents are
 * decoded, validated and encoded, and the pure apply both store implementations share.
 */
import {
  canonicalJson,
  sha256Hex,
  conflict,
  internal,
  isLoopxError,
  rejected,
  type LoopxError,
} from '../../core/index.js';
import {
  MACHINE_CONFIGURATION_SCHEMA,
  TRANSACTION_SCHEMA,
  type ConfigExactRead,
  type ConfigRead,
  type ConfigTransaction,
  type MachineConfiguration,
  type NamespaceValue,
  type TransactionReceipt,
} from './contract.js';

export const CONFIG_MAX_BYTES = 16 * 1024 * 1024;
export const NAMESPACE_ID = /^[a-z][a-z0-9_]{0,63}$/;
export const TRANSACTION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;
const INTENT_SCHEMA = 'machine_configuration_intent_v0';
const REVISION = /^(?:absent|sha256:[0-9a-f]{64})$/;

export const EMPTY_CONFIGURATION: MachineConfiguration = {
  schema_version: MACHINE_CONFIGURATION_SCHEMA,
  namespaces: {},
};

const unknownSchema = (what: string): LoopxError =>
  rejected('config_unknown_schema', `The machine configuration has an unknown ${what}; this loopx does not read it.`, {
    nextAction: 'upgrade loopx, or restore machine/configuration.json from a backup written by this version',
  });

const malformed = (what: string): LoopxError =>
  rejected('config_malformed', `The machine configuration is malformed: ${what}.`, {
    nextAction: 'restore machine/configuration.json from a backup',
  });

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseJsonBytes(bytes: Uint8Array): unknown {
  return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
}

const encodeJson = (value: unknown): Uint8Array => new TextEncoder().encode(`${canonicalJson(value)}\n`);

/** Why a namespace value is unacceptable, or undefined when it is fine. */
export function namespaceProblem(value: unknown): string | undefined {
  if (!isPlainObject(value)) return 'a namespace value is not an object';
  if (
    typeof value.schema_version !== 'string' ||
    value.schema_version.length === 0 ||
    value.schema_version.length > 128
  ) {
    return 'a namespace lacks a schema_version string';
  }
  try {
    canonicalJson(value);
  } catch {
    return 'a namespace value is not canonical JSON';
  }
  return undefined;
}

/** Validate a parsed configuration document; throws config_unknown_schema / config_malformed. */
export function validateMachineConfiguration(parsed: unknown): MachineConfiguration {
  if (!isPlainObject(parsed)) throw malformed('the document is not an object');
  if (parsed.schema_version !== MACHINE_CONFIGURATION_SCHEMA) throw unknownSchema('schema_version');
  for (const k of Object.keys(parsed)) if (k !== 'schema_version' && k !== 'namespaces') throw unknownSchema('field');
  if (!isPlainObject(parsed.namespaces)) throw malformed('namespaces is not an object');
  for (const [ns, value] of Object.entries(parsed.namespaces)) {
    if (!NAMESPACE_ID.test(ns)) throw malformed('a namespace id is not a lowercase identifier');
    const problem = namespaceProblem(value);
    if (problem) throw malformed(problem);
  }
  try {
    canonicalJson(parsed);
  } catch {
    throw malformed('the document has no canonical JSON form');
  }
  return parsed as unknown as MachineConfiguration;
}

export function decodeMachineConfiguration(bytes: Uint8Array): MachineConfiguration {
  let parsed: unknown;
  try {
    parsed = parseJsonBytes(bytes);
  } catch {
    throw malformed('not UTF-8 JSON');
  }
  return validateMachineConfiguration(parsed);
}

export const encodeMachineConfiguration = (value: MachineConfiguration): Uint8Array => encodeJson(value);

export const configRevision = (value: MachineConfiguration): string => `sha256:${sha256Hex(canonicalJson(value))}`;

/** The exact read of one byte snapshot (null = confirmed absence). The bytes are copied, never aliased. */
export function exactRead(bytes: Uint8Array | null): ConfigExactRead {
  if (bytes === null) return { absent: true, revision: 'absent', value: null, bytes: null };
  const own = new Uint8Array(bytes);
  const value = decodeMachineConfiguration(own);
  return { absent: false, revision: configRevision(value), value, bytes: own };
}

export const toRead = (r: ConfigExactRead): ConfigRead => ({
  value: r.value ?? structuredClone(EMPTY_CONFIGURATION),
  revision: r.revision,
  bytes: r.bytes,
});

export function checkRevision(current: string, expected: string): void {
  if (current !== expected) {
    throw conflict('config_revision_conflict', 'The machine configuration changed since it was read.', {
      nextAction: 'read the configuration again and retry against its current revision',
      details: { expected_revision: expected, current_revision: current },
    });
  }
}

/** Validate a transaction's shape and return its request digest (what identifies a replay). */
export function requestDigest(tx: ConfigTransaction): string {
  if (!isPlainObject(tx) || typeof tx.transactionId !== 'string' || !TRANSACTION_ID.test(tx.transactionId)) {
    throw rejected(
      'config_transaction_id_invalid',
      'A transaction id is 1–128 of A–Z, a–z, 0–9, _ and -, starting with a letter or digit.',
      {
        nextAction: 'choose another transaction id',
      },
    );
  }
  if (typeof tx.expectedRevision !== 'string' || !REVISION.test(tx.expectedRevision)) {
    throw rejected('config_revision_invalid', "An expected revision is 'absent' or 'sha256:<hex>'.", {
      nextAction: 'pass the revision a read returned',
    });
  }
  if (!isPlainObject(tx.changes)) throw namespaceInvalid('changes is not an object');
  for (const [ns, value] of Object.entries(tx.changes)) {
    if (!NAMESPACE_ID.test(ns))
      throw namespaceInvalid(`namespace id ${JSON.stringify(ns.slice(0, 64))} is not a lowercase identifier`);
    const problem = value === null ? undefined : namespaceProblem(value);
    if (problem) throw namespaceInvalid(problem);
  }
  return sha256Hex(canonicalJson({ expected_revision: tx.expectedRevision, changes: tx.changes }));
}

function namespaceInvalid(what: string): LoopxError {
  return rejected('config_namespace_invalid', `Invalid configuration change: ${what}.`, {
    nextAction: 'correct the change and retry',
  });
}

export interface PlannedApply {
  readonly next: MachineConfiguration;
  readonly bytes: Uint8Array;
  readonly appliedRevision: string;
  readonly changed: readonly string[];
}

/** Apply a (validated) transaction's changes to the current value. */
export function planApply(current: ConfigExactRead, tx: ConfigTransaction): PlannedApply {
  const namespaces: Record<string, NamespaceValue> = { ...(current.value?.namespaces ?? {}) };
  const changed: string[] = [];
  for (const [ns, value] of Object.entries(tx.changes)) {
    const before = namespaces[ns];
    if (value === null) {
      if (before !== undefined) {
        delete namespaces[ns];
        changed.push(ns);
      }
    } else if (before === undefined || canonicalJson(before) !== canonicalJson(value)) {
      namespaces[ns] = structuredClone(value);
      changed.push(ns);
    }
  }
  const next: MachineConfiguration = { schema_version: MACHINE_CONFIGURATION_SCHEMA, namespaces };
  let bytes: Uint8Array;
  try {
    bytes = encodeMachineConfiguration(next);
  } catch (e) {
    throw isLoopxError(e) ? namespaceInvalid('the result has no canonical JSON form') : e;
  }
  return { next, bytes, appliedRevision: configRevision(next), changed: changed.sort() };
}

export function replayedReceipt(receipt: TransactionReceipt, digest: string): TransactionReceipt {
  if (receipt.request_sha256 !== digest) {
    throw conflict(
      'config_transaction_reused',
      `Transaction ${receipt.transaction_id} was already applied with a different request.`,
      {
        nextAction: 'use a new transaction id for a different change',
      },
    );
  }
  return receipt;
}

export function readbackFailed(): LoopxError {
  return internal('config_readback_failed', 'The machine configuration read back differs from what was written.', {
    nextAction: 'check the disk, then retry the same transaction',
  });
}

export const encodeReceipt = (r: TransactionReceipt): Uint8Array => encodeJson(r);

const receiptInvalid = (what: string): LoopxError =>
  rejected('config_receipt_invalid', `A configuration transaction receipt is invalid: ${what}.`, {
    nextAction: 'restore the transactions directory from a backup',
  });

const RECEIPT_FIELDS = [
  'schema_version',
  'transaction_id',
  'status',
  'request_sha256',
  'prior_revision',
  'applied_revision',
  'readback_verified',
  'changed_namespaces',
];

export function decodeReceipt(bytes: Uint8Array, transactionId: string): TransactionReceipt {
  let o: unknown;
  try {
    o = parseJsonBytes(bytes);
  } catch {
    throw receiptInvalid('not UTF-8 JSON');
  }
  if (!isPlainObject(o) || o.schema_version !== TRANSACTION_SCHEMA) throw receiptInvalid('unknown schema_version');
  if (Object.keys(o).some((k) => !RECEIPT_FIELDS.includes(k)) || RECEIPT_FIELDS.some((k) => !(k in o)))
    throw receiptInvalid('unknown or missing fields');
  if (o.transaction_id !== transactionId) throw receiptInvalid('its transaction_id is not its name');
  if (o.status !== 'applied' || o.readback_verified !== true)
    throw receiptInvalid('it is not an applied, verified receipt');
  if (typeof o.request_sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(o.request_sha256))
    throw receiptInvalid('request_sha256 is malformed');
  for (const k of ['prior_revision', 'applied_revision'] as const) {
    if (typeof o[k] !== 'string' || !REVISION.test(o[k])) throw receiptInvalid(`${k} is malformed`);
  }
  const cn = o.changed_namespaces;
  if (!Array.isArray(cn) || cn.some((n) => typeof n !== 'string' || !NAMESPACE_ID.test(n)))
    throw receiptInvalid('changed_namespaces is malformed');
  return o as unknown as TransactionReceipt;
}

/** The durable note written before the configuration itself: enough to finish or drop the transaction. */
export interface ApplyIntent {
  readonly schema_version: typeof INTENT_SCHEMA;
  readonly transaction_id: string;
  readonly request_sha256: string;
  readonly prior_revision: string;
  readonly applied_revision: string;
  readonly changed_namespaces: readonly string[];
}

export const makeIntent = (transactionId: string, digest: string, prior: string, plan: PlannedApply): ApplyIntent => ({
  schema_version: INTENT_SCHEMA,
  transaction_id: transactionId,
  request_sha256: digest,
  prior_revision: prior,
  applied_revision: plan.appliedRevision,
  changed_namespaces: plan.changed,
});

export const encodeIntent = (i: ApplyIntent): Uint8Array => encodeJson(i);

export function decodeIntent(bytes: Uint8Array, transactionId: string): ApplyIntent {
  let o: unknown;
  try {
    o = parseJsonBytes(bytes);
  } catch {
    throw receiptInvalid('an apply intent is not UTF-8 JSON');
  }
  const keys = [
    'schema_version',
    'transaction_id',
    'request_sha256',
    'prior_revision',
    'applied_revision',
    'changed_namespaces',
  ];
  if (
    !isPlainObject(o) ||
    o.schema_version !== INTENT_SCHEMA ||
    Object.keys(o).length !== keys.length ||
    keys.some((k) => !(k in o))
  ) {
    throw receiptInvalid('an apply intent has an unknown shape');
  }
  if (
    o.transaction_id !== transactionId ||
    typeof o.applied_revision !== 'string' ||
    !REVISION.test(o.applied_revision)
  ) {
    throw receiptInvalid('an apply intent does not match its name');
  }
  return o as unknown as ApplyIntent;
}

export const receiptFromIntent = (i: ApplyIntent): TransactionReceipt => ({
  schema_version: TRANSACTION_SCHEMA,
  transaction_id: i.transaction_id,
  status: 'applied',
  request_sha256: i.request_sha256,
  prior_revision: i.prior_revision,
  applied_revision: i.applied_revision,
  readback_verified: true,
  changed_namespaces: [...i.changed_namespaces],
});
