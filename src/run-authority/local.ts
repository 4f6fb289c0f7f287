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
 *
 * Every access goes through ConfinedDir (descriptor-relative, identity re-proved). It must never
 * hold an IPC token, never hand out key bytes, and never write a record without the run's lease.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { conflict, internal, LoopxError, rejected, lengthPrefixed, u64be, utf8, tryFlock } from '../core/index.js';
import { ConfinedDir } from './confined-dir.js';
import { authorityClosed, leaseRequired, runIdInvalid } from './errors.js';
import { bindRoot, rebindRoot, type RebindOutcome, type RootDirectoryIdentity } from './roots.js';
import type { ClaimInput, ImportLease, RunAuthority, RunLease, RunRecord, RunRecordState } from './contract.js';

export const SUBKEY_DOMAIN = 'loopx.run-authority.subkey/v1';
/** How long an importer waits for a competing import of the same run before `import_busy`. */
const IMPORT_WAIT_MS = 30_000;
const RUN_ID = /^[A-Za-z0-9_-]{1,128}$/;
const GEN_FILE = /^([1-9][0-9]{0,15})\.(key|retired)$/;
const RECORD_SCHEMA = 'loopx.run-authority.record/v1';
const STATES: readonly RunRecordState[] = ['ACTIVE', 'SUSPENDED', 'IMPORTING', 'TERMINAL'];
const generationUnknown = (generation: number, why: string) => rejected('authority_generation_unknown', `Key generation ${generation} is not ${why}.`);
const recordCorrupt = (runId: string, why: string) => internal('authority_record_corrupt', `The authority record of run ${runId} is ${why}.`);

/**
 * The per-run subkey (ARCHITECTURE.md "Decisions"): HMAC-SHA256 keyed by the authority key over
 * the length-prefixed tuple (SUBKEY_DOMAIN, scope id, run id, transition generation as u64 BE).
 * The claim is HMAC-SHA256 keyed by this subkey over the canonical MAC input. Exported for the
 * published test vectors; callers other than the authority never hold a key.
 */
export function deriveRunSubkey(key: Uint8Array, scopeId: Uint8Array, runId: string, transitionGeneration: number): Buffer {
  return createHmac('sha256', key).update(lengthPrefixed([utf8(SUBKEY_DOMAIN), scopeId, utf8(runId), u64be(transitionGeneration)])).digest();
}

export function defaultAuthorityDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME && env.XDG_STATE_HOME.startsWith('/') ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
  return join(state, 'loopx', 'run-authority');
}

const hex32 = (text: string | undefined, what: string): Buffer => {
  const t = (text ?? '').trim();
  if (!/^[0-9a-f]{64}$/.test(t)) throw internal('authority_corrupt', `The authority's ${what} is malformed.`, { nextAction: 'restore the authority directory from a backup' });
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
  readonly #keys = new Map<number, Buffer>();
  readonly #retired = new Set<number>();
  readonly #runLeases = new Set<RunLease>();
  readonly #importLeases = new Set<ImportLease>();
  #closing = false;
  #closePromise: Promise<void> | undefined;
  #closed = false;
  #drained: (() => void) | undefined;

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
      this.scopeId = this.#init();
    } catch (e) {
      for (const d of opened) d.close();
      throw e;
    }
  }

  #init(): Uint8Array {
    const dir = this.#dir;
    let scope = dir.read('scope');
    if (!scope) {
      createOnce(dir, 'scope');
      scope = dir.read('scope')!;
    }
    const scopeId = new Uint8Array(hex32(scope.toString('utf8'), 'scope id'));
    this.#loadKeys();
    if (this.#keys.size === 0 && this.#retired.size === 0) {
      createOnce(this.#keysDir, '1.key');
      this.#loadKeys();
    }
    return scopeId;
  }

  static open(options: OpenAuthorityOptions = {}): LocalRunAuthority {
    // Only the default location gets its missing parents made (~/.local/state/loopx on first use);
    // an explicit directory must have an existing, valid parent.
    const dir = ConfinedDir.open(options.dir ?? defaultAuthorityDir(), { create: options.create ?? true, createParents: options.dir === undefined && (options.create ?? true) });
    try {
      return new LocalRunAuthority(dir, options.unsafeNoSync ?? false, options.importWaitMs ?? IMPORT_WAIT_MS);
    } catch (e) {
      dir.close();
      throw e;
    }
  }

  #loadKeys(): void {
    for (const name of this.#keysDir.list()) {
      const m = GEN_FILE.exec(name);
      if (!m) continue;
      const gen = Number(m[1]);
      if (m[2] === 'retired') {
        this.#retired.add(gen);
        this.#keys.get(gen)?.fill(0);
        this.#keys.delete(gen);
      } else if (!this.#retired.has(gen) && !this.#keys.has(gen)) {
        this.#keys.set(gen, hex32(this.#keysDir.read(name)?.toString('utf8'), `key generation ${gen}`));
      }
    }
  }

  /** New work (new leases, key changes) is refused from the moment shutdown begins. */
  #live(): void {
    if (this.#closing) throw conflict('authority_shutting_down', 'The run authority is shutting down and takes no new work.', { nextAction: 'retry in a new process' });
  }

  /** Work of outstanding leases may finish during the drain; after it, nothing runs. */
  #open(): void {
    if (this.#closed) throw authorityClosed();
  }

  /** Reads and claims about a run: new work during shutdown unless a lease of that run is outstanding. */
  #liveFor(runId: string): void {
    this.#open();
    if (!this.#closing) return;
    const leased = [...this.#runLeases].some((l) => l.runId === runId) || [...this.#importLeases].some((l) => l.runId === runId);
    if (!leased) this.#live();
  }

  currentKeyGeneration(): number {
    const gens = [...this.#keys.keys()];
    if (gens.length === 0) throw rejected('authority_no_key', 'Every key generation of this authority is retired.', { nextAction: 'add one: loopx authority rotate' });
    return Math.max(...gens);
  }

  keyGenerations(): Array<{ generation: number; retired: boolean }> {
    return [...[...this.#keys.keys()].map((g) => ({ generation: g, retired: false })), ...[...this.#retired].map((g) => ({ generation: g, retired: true }))].sort((a, b) => a.generation - b.generation);
  }

  rotate(): number {
    this.#live();
    const next = Math.max(0, ...this.#keys.keys(), ...this.#retired) + 1;
    if (!Number.isSafeInteger(next)) throw internal('authority_generation_overflow', 'Key generations are exhausted.');
    this.#keysDir.write(`${next}.key`, `${randomBytes(32).toString('hex')}\n`, { exclusive: true });
    this.#loadKeys();
    return next;
  }

  retire(generation: number): void {
    this.#live();
    if (!this.#keys.has(generation)) throw generationUnknown(generation, 'active here');
    if (this.#keys.size === 1) throw rejected('authority_last_generation', 'The last active key generation cannot be retired.', { nextAction: 'rotate first: loopx authority rotate' });
    this.#keysDir.write(`${generation}.retired`, `${new Date().toISOString()}\n`, { exclusive: true });
    this.#keysDir.remove(`${generation}.key`);
    this.#loadKeys();
  }

  #subkey(key: Buffer, runId: string, transitionGeneration: number): Buffer {
    return deriveRunSubkey(key, this.scopeId, runId, transitionGeneration);
  }

  claim(input: ClaimInput): Uint8Array {
    this.#liveFor(input.runId);
    this.#loadKeys();
    const key = this.#keys.get(input.keyGeneration);
    if (!key) throw generationUnknown(input.keyGeneration, 'available for signing');
    const sub = this.#subkey(key, input.runId, input.transitionGeneration);
    try {
      return new Uint8Array(createHmac('sha256', sub).update(input.macInput).digest());
    } finally {
      sub.fill(0);
    }
  }

  verifyClaim(scopeId: Uint8Array, input: ClaimInput, hmac: Uint8Array): boolean {
    this.#liveFor(input.runId);
    if (!Number.isSafeInteger(input.transitionGeneration) || input.transitionGeneration < 0 || !Number.isSafeInteger(input.keyGeneration)) return false;
    // Another process may have rotated or retired generations since this one opened.
    this.#loadKeys();
    const scopeOk = scopeId.byteLength === 32 && timingSafeEqual(Buffer.from(scopeId), Buffer.from(this.scopeId));
    const real = this.#keys.get(input.keyGeneration);
    // Unknown scope or generation still does the same work against a throwaway key: one failure shape.
    const key = scopeOk && real ? real : randomBytes(32);
    const sub = this.#subkey(key, input.runId, input.transitionGeneration);
    const expected = createHmac('sha256', sub).update(input.macInput).digest();
    sub.fill(0);
    const given = Buffer.alloc(32);
    Buffer.from(hmac).copy(given, 0, 0, Math.min(32, hmac.byteLength));
    const same = timingSafeEqual(expected, given);
    return same && scopeOk && real !== undefined && hmac.byteLength === 32;
  }

  acquireRun(runId: string): RunLease | undefined {
    this.#live();
    if (!RUN_ID.test(runId)) throw runIdInvalid();
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
    let released = false;
    const leases = this.#runLeases;
    const lease: RunLease = {
      runId,
      get released() {
        return released;
      },
      release: () => {
        if (released) return;
        released = true;
        closeSync(fd); // releases the flock; the lock file stays
        leases.delete(lease);
        this.#maybeDrained();
      },
    };
    leases.add(lease);
    return lease;
  }

  readRecord(runId: string): RunRecord | undefined {
    this.#liveFor(runId);
    if (!RUN_ID.test(runId)) return undefined;
    const raw = this.#runsDir.read(`${runId}.json`);
    if (!raw) return undefined;
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      throw recordCorrupt(runId, 'not JSON');
    }
    if (doc.schema !== RECORD_SCHEMA || doc.run_id !== runId || !STATES.includes(doc.state as RunRecordState) || !Number.isSafeInteger(doc.transition_generation) || typeof doc.owner_root !== 'string') {
      throw recordCorrupt(runId, 'malformed');
    }
    return {
      runId,
      state: doc.state as RunRecordState,
      transitionGeneration: doc.transition_generation as number,
      ownerRoot: doc.owner_root as string,
      ...(typeof doc.payload_sha256 === 'string' ? { payloadSha256: doc.payload_sha256 } : {}),
      ...(typeof doc.claim_hmac === 'string' ? { claimHmac: doc.claim_hmac } : {}),
      ...(typeof doc.key_generation === 'number' ? { keyGeneration: doc.key_generation } : {}),
      ...(typeof doc.claim_generation === 'number' ? { claimGeneration: doc.claim_generation } : {}),
      ...(typeof doc.last_sequence === 'number' ? { lastSequence: doc.last_sequence } : {}),
      updatedAt: String(doc.updated_at),
    };
  }

  writeRecord(lease: RunLease, record: RunRecord, options: { fault?: string } = {}): void {
    this.#open();
    if (lease.released || !this.#runLeases.has(lease) || lease.runId !== record.runId) {
      throw leaseRequired(record.runId);
    }
    const doc = {
      schema: RECORD_SCHEMA,
      run_id: record.runId,
      state: record.state,
      transition_generation: record.transitionGeneration,
      owner_root: record.ownerRoot,
      ...(record.payloadSha256 !== undefined ? { payload_sha256: record.payloadSha256 } : {}),
      ...(record.claimHmac !== undefined ? { claim_hmac: record.claimHmac } : {}),
      ...(record.keyGeneration !== undefined ? { key_generation: record.keyGeneration } : {}),
      ...(record.claimGeneration !== undefined ? { claim_generation: record.claimGeneration } : {}),
      ...(record.lastSequence !== undefined ? { last_sequence: record.lastSequence } : {}),
      updated_at: record.updatedAt,
    };
    this.#runsDir.write(`${record.runId}.json`, `${JSON.stringify(doc)}\n`, { noSync: this.#noSync, ...(options.fault ? { fault: options.fault } : {}) });
  }

  bindRoot(rootId: string, directory: RootDirectoryIdentity): void {
    this.#live();
    bindRoot(this.#rootsDir, rootId, directory, { noSync: this.#noSync, hasRecordedRuns: () => this.#ownsRecords(rootId) });
  }

  rebindRoot(rootId: string, directory: RootDirectoryIdentity): RebindOutcome {
    this.#live();
    return rebindRoot(this.#rootsDir, rootId, directory, { noSync: this.#noSync });
  }

  /** Whether any run record names `rootId` as its owner (read once per root, when it is first bound). */
  #ownsRecords(rootId: string): boolean {
    return this.#runsDir
      .list()
      .filter((n) => n.endsWith('.json'))
      .some((n) => this.readRecord(n.slice(0, -'.json'.length))?.ownerRoot === rootId);
  }

  /**
   * Poll the import lock (a blocking flock would hold a thread-pool thread with no way to give up):
   * bounded by importWaitMs (`import_busy`), and given up at once when shutdown begins — a waiting
   * importer is new work, not an outstanding lease.
   */
  async #waitForImportLock(fd: number, runId: string): Promise<void> {
    const deadline = Date.now() + this.#importWaitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
      this.#live();
      if (tryFlock(fd)) return;
      if (Date.now() >= deadline) {
        throw conflict('import_busy', `Another import of run ${runId} is still running.`, { nextAction: 'run the same import again once the other one has finished' });
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  async beginImport(runId: string): Promise<ImportLease> {
    this.#live();
    if (!RUN_ID.test(runId)) throw runIdInvalid();
    // Run ids have no dot, so this name never collides with a run's own lock file.
    const fd = this.#locksDir.openLockFile(`${runId}.import.lock`);
    try {
      await this.#waitForImportLock(fd, runId);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
    let released = false;
    const lease: ImportLease = {
      runId,
      release: () => {
        if (released) return;
        released = true;
        closeSync(fd); // releases the flock; the lock file stays
        this.#importLeases.delete(lease);
        this.#maybeDrained();
      },
    };
    this.#importLeases.add(lease);
    return lease;
  }

  /** Number of outstanding run and import leases (observable drain). */
  get outstandingLeases(): number {
    return this.#runLeases.size + this.#importLeases.size;
  }

  #maybeDrained(): void {
    if (this.#closing && this.outstandingLeases === 0) this.#drained?.();
  }

  close(): Promise<void> {
    this.#closePromise ??= this.#close();
    return this.#closePromise;
  }

  async #close(): Promise<void> {
    this.#closing = true;
    if (this.outstandingLeases > 0) await new Promise<void>((r) => (this.#drained = r));
    this.#closed = true;
    for (const key of this.#keys.values()) key.fill(0);
    this.#runsDir.close();
    this.#rootsDir.close();
    this.#locksDir.close();
    this.#keysDir.close();
    this.#dir.close();
  }

  /** Test hook: the key buffers, to observe that shutdown zeroes them. */
  keyBuffersForTest(): readonly Buffer[] {
    return [...this.#keys.values()];
  }
}

const track = (list: ConfinedDir[], d: ConfinedDir): ConfinedDir => {
  list.push(d);
  return d;
};

export const openRunAuthority = (options: OpenAuthorityOptions = {}): LocalRunAuthority => LocalRunAuthority.open(options);
