import type { RebindOutcome, RootDirectoryIdentity } from './roots.js';

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
 * - Shutdown (`close`): rejects new work at once — new leases, key changes, and `claim`,
 *   `verifyClaim` and `readRecord` for a run this authority holds no lease of — waits for
 *   outstanding run and import leases to be released, then zeroes the in-memory key buffers.
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
  release(): void;
}

export interface ImportLease {
  readonly runId: string;
  release(): void;
}

export interface ClaimInput {
  readonly keyGeneration: number;
  readonly runId: string;
  readonly transitionGeneration: number;
  /** The canonical MAC input (see snapshot/envelope). */
  readonly macInput: Uint8Array;
}

export interface RunAuthority {
  readonly scopeId: Uint8Array;
  currentKeyGeneration(): number;
  keyGenerations(): Array<{ readonly generation: number; readonly retired: boolean }>;
  rotate(): number;
  retire(generation: number): void;

  claim(input: ClaimInput): Uint8Array;
  verifyClaim(scopeId: Uint8Array, input: ClaimInput, hmac: Uint8Array): boolean;

  acquireRun(runId: string): RunLease | undefined;
  readRecord(runId: string): RunRecord | undefined;
  /** `fault` names crash points around the durable write (tests only). */
  writeRecord(lease: RunLease, record: RunRecord, options?: { fault?: string }): void;
  /** Waits while another importer of the run (any process) holds its import lock. */
  beginImport(runId: string): Promise<ImportLease>;
  /** Prove `directory` is the one `rootId` is bound to (binding it on first use); else `root_is_copy`. */
  bindRoot(rootId: string, directory: RootDirectoryIdentity): void;
  /** The operator's explicit binding (`authority bind-root`); never while the bound original still exists (`root_binding_original_present`). */
  rebindRoot(rootId: string, directory: RootDirectoryIdentity): RebindOutcome;

  close(): Promise<void>;
}
