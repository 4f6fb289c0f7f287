/**
 * The config contract: the machine configuration store and the configuration checkpoint.
 *
 * Store (`loopx_machine_configuration_v0` at `machine/configuration.json`):
 * - Revision: `'sha256:' + hex` over the canonical JSON of the decoded document; a missing file
 *   is a confirmed absence with revision `'absent'` (read() then shows an empty configuration).
 * - `readExact()` decodes the bytes of ONE read and returns them with the value: the checkpoint
 *   and the backup producer's witness come from the same read. A path that is a link, not a
 *   regular file or oversized is `config_unreadable` — never an absence.
 * - Fail closed: unknown `schema_version` or unknown top-level field is `config_unknown_schema`;
 *   other invalid content is `config_malformed`. Inside a namespace only `schema_version` is
 *   required; the rest belongs to the namespace's owner.
 * - `apply` is atomic, durable and conditional: a stale `expectedRevision` is
 *   `config_revision_conflict` (kind conflict) and nothing changes. Each change replaces one
 *   namespace (null removes it). After the write the store reads the file back; a mismatch is
 *   `config_readback_failed` and no receipt is written.
 * - Idempotency: the receipt `machine_configuration_transaction_v0` is kept at
 *   `machine/configuration/transactions/<transaction_id>.json`, never overwritten. A repeated
 *   transactionId with the same request returns that original receipt — even after a restart and
 *   even though its expectedRevision is now stale — and never applies twice; the same id with a
 *   different request is `config_transaction_reused`. A crash between the configuration write and
 *   the receipt leaves an intent (`<transaction_id>.intent.json`); the next apply resolves it
 *   first (applied → its receipt is written; not applied → the intent is dropped), so a retry
 *   either returns the receipt or applies exactly once.
 * - Not found: `receipt(id)` is `undefined`.
 *
 * Checkpoint (`loopx_configuration_backup_v0`, file `configuration-backup.json`): built only from
 * exact reads (never live paths); inert (`privacy_certified` and `activation_performed` are
 * false); `sha256` is the canonical digest of everything else. Verification returns all findings.
 */
import type { OwnerFinding } from '../contract.js';
import type { RegistryGoal } from '../registry/index.js';

export const MACHINE_CONFIGURATION_SCHEMA = 'loopx_machine_configuration_v0';
export const TRANSACTION_SCHEMA = 'machine_configuration_transaction_v0';
export const CHECKPOINT_SCHEMA = 'loopx_configuration_backup_v0';
export const CHECKPOINT_FILE = 'configuration-backup.json';

/** One namespace's value: its own schema_version plus fields its owner defines. */
export interface NamespaceValue {
  readonly schema_version: string;
  readonly [field: string]: unknown;
}

export interface MachineConfiguration {
  readonly schema_version: typeof MACHINE_CONFIGURATION_SCHEMA;
  readonly namespaces: Readonly<Record<string, NamespaceValue>>;
}

export type ConfigExactRead =
  | { readonly absent: true; readonly revision: 'absent'; readonly value: null; readonly bytes: null }
  | {
      readonly absent: false;
      readonly revision: string;
      readonly value: MachineConfiguration;
      readonly bytes: Uint8Array;
    };

export interface ConfigRead {
  /** An empty configuration when the file is absent. */
  readonly value: MachineConfiguration;
  readonly revision: string;
  readonly bytes: Uint8Array | null;
}

export interface ConfigTransaction {
  readonly expectedRevision: string;
  /** 1–128 of A–Z, a–z, 0–9, _ and -, starting with a letter or digit. */
  readonly transactionId: string;
  /** Namespace id → its new value, or null to remove it. */
  readonly changes: Readonly<Record<string, NamespaceValue | null>>;
}

export interface TransactionReceipt {
  readonly schema_version: typeof TRANSACTION_SCHEMA;
  readonly transaction_id: string;
  readonly status: 'applied';
  /** Canonical digest of {expected_revision, changes}: what makes a replay "the same request". */
  readonly request_sha256: string;
  readonly prior_revision: string;
  readonly applied_revision: string;
  readonly readback_verified: boolean;
  /** Sorted; namespaces whose value actually changed. */
  readonly changed_namespaces: readonly string[];
}

export interface ConfigStore {
  read(): ConfigRead;
  readExact(): ConfigExactRead;
  apply(tx: ConfigTransaction): TransactionReceipt;
  receipt(transactionId: string): TransactionReceipt | undefined;
}

export interface ConfigurationCheckpoint {
  readonly schema_version: typeof CHECKPOINT_SCHEMA;
  readonly privacy_certified: false;
  readonly activation_performed: false;
  readonly data: {
    readonly machine_configuration: MachineConfiguration | null;
    /** Sorted by goal_id; each goal_configuration is the complete registry row. */
    readonly goals: ReadonlyArray<{ readonly goal_id: string; readonly goal_configuration: RegistryGoal }>;
  };
  readonly sha256: string;
}

export type CheckpointFindingCode =
  | 'checkpoint_too_large'
  | 'checkpoint_not_json'
  | 'checkpoint_unknown_schema'
  | 'checkpoint_unknown_field'
  | 'checkpoint_malformed'
  | 'checkpoint_digest_mismatch'
  | 'checkpoint_privacy_certified_invalid'
  | 'checkpoint_activation_performed_invalid';

export type ConfigFindingCode =
  | 'config_unknown_schema'
  | 'config_malformed'
  | 'config_unreadable'
  | 'config_receipt_invalid'
  | 'config_transaction_pending';

/** Findings are the owners' one finding type (owners/contract.ts). */
export type Finding<Code extends string> = OwnerFinding<Code>;

export type CheckpointFinding = Finding<CheckpointFindingCode>;
export type ConfigFinding = Finding<ConfigFindingCode>;

export interface CheckpointVerification {
  /** No findings. */
  readonly ok: boolean;
  /** The recomputed canonical digest of everything but `sha256`; null when it cannot be computed. */
  readonly sha256: string | null;
  readonly goal_count: number;
  readonly machine_configuration_present: boolean;
  readonly privacy_certified: boolean;
  readonly activation_performed: boolean;
  /** The bytes decoded and the stated digest equals the recomputed one. */
  readonly readback_verified: boolean;
  readonly findings: readonly CheckpointFinding[];
}

export interface BuiltCheckpoint {
  readonly bytes: Uint8Array;
  readonly sha256: string;
  readonly checkpoint: ConfigurationCheckpoint;
  /** The verification of `bytes` themselves (always ok; building fails otherwise). */
  readonly verification: CheckpointVerification;
}

/** Readback of a copied root: no locks, no writes, no authority. `ok` means no error finding. */
export interface ConfigHistoricalRead {
  readonly ok: boolean;
  /** null when the configuration could not be decoded (see findings). */
  readonly configuration: ConfigExactRead | null;
  readonly receipts: readonly TransactionReceipt[];
  readonly findings: readonly ConfigFinding[];
}

/**
 * The namespace that says where a root keeps its Goal state (`loopx init --store`; read by
 * root-store-location.ts). It names the root's own database: a recovery never adopts it from the
 * source — the destination's store is the recovery plan's choice.
 */
export const STORE_CONFIG_NAMESPACE = 'store';
