/**
 * The OS-backed, per-user run authority: one private directory (default
 * `$XDG_STATE_HOME/loopx/run-authority`, else `~/.local/state/loopx/run-authority`) shared by every
 * runtime root of the user.
 *
 *   scope              32 random bytes (hex), 0600
 *   keys/<gen>.key     32 random bytes (hex) per key generation, 0600; removed when retired
 *   keys/<gen>.retired tombstone of a retired generation
 *   locks/<run>.lock   per-run flock(2) files, never unlinked
 *   locks/<run>.import.lock  per-run import locks (flock), never unlinked
 *   runs/<run>.json    durable per-run records (ACTIVE / SUSPENDED / IMPORTING / TERMINAL)
 *   roots/<root>.json  the directory each runtime root id is bound to (roots.ts): a copy owns nothing
 *   lifetimes/<ginst>.json  a Goal lifetime superseded by a recovery (lifetimes.ts): created
 *                      exclusively, never changed or removed
 *   revision           how many lifetimes/ records the authority has created (outside lifetimes/,
 *                      so a lifetimes/ that went missing or back is seen: `authority_rolled_back`)
 *   works/<store>.json the lifetime and last committed head of each Goal work store (work-marks.ts)
 *
 * Every access goes through ConfinedDir (descriptor-relative, identity re-proved). It must never
 * hold an IPC token, never hand out key bytes, and never write a record without the run's lease.
 * What the contract decides is done by the pieces every provider shares — the Keyring (claims.ts),
 * the LeaseBook (leases.ts), the record encoding (records.ts), the root binding decisions
 * (roots.ts), the lifetime supersession rules (lifetimes.ts); this file owns only where their state is kept and how its locks are taken.
 */
import { randomBytes } from 'node:crypto';
import { closeSync } from 'node:fs';
import { join } from 'node:path';
import { LoopxError } from '../core/index.js';
import { tryFlock, xdgHome } from '../core/index.js';
import { Keyring } from './claims.js';
import { authorityCorrupt } from './errors.js';
import { ConfinedDir } from './confined-dir.js';
import { checkRunId, IMPORT_WAIT_MS, isRunId, LeaseBook } from './leases.js';
import {
  directoryLifetimes,
  lifetimesRevision,
  lifetimesSupersededIn,
  readLifetime,
  supersedeLifetime,
  type LifetimeTable,
} from './lifetimes.js';
import { readActivation, writeActivation, type ActivationSetting } from './activation.js';
import {
  directoryWorkMarks,
  observeWorkHead,
  rewindWorkMark,
  type WorkHead,
  type WorkMark,
  type WorkMarkTable,
} from './work-marks.js';
import { decodeRecord, encodeRecord } from './records.js';
import {
  bindRoot,
  directoryBindings,
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

const GEN_FILE = /^([1-9][0-9]{0,15})\.(key|retired)$/;

export function defaultAuthorityDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdgHome('state', env), 'loopx', 'run-authority');
}

const hex32 = (text: string | undefined, what: string): Buffer => {
  const t = (text ?? '').trim();
  if (!/^[0-9a-f]{64}$/.test(t)) throw authorityCorrupt(what);
  return Buffer.from(t, 'hex');
};

/** Create a random 32-byte secret exclusively; losing a creation race to another process is fine (its value is used). */
function createOnce(dir: ConfinedDir, name: string): void {
  try {
    dir.write(name, `${randomBytes(32).toString('hex')}\n`, { exclusive: true });
  } catch (e) {
    if (!(e instanceof LoopxError && e.code === 'authority_entry_exists')) throw e;
  }
}

export interface OpenAuthorityOptions {
  readonly dir?: string;
  /** Create the directory, scope and first key if missing (`loopx authority init`, and first use). */
  readonly create?: boolean;
  /** Skip record fsyncs — only for benchmarks that report the fsync cost separately. */
  readonly unsafeNoSync?: boolean;
  /** How long `beginImport` waits for a competing importer of the same run (default 30 s). */
  readonly importWaitMs?: number;
}

export class LocalRunAuthority implements RunAuthority {
  readonly scopeId: Uint8Array;
  readonly #dir: ConfinedDir;
  readonly #keysDir: ConfinedDir;
  readonly #locksDir: ConfinedDir;
  readonly #runsDir: ConfinedDir;
  readonly #rootsDir: ConfinedDir;
  readonly #roots: RootBindingTable;
  readonly #lifetimesDir: ConfinedDir;
  readonly #lifetimes: LifetimeTable;
  readonly #worksDir: ConfinedDir;
  readonly #works: WorkMarkTable;
  readonly #settingsDir: ConfinedDir;
  readonly #settings: WorkMarkTable;
  readonly #keyring: Keyring;
  readonly #leases = new LeaseBook();
  readonly #noSync: boolean;
  readonly #importWaitMs: number;

  private constructor(dir: ConfinedDir, noSync: boolean, importWaitMs: number) {
    this.#dir = dir;
    this.#noSync = noSync;
    this.#importWaitMs = importWaitMs;
    const opened: ConfinedDir[] = [];
    try {
      this.#keysDir = track(opened, dir.subdir('keys'));
      this.#locksDir = track(opened, dir.subdir('locks'));
      this.#runsDir = track(opened, dir.subdir('runs'));
      this.#rootsDir = track(opened, dir.subdir('roots'));
      this.#roots = directoryBindings(this.#rootsDir, { noSync });
      this.#lifetimesDir = track(opened, dir.subdir('lifetimes'));
      this.#lifetimes = directoryLifetimes(this.#lifetimesDir, { noSync, top: dir });
      this.#worksDir = track(opened, dir.subdir('works'));
      this.#works = directoryWorkMarks(this.#worksDir, { noSync });
      this.#settingsDir = track(opened, dir.subdir('settings'));
      this.#settings = directoryWorkMarks(this.#settingsDir, { noSync });
      this.#keyring = this.#init();
      this.scopeId = this.#keyring.scopeId;
    } catch (e) {
      for (const d of opened) d.close();
      throw e;
    }
  }

  #init(): Keyring {
    const dir = this.#dir;
    let scope = dir.read('scope');
    if (!scope) {
      createOnce(dir, 'scope');
      scope = dir.read('scope')!;
    }
    const keyring = new Keyring(hex32(scope.toString('utf8'), 'scope id'));
    this.#loadKeys(keyring);
    if (keyring.empty) {
      createOnce(this.#keysDir, '1.key');
      this.#loadKeys(keyring);
    }
    return keyring;
  }

  static open(options: OpenAuthorityOptions = {}): LocalRunAuthority {
    // Only the default location gets its missing parents made (~/.local/state/loopx on first use);
    // an explicit directory must have an existing, valid parent.
    const dir = ConfinedDir.open(options.dir ?? defaultAuthorityDir(), {
      create: options.create ?? true,
      createParents: options.dir === undefined && (options.create ?? true),
    });
    try {
      return new LocalRunAuthority(dir, options.unsafeNoSync ?? false, options.importWaitMs ?? IMPORT_WAIT_MS);
    } catch (e) {
      dir.close();
      throw e;
    }
  }

  /** Another process may have rotated or retired generations since this one last looked. */
  #loadKeys(keyring: Keyring = this.#keyring): void {
    const entries = this.#keysDir
      .list()
      .map((name) => ({ name, m: GEN_FILE.exec(name) }))
      .filter((e): e is { name: string; m: RegExpExecArray } => e.m !== null);
    // Tombstones first: a key whose generation is retired (its file not yet removed) is never loaded.
    for (const { m } of entries) if (m[2] === 'retired') keyring.markRetired(Number(m[1]));
    for (const { name, m } of entries) {
      const gen = Number(m[1]);
      if (m[2] === 'key' && !keyring.knows(gen))
        keyring.add(gen, hex32(this.#keysDir.read(name)?.toString('utf8'), `key generation ${gen}`));
    }
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
    this.#keysDir.write(`${next}.key`, `${randomBytes(32).toString('hex')}\n`, { exclusive: true });
    this.#loadKeys();
    return next;
  }

  retire(generation: number): void {
    this.#leases.live();
    this.#keyring.checkRetirable(generation);
    this.#keysDir.write(`${generation}.retired`, `${new Date().toISOString()}\n`, { exclusive: true });
    this.#keysDir.remove(`${generation}.key`);
    this.#loadKeys();
  }

  claim(input: ClaimInput): Uint8Array {
    this.#leases.liveFor(input.runId);
    this.#loadKeys();
    return this.#keyring.claim(input);
  }

  verifyClaim(scopeId: Uint8Array, input: ClaimInput, hmac: Uint8Array): boolean {
    this.#leases.liveFor(input.runId);
    this.#loadKeys();
    return this.#keyring.verify(scopeId, input, hmac);
  }

  async acquireRun(runId: string): Promise<RunLease | undefined> {
    this.#leases.live();
    checkRunId(runId);
    const fd = this.#locksDir.openLockFile(`${runId}.lock`);
    let taken: boolean;
    try {
      taken = tryFlock(fd);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    if (!taken) {
      closeSync(fd);
      return undefined;
    }
    return this.#leases.runLease(runId, () => closeSync(fd)); // releases the flock; the lock file stays
  }

  async readRecord(runId: string): Promise<RunRecord | undefined> {
    this.#leases.liveFor(runId);
    return this.#record(runId);
  }

  #record(runId: string): RunRecord | undefined {
    if (!isRunId(runId)) return undefined;
    const raw = this.#runsDir.read(`${runId}.json`);
    return raw ? decodeRecord(runId, raw) : undefined;
  }

  async writeRecord(lease: RunLease, record: RunRecord, options: { fault?: string } = {}): Promise<void> {
    this.#leases.requireLease(lease, record.runId);
    this.#runsDir.write(`${record.runId}.json`, encodeRecord(record), {
      noSync: this.#noSync,
      ...(options.fault ? { fault: options.fault } : {}),
    });
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

  async activation(): Promise<ActivationSetting> {
    this.#leases.liveRead();
    return readActivation(this.#settings);
  }

  async setActivation(request: { readonly disabled: boolean; readonly reason?: string }): Promise<ActivationSetting> {
    this.#leases.live();
    return writeActivation(this.#settings, request);
  }

  /** Whether any run record names `rootId` as its owner (read once per root, when it is first bound). */
  #ownsRecords(rootId: string): boolean {
    return this.#runsDir
      .list()
      .filter((n) => n.endsWith('.json'))
      .some((n) => this.#record(n.slice(0, -'.json'.length))?.ownerRoot === rootId);
  }

  async beginImport(runId: string): Promise<ImportLease> {
    this.#leases.live();
    checkRunId(runId);
    // Run ids have no dot, so this name never collides with a run's own lock file.
    const fd = this.#locksDir.openLockFile(`${runId}.import.lock`);
    try {
      await this.#leases.waitForImportLock(runId, () => tryFlock(fd), this.#importWaitMs);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    return this.#leases.importLease(runId, () => closeSync(fd)); // releases the flock; the lock file stays
  }

  /** Number of outstanding run and import leases (observable drain). */
  get outstandingLeases(): number {
    return this.#leases.outstanding;
  }

  close(): Promise<void> {
    return this.#leases.close(() => {
      this.#keyring.zero();
      this.#runsDir.close();
      this.#rootsDir.close();
      this.#lifetimesDir.close();
      this.#worksDir.close();
      this.#settingsDir.close();
      this.#locksDir.close();
      this.#keysDir.close();
      this.#dir.close();
    });
  }

  /** Test hook: the key buffers, to observe that shutdown zeroes them. */
  keyBuffersForTest(): readonly Buffer[] {
    return this.#keyring.buffersForTest();
  }
}

const track = (list: ConfinedDir[], d: ConfinedDir): ConfinedDir => {
  list.push(d);
  return d;
};

export const openRunAuthority = (options: OpenAuthorityOptions = {}): LocalRunAuthority =>
  LocalRunAuthority.open(options);
