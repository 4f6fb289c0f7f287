/**
 * The in-memory run authority: the reference implementation of the RunAuthority contract beside
 * LocalRunAuthority, for engine and owner tests without an authority directory, and for
 * embedding loopx in a process that moves no run anywhere else.
 *
 * It behaves as the local authority does, through the same pieces: a random scope id and key
 * generations with the same rotate/retire refusals, claims and verification by the one Keyring
 * (claims.ts), the same LeaseBook (leases.ts) for shutdown, lease checks and the bounded import
 * wait, the same record encoding (records.ts), the same bind/rebind decisions (roots.ts) over
 * a Map, and the same lifetime supersession rules and encoding (lifetimes.ts) over another. Its run and import locks are exclusive within this authority object: two engines that
 * share one contend as two processes sharing a directory do. Record writes pass the same named
 * fault points as the local write (`<fault>.before-rename`, `<fault>.after-rename`).
 *
 * It must never be used by the CLI, nor for a real runtime root: its keys, records, locks and
 * bindings die with the process, so its claims verify nowhere else, its locks prove nothing to
 * another process, and a root bound here is unknown to the user's real authority. Root directory
 * identities are still real: `rebindRoot` asks the file system whether the bound original exists.
 */
import { randomBytes } from 'node:crypto';
import { faultPoint } from '../core/index.js';
import { Keyring } from './claims.js';
import { checkRunId, IMPORT_WAIT_MS, isRunId, LeaseBook } from './leases.js';
import {
  lifetimesRevision,
  lifetimesSupersededIn,
  readLifetime,
  supersedeLifetime,
  type LifetimeTable,
} from './lifetimes.js';
import { readActivation, writeActivation, type ActivationSetting } from './activation.js';
import { mapWorkMarks, observeWorkHead, rewindWorkMark, type WorkHead, type WorkMark } from './work-marks.js';
import { decodeRecord, encodeRecord } from './records.js';
import {
  bindRoot,
  rebindRoot,
  type RebindOutcome,
  type RootBindingTable,
  type RootDirectoryIdentity,
  stillThere,
} from './roots.js';
import type {
  ClaimInput,
  ImportLease,
  LifetimeSupersession,
  LifetimeSupersessionOutcome,
  LifetimeSupersessionRequest,
  RunAuthority,
  RunLease,
  RunRecord,
} from './contract.js';

export interface MemoryAuthorityOptions {
  /** How long `beginImport` waits for a competing importer of the same run (default 30 s, as local). */
  readonly importWaitMs?: number;
}

/** The memory table of root bindings: copies in, copies out, never removed. */
function mapBindings(): RootBindingTable {
  const bindings = new Map<string, RootDirectoryIdentity>();
  const copy = (id: RootDirectoryIdentity): RootDirectoryIdentity => ({ dev: id.dev, ino: id.ino, path: id.path });
  return {
    get: (rootId) => {
      const bound = bindings.get(rootId);
      return bound && copy(bound);
    },
    create: (rootId, id) => {
      if (bindings.has(rootId)) return false;
      bindings.set(rootId, copy(id));
      return true;
    },
    put: (rootId, id) => void bindings.set(rootId, copy(id)),
  };
}

/** The memory table of lifetime supersessions: encoded records (lifetimes.ts), created once, never changed or removed. */
function mapLifetimes(): LifetimeTable {
  const records = new Map<string, string>();
  return {
    get: (goalInstanceId) => records.get(goalInstanceId),
    list: () => [...records.keys()],
    create: (goalInstanceId, encoded) => {
      if (records.has(goalInstanceId)) return false;
      records.set(goalInstanceId, encoded);
      return true;
    },
  };
}

export class MemoryRunAuthority implements RunAuthority {
  readonly scopeId: Uint8Array;
  readonly #keyring: Keyring;
  readonly #leases = new LeaseBook();
  readonly #runLocks = new Set<string>();
  readonly #importLocks = new Set<string>();
  /** Encoded records (records.ts), by run id. */
  readonly #records = new Map<string, string>();
  readonly #roots = mapBindings();
  readonly #lifetimes = mapLifetimes();
  readonly #works = mapWorkMarks();
  readonly #importWaitMs: number;

  constructor(options: MemoryAuthorityOptions = {}) {
    this.#importWaitMs = options.importWaitMs ?? IMPORT_WAIT_MS;
    this.#keyring = new Keyring(randomBytes(32));
    this.#keyring.add(1, randomBytes(32));
    this.scopeId = this.#keyring.scopeId;
  }

  currentKeyGeneration(): number {
    return this.#keyring.current();
  }

  keyGenerations(): Array<{ generation: number; retired: boolean }> {
    return this.#keyring.generations();
  }

  rotate(): number {
    this.#leases.live();
    const next = this.#keyring.next();
    this.#keyring.add(next, randomBytes(32));
    return next;
  }

  retire(generation: number): void {
    this.#leases.live();
    this.#keyring.checkRetirable(generation);
    this.#keyring.markRetired(generation);
  }

  claim(input: ClaimInput): Uint8Array {
    this.#leases.liveFor(input.runId);
    return this.#keyring.claim(input);
  }

  verifyClaim(scopeId: Uint8Array, input: ClaimInput, hmac: Uint8Array): boolean {
    this.#leases.liveFor(input.runId);
    return this.#keyring.verify(scopeId, input, hmac);
  }

  async acquireRun(runId: string): Promise<RunLease | undefined> {
    this.#leases.live();
    checkRunId(runId);
    if (this.#runLocks.has(runId)) return undefined;
    this.#runLocks.add(runId);
    return this.#leases.runLease(runId, () => void this.#runLocks.delete(runId));
  }

  async readRecord(runId: string): Promise<RunRecord | undefined> {
    this.#leases.liveFor(runId);
    return this.#record(runId);
  }

  #record(runId: string): RunRecord | undefined {
    if (!isRunId(runId)) return undefined;
    const raw = this.#records.get(runId);
    return raw === undefined ? undefined : decodeRecord(runId, raw);
  }

  async writeRecord(lease: RunLease, record: RunRecord, options: { fault?: string } = {}): Promise<void> {
    this.#leases.requireLease(lease, record.runId);
    const encoded = encodeRecord(record);
    if (options.fault) faultPoint(`${options.fault}.before-rename`);
    this.#records.set(record.runId, encoded);
    if (options.fault) faultPoint(`${options.fault}.after-rename`);
  }

  async bindRoot(rootId: string, directory: RootDirectoryIdentity): Promise<void> {
    this.#leases.live();
    await bindRoot(this.#roots, rootId, directory, () => this.#ownsRecords(rootId));
  }

  async rebindRoot(rootId: string, directory: RootDirectoryIdentity): Promise<RebindOutcome> {
    this.#leases.live();
    return rebindRoot(this.#roots, rootId, directory);
  }

  async supersedeLifetime(request: LifetimeSupersessionRequest): Promise<LifetimeSupersessionOutcome> {
    this.#leases.live();
    return supersedeLifetime(this.#lifetimes, request);
  }

  async lifetimeSupersession(goalInstanceId: string): Promise<LifetimeSupersession | undefined> {
    this.#leases.liveRead();
    return readLifetime(this.#lifetimes, goalInstanceId);
  }

  async lifetimesSupersededIn(sourceRoot: string, goalId: string): Promise<LifetimeSupersession[]> {
    this.#leases.liveRead();
    return lifetimesSupersededIn(this.#lifetimes, sourceRoot, goalId);
  }

  async revision(): Promise<number> {
    this.#leases.liveRead();
    return lifetimesRevision(this.#lifetimes);
  }

  async rootBound(rootId: string): Promise<boolean> {
    this.#leases.liveRead();
    return (await this.#roots.get(rootId)) !== undefined;
  }

  async rootDirectory(rootId: string): Promise<string | undefined> {
    this.#leases.liveRead();
    const bound = await this.#roots.get(rootId);
    return bound !== undefined && stillThere(bound) ? bound.path : undefined;
  }

  async observeWorkHead(head: WorkHead): Promise<WorkMark> {
    this.#leases.live();
    return observeWorkHead(this.#works, head);
  }

  async rewindWorkMark(head: WorkHead): Promise<WorkMark> {
    this.#leases.live();
    return rewindWorkMark(this.#works, head);
  }

  readonly #settings = mapWorkMarks();

  async activation(): Promise<ActivationSetting> {
    this.#leases.liveRead();
    return readActivation(this.#settings);
  }

  async setActivation(request: { readonly disabled: boolean; readonly reason?: string }): Promise<ActivationSetting> {
    this.#leases.live();
    return writeActivation(this.#settings, request);
  }

  #ownsRecords(rootId: string): boolean {
    return [...this.#records.keys()].some((runId) => this.#record(runId)?.ownerRoot === rootId);
  }

  async beginImport(runId: string): Promise<ImportLease> {
    this.#leases.live();
    checkRunId(runId);
    const tryLock = (): boolean => {
      if (this.#importLocks.has(runId)) return false;
      this.#importLocks.add(runId);
      return true;
    };
    await this.#leases.waitForImportLock(runId, tryLock, this.#importWaitMs);
    return this.#leases.importLease(runId, () => void this.#importLocks.delete(runId));
  }

  /** Number of outstanding run and import leases (observable drain). */
  get outstandingLeases(): number {
    return this.#leases.outstanding;
  }

  close(): Promise<void> {
    return this.#leases.close(() => this.#keyring.zero());
  }

  /** Test hook: the key buffers, to observe that retiring and shutdown zero them. */
  keyBuffersForTest(): readonly Buffer[] {
    return this.#keyring.buffersForTest();
  }
}

export const memoryRunAuthority = (options: MemoryAuthorityOptions = {}): MemoryRunAuthority =>
  new MemoryRunAuthority(options);
