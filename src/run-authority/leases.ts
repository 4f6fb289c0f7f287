/**
 * The lease book of a run authority: which run and import leases it handed out, whether it
 * takes new work, and the shutdown that drains them (RFC 0007 "Authority shutdown rejects new
 * work and drains outstanding run/import leases before releasing that identity").
 *
 * Every provider keeps its leases here and asks it before each operation, so the refusals
 * (`authority_shutting_down`, `authority_closed`, `authority_lease_required`, `run_id_invalid`,
 * `import_busy`) and the drain are one implementation. The provider owns the locks themselves
 * (flock files, a set in memory, an advisory lock in a database): the book is handed an `unlock`
 * per lease and a `tryLock` per import wait. It holds no keys and stores nothing.
 */
import { conflict } from '../core/index.js';
import type { ImportLease, RunLease } from './contract.js';
import { authorityClosed, leaseRequired, runIdInvalid } from './errors.js';

/** How long an importer waits for a competing import of the same run before `import_busy`. */
export const IMPORT_WAIT_MS = 30_000;

const RUN_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Run ids are single safe names: they never reach a path or a key other than as themselves. */
export const isRunId = (runId: string): boolean => RUN_ID.test(runId);

export function checkRunId(runId: string): void {
  if (!isRunId(runId)) throw runIdInvalid();
}

export class LeaseBook {
  readonly #runLeases = new Set<RunLease>();
  readonly #importLeases = new Set<ImportLease>();
  #closing = false;
  #closed = false;
  #closePromise: Promise<void> | undefined;
  #drained: (() => void) | undefined;

  /** New work (new leases, key changes, bindings) is refused from the moment shutdown begins. */
  live(): void {
    if (this.#closing)
      throw conflict('authority_shutting_down', 'The run authority is shutting down and takes no new work.', {
        nextAction: 'retry in a new process',
      });
  }

  /** Work of outstanding leases may finish during the drain; after it, nothing runs. */
  open(): void {
    if (this.#closed) throw authorityClosed();
  }

  /** Reads and claims about a run: new work during shutdown unless a lease of that run is outstanding. */
  liveFor(runId: string): void {
    this.open();
    if (!this.#closing) return;
    const leased =
      [...this.#runLeases].some((l) => l.runId === runId) || [...this.#importLeases].some((l) => l.runId === runId);
    if (!leased) this.live();
  }

  /** A read no lease can cover (a Goal lifetime's supersession): new work during shutdown, refused after it. */
  liveRead(): void {
    this.open();
    this.live();
  }

  /** Records are written only under the live lease of that run, handed out by this very authority. */
  requireLease(lease: RunLease, runId: string): void {
    this.open();
    if (lease.released || !this.#runLeases.has(lease) || lease.runId !== runId) {
      throw leaseRequired(runId);
    }
  }

  /** Record a run lease whose lock the provider has just taken; `unlock` gives the lock back once. */
  runLease(runId: string, unlock: () => void | Promise<void>): RunLease {
    let released = false;
    const lease: RunLease = {
      runId,
      get released() {
        return released;
      },
      release: async () => {
        if (released) return;
        released = true;
        try {
          await unlock();
        } finally {
          this.#runLeases.delete(lease);
          this.#maybeDrained();
        }
      },
    };
    this.#runLeases.add(lease);
    return lease;
  }

  importLease(runId: string, unlock: () => void | Promise<void>): ImportLease {
    let released = false;
    const lease: ImportLease = {
      runId,
      release: async () => {
        if (released) return;
        released = true;
        try {
          await unlock();
        } finally {
          this.#importLeases.delete(lease);
          this.#maybeDrained();
        }
      },
    };
    this.#importLeases.add(lease);
    return lease;
  }

  /**
   * Poll a run's import lock (a blocking wait would hold a thread with no way to give up): bounded
   * by `waitMs` (`import_busy`), and given up at once when shutdown begins — a waiting importer is
   * new work, not an outstanding lease.
   */
  async waitForImportLock(runId: string, tryLock: () => boolean | Promise<boolean>, waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
      this.live();
      if (await tryLock()) return;
      if (Date.now() >= deadline) {
        throw conflict('import_busy', `Another import of run ${runId} is still running.`, {
          nextAction: 'run the same import again once the other one has finished',
        });
      }
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /** Number of outstanding run and import leases (observable drain). */
  get outstanding(): number {
    return this.#runLeases.size + this.#importLeases.size;
  }

  #maybeDrained(): void {
    if (this.#closing && this.outstanding === 0) this.#drained?.();
  }

  /** Shutdown: refuse new work at once, wait for the drain, then run `teardown` (zero keys, close storage) once. */
  close(teardown: () => void): Promise<void> {
    this.#closePromise ??= (async () => {
      this.#closing = true;
      if (this.outstanding > 0) await new Promise<void>((r) => (this.#drained = r));
      this.#closed = true;
      teardown();
    })();
    return this.#closePromise;
  }
}
