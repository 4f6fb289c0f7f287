import type { RebindOutcome, RootDirectoryIdentity } from './roots.js';
import type { ActivationSetting } from './activation.js';
import type { WorkHead, WorkMark } from './work-marks.js';

/**
 * The run-authority contract (RFC 0007): per-user provenance and exclusive ownership of runs.
 *
 * - Keys: a random 32-byte scope id and key generations (positive u64). `rotate` adds one; older
 *   generations stay verifiable until `retire`d. Key material never leaves the authority: callers
 *   get claims (HMACs) and yes/no verification answers, nothing else.
 * - Claims: HMAC-SHA256 with a per-run subkey derived from the key over (domain, scope, run id,
 *   transition generation), so identical payloads from different transition generations carry
 *   different claims. `verifyClaim` compares in constant time and answers `false` — never a
 *   distinguishable error — for an unknown scope, an unavailable generation or a wrong HMAC.
 * - Ownership: `acquireRun` takes the run's exclusive lock without waiting (undefined when a live
 *   process holds it). Locks die with their process and are never unlinked. Records are written
 *   only under the run's lease, atomically and durably; "not found" is `undefined`.
 * - Roots: `bindRoot` ties a runtime root's random id to the directory (device and inode) it is
 *   used from, on first use; any other directory carrying that id (a byte copy) is refused with
 *   `root_is_copy`, so a copy of a root's bytes owns no runs. Bindings are durable and survive `mv`
 *   on one file system. An id with recorded runs but no binding is `root_binding_required`;
 *   `rebindRoot` is the operator's explicit step for that and for a moved device (roots.ts).
 * - Imports: `beginImport(runId)` waits for the run's import lock (a second flock file per run,
 *   also never unlinked), so at most one importer of a run — in any process — works at a time,
 *   and one that waited finds the first one's outcome (consumed, or still importable) in the record.
 *   Importers take it before the run's lock, never the other way round.
 * - Goal lifetimes: a Goal recovered into a new root gets a new lifetime (`goal_instance_id`);
 *   `supersedeLifetime` records, once and for ever, that the old lifetime was replaced — by which
 *   successor, in which root, under which fence and recovery. It is kept here, outside every root,
 *   so every root of the user (the lost source root too, if it comes back) sees it and its old
 *   writers refuse with `goal_lifetime_superseded`. The record is created exclusively and durably
 *   and never changed or removed: the same request again answers the stored record with
 *   `replayed: true`; any other request for that lifetime is `goal_lifetime_already_superseded`
 *   (conflict) and changes nothing; a malformed one is `lifetime_supersession_invalid`. Of two
 *   concurrent writers (any processes) exactly one creates it. "Not superseded" is `undefined`
 *   from `lifetimeSupersession`; a stored record that does not decode, or an entry that is not a
 *   private regular file, is a typed refusal — never "not superseded" (lifetimes.ts).
 * - Revision: how many lifetime supersessions the authority has recorded, kept apart from the
 *   records themselves; records missing against it are `authority_rolled_back` on every read.
 * - Work marks: per Goal work store, the lifetime that writes it and the last head a writer saw
 *   (work-marks.ts); bound on first use, moved only forward.
 * - Shutdown (`close`): rejects new work at once — new leases, key changes, bindings, lifetime
 *   supersessions and their reads, and `claim`, `verifyClaim` and `readRecord` for a run this
 *   authority holds no lease of — waits for outstanding run and import leases to be released,
 *   then zeroes the in-memory key buffers.
 *
 * - Keys and claims answer within the call (key material stays in the process); everything about
 *   runs, roots and lifetimes is asynchronous, so a provider on a database server keeps the same
 *   contract as the local directory.
 *
 * Providers: `local.ts` (the user's private directory; flock locks die with their process) and
 * `memory.ts` (tests and embedding; its locks live as long as the authority object). One suite,
 * test/run-authority/conformance/, runs these rules against every provider.
 */

/** Durable per-run record states. TERMINAL is a tombstone: never resumable, never importable. */
export type RunRecordState = 'ACTIVE' | 'SUSPENDED' | 'IMPORTING' | 'TERMINAL';

export interface RunRecord {
  readonly runId: string;
  readonly state: RunRecordState;
  /** Advanced on every resume and import; part of the per-run subkey. */
  readonly transitionGeneration: number;
  /** The runtime root (by its random id) that owns the run. */
  readonly ownerRoot: string;
  /** SUSPENDED (and IMPORTING): the exact payload digest and claim the record binds. */
  readonly payloadSha256?: string;
  readonly claimHmac?: string;
  readonly keyGeneration?: number;
  /** The transition generation the bound claim was made under (stays after consume). */
  readonly claimGeneration?: number;
  readonly lastSequence?: number;
  readonly updatedAt: string;
}

export interface RunLease {
  readonly runId: string;
  readonly released: boolean;
  /** Gives the run back (idempotent); resolves once the provider has let go of it. */
  release(): Promise<void>;
}

export interface ImportLease {
  readonly runId: string;
  release(): Promise<void>;
}

export interface ClaimInput {
  readonly keyGeneration: number;
  readonly runId: string;
  readonly transitionGeneration: number;
  /** The canonical MAC input (see snapshot/envelope). */
  readonly macInput: Uint8Array;
}

/** A Goal lifetime replaced by a recovery: recorded once, never changed, never removed. */
export interface LifetimeSupersession {
  /** The superseded lifetime (`ginst_` + 32 lowercase hex). */
  readonly goal_instance_id: string;
  /** The alias (the same for both lifetimes). */
  readonly goal_id: string;
  /** The new lifetime (`ginst_` + 32 lowercase hex), never the superseded one. */
  readonly successor_instance_id: string;
  /** The Goal's lineage id, stable across lifetimes (`/^[A-Za-z0-9_.:-]{1,128}$/`). */
  readonly goal_lineage: string;
  /** The successor's delivery fence (a positive safe integer). */
  readonly fence: number;
  /** The recovery that minted the successor (64 lowercase hex). */
  readonly recovery_id: string;
  /** The root id that holds the successor (the form `bindRoot` takes). */
  readonly successor_root: string;
  /** The root id that held the superseded lifetime; null when the recovery did not know it (and in records written before it was kept). */
  readonly source_root: string | null;
  /** ISO timestamp, set by the authority when it recorded the supersession. */
  readonly recorded_at: string;
}

/** What a caller asks for: every field but the authority's `recorded_at` (`source_root` may be left out: null), and nothing else. */
export type LifetimeSupersessionRequest = Omit<LifetimeSupersession, 'recorded_at' | 'source_root'> & {
  readonly source_root?: string | null;
};

/** The stored record; `replayed` when it was already there, from the very same request. */
export interface LifetimeSupersessionOutcome {
  readonly record: LifetimeSupersession;
  readonly replayed: boolean;
}

export interface RunAuthority {
  readonly scopeId: Uint8Array;
  currentKeyGeneration(): number;
  keyGenerations(): Array<{ readonly generation: number; readonly retired: boolean }>;
  rotate(): number;
  retire(generation: number): void;

  claim(input: ClaimInput): Uint8Array;
  verifyClaim(scopeId: Uint8Array, input: ClaimInput, hmac: Uint8Array): boolean;

  acquireRun(runId: string): Promise<RunLease | undefined>;
  readRecord(runId: string): Promise<RunRecord | undefined>;
  /** `fault` names crash points around the durable write (tests only). */
  writeRecord(lease: RunLease, record: RunRecord, options?: { fault?: string }): Promise<void>;
  /** Waits while another importer of the run (any process) holds its import lock. */
  beginImport(runId: string): Promise<ImportLease>;
  /** Prove `directory` is the one `rootId` is bound to (binding it on first use); else `root_is_copy`. */
  bindRoot(rootId: string, directory: RootDirectoryIdentity): Promise<void>;
  /** The operator's explicit binding (`authority bind-root`); never while the bound original still exists (`root_binding_original_present`). */
  rebindRoot(rootId: string, directory: RootDirectoryIdentity): Promise<RebindOutcome>;
  /** Record that a Goal lifetime was replaced by a recovery (exclusive, durable, idempotent); else `goal_lifetime_already_superseded`. */
  supersedeLifetime(request: LifetimeSupersessionRequest): Promise<LifetimeSupersessionOutcome>;
  /** The supersession of `goalInstanceId`; `undefined` while it is not superseded. */
  lifetimeSupersession(goalInstanceId: string): Promise<LifetimeSupersession | undefined>;
  /** Every supersession of a lifetime that root `sourceRoot` held under alias `goalId` (records that name their source root). */
  lifetimesSupersededIn(sourceRoot: string, goalId: string): Promise<LifetimeSupersession[]>;
  /** How many lifetime supersessions the authority holds; `authority_rolled_back` when fewer than it has recorded. */
  revision(): Promise<number>;
  /** Whether the authority holds a binding of root id `rootId` (to any directory). */
  rootBound(rootId: string): Promise<boolean>;
  /**
   * The directory `rootId` is bound to, while it is still there with its bound identity (else
   * undefined): where a superseded root's refusal points the operator. Private: for the operator's
   * own command line, never for a public document.
   */
  rootDirectory(rootId: string): Promise<string | undefined>;
  /** A writer's view of a Goal work store checked against, and moved into, its mark (work-marks.ts): `goal_identity_mismatch`, `root_rolled_back`. */
  observeWorkHead(head: WorkHead): Promise<WorkMark>;
  /** The mark set to `head`, behind it or not: a confirmed database rotation's copy heads (work-marks.ts `rewindWorkMark`). */
  rewindWorkMark(head: WorkHead): Promise<WorkMark>;
  /** The user's recovery activation switch (activation.ts): read per request, never cached. */
  activation(): Promise<ActivationSetting>;
  /** Turns recovery activation off (with a reason) or on; durable before it answers. */
  setActivation(request: { readonly disabled: boolean; readonly reason?: string }): Promise<ActivationSetting>;

  close(): Promise<void>;
}
