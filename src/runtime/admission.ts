/**
 * The admission gate of a runtime root: what lets a quiescent backup (1) close admission of new
 * writers, (2) drain the writers already in, (3) capture, (4) reopen. It owns two flock(2) files
 * under the root's `locks/` (never captured, never unlinked), and nothing else:
 *
 *   locks/admission.gate   LOCK_EX by the closer for as long as admission is closed
 *   locks/writers.lock     LOCK_SH by every admitted writer for the whole of its write work
 *
 * Protocol (every step non-blocking; a lock is held through its own open file description):
 *
 *   writer  `admit`           W1 writers.lock LOCK_SH|LOCK_NB   refused → closed
 *                             W2 admission.gate LOCK_SH|LOCK_NB, released at once (a probe)
 *                                                               refused → drop W1, closed
 *   closer  `closeAdmission`  C1 admission.gate LOCK_EX|LOCK_NB  held until release()
 *                             C2 writers.lock LOCK_EX|LOCK_NB, polled until the timeout
 *
 * Why it is race-free: a writer is admitted only if it already held writers.lock (W1) at an
 * instant when no closer held the gate (W2). So every admitted writer either finished before C1,
 * or holds LOCK_SH across C1 — and then C2 cannot succeed until it releases. A writer whose W2
 * comes after C1 is refused; one whose W1 comes after C2 succeeded is refused at W1. Hence
 * `drained: true` means: no writer is inside its write work, and none can enter until release().
 * Taking W1 before W2 matters: probing first and locking after would let a writer slip in after a
 * closer that gave up draining (drained: false) without the closer ever seeing it.
 *
 * Only closers take LOCK_EX, so a refused LOCK_SH always means a closer; but a refused LOCK_EX on
 * the gate may also be a writer's momentary probe (or `admissionState`'s). C1 tells them apart
 * with a LOCK_SH|LOCK_NB of its own: refused only while another closer holds LOCK_EX
 * (`admission_already_closed`); granted, it was a probe, and C1 is tried again.
 *
 * Because the gate is an flock, a closer's death — even SIGKILL — reopens admission at once: no
 * stale state to clean up. The JSON record the closer writes into the gate file (epoch, pid,
 * closed_at) is for diagnostics only and is never taken as authority: only the lock decides.
 *
 * It must never block the event loop on a lock (no blocking flock), and never decide anything
 * about what a writer does: it only admits or refuses, before the writer opens anything.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import {
  conflict,
  ensurePrivateDir,
  hasCode,
  openLockFile,
  refuseRecoveryWorkspaceRoot,
  tryFlock,
  tryLockExclusive,
  tryLockShared,
  type HeldLock,
  type LoopxError,
} from '../core/index.js';
import { LAYOUT, assertRuntimeRoot } from '../owners/index.js';

/** An admitted writer's ticket: held for the whole of its write work; `release()` is idempotent. */
export interface AdmissionTicket {
  release(): void;
}

/** A closed gate: `drained` says whether every writer admitted before it closed has finished. */
export interface ClosedAdmission {
  /** Random hex naming this closing (diagnostics: it is written into the gate file). */
  readonly epoch: string;
  /** True when writers.lock was taken exclusively: no admitted writer is left, none can enter. */
  readonly drained: boolean;
  /** How long the drain waited (ms). */
  readonly waitedMs: number;
  /** Reopen: writers.lock (if taken), then the gate. Idempotent. */
  release(): void;
}

export interface CloseAdmissionOptions {
  /** How long to wait for the admitted writers to finish (and for the gate itself). */
  readonly timeoutMs: number;
  /** Aborting releases what was taken and rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** How often writers.lock is tried while draining (default 25 ms). */
  readonly pollMs?: number;
}

export interface AdmissionState {
  readonly open: boolean;
  /** The closing's epoch as the gate file records it (diagnostics; absent when unreadable). */
  readonly epoch?: string;
}

export const ADMISSION_CLOSED = 'admission_closed';

// Conflict (exit 4, HTTP 409): like `run_busy` and `daemon_upload_in_use`, the refusal of work
// that another holder stands in the way of for now; the same request succeeds once it is gone.
// Nothing was opened or changed when it is raised.
const admissionClosed = (what: string, epoch: string | undefined): LoopxError =>
  conflict(
    ADMISSION_CLOSED,
    'Admission to this runtime root is closed while a backup captures it; nothing was changed.',
    {
      nextAction: 'wait for the backup in progress to finish, then run the command again',
      details: { what, ...(epoch !== undefined ? { epoch } : {}) },
    },
  );

const admissionAlreadyClosed = (epoch: string | undefined): LoopxError =>
  conflict(
    'admission_already_closed',
    'Admission to this runtime root is already closed by another backup in progress.',
    {
      nextAction: 'wait for the other backup to finish, then run this backup again',
      ...(epoch !== undefined ? { details: { epoch } } : {}),
    },
  );

const admissionGateBusy = (): LoopxError =>
  conflict(
    'admission_gate_busy',
    'The admission gate stayed busy with writers entering until the timeout; admission was not closed.',
    {
      nextAction: 'run the backup again, or with a longer timeout',
    },
  );

/** Whether `e` is the refusal of a closed gate (a request that changed nothing and may be sent again as it was). */
export const isAdmissionClosed = (e: unknown): boolean => hasCode(e, ADMISSION_CLOSED);

const pathsOf = (root: string) => ({
  locks: join(root, LAYOUT.locksDir),
  gate: join(root, LAYOUT.admissionGate),
  writers: join(root, LAYOUT.writersLock),
});

const EPOCH = /^[0-9a-f]{32}$/;
const RECORD_MAX_BYTES = 512;

/** The epoch the gate file records, read through `fd` (diagnostics: anything unreadable is no epoch). */
function recordedEpoch(fd: number): string | undefined {
  try {
    const buf = Buffer.alloc(RECORD_MAX_BYTES);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const epoch = (JSON.parse(buf.subarray(0, n).toString('utf8')) as { epoch?: unknown }).epoch;
    return typeof epoch === 'string' && EPOCH.test(epoch) ? epoch : undefined;
  } catch {
    return undefined;
  }
}

/** The gate file's recorded epoch by path; it creates nothing. */
function epochAt(gate: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(gate, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    return recordedEpoch(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Admit one writer to `root` (W1, W2 above), creating the root's `locks/` (0700) when missing;
 * `admission_closed` while a closer holds the gate. `what` names the writer in the refusal.
 */
export function admit(root: string, what: string): AdmissionTicket {
  const p = pathsOf(resolve(root));
  ensurePrivateDir(p.locks);
  const writers = tryLockShared(p.writers);
  if (!writers) throw admissionClosed(what, epochAt(p.gate));
  try {
    const probe = tryLockShared(p.gate);
    if (!probe) throw admissionClosed(what, epochAt(p.gate));
    probe.release();
  } catch (e) {
    writers.release();
    throw e;
  }
  return { release: () => writers.release() };
}

/**
 * The roots the current async context holds a ticket for: a nested writer of the same root rides
 * on it. Mutable, so that a ticket taken lazily (`withLazyAdmission`) is seen by what runs after.
 */
const admitted = new AsyncLocalStorage<Set<string>>();

/**
 * Run `fn` as an admitted writer of `root`, holding the ticket until it settles. Re-entrant: inside
 * another admission of the same root (the same async context) it takes no second ticket, so a
 * writer that is already in is never refused halfway through its work.
 */
export async function withAdmission<T>(root: string, what: string, fn: () => Promise<T> | T): Promise<T> {
  return withLazyAdmission(root, what, (admitNow) => {
    admitNow();
    return fn();
  });
}

/**
 * `withAdmission` whose ticket is taken when `fn` first calls `admitNow()` — right before it first
 * opens or creates anything in the root — so a writer refused for another reason before that
 * (a snapshot whose claim does not verify) leaves the root as it was, lock files included. A
 * writer nested in `fn` before that takes a ticket of its own; so `admitNow()` may still be
 * refused then, and must come before the first write.
 */
export async function withLazyAdmission<T>(
  root: string,
  what: string,
  fn: (admitNow: () => void) => Promise<T> | T,
): Promise<T> {
  const key = resolve(root);
  const held = new Set(admitted.getStore());
  const inherited = held.has(key);
  let ticket: AdmissionTicket | undefined;
  const admitNow = () => {
    if (inherited || ticket !== undefined) return;
    ticket = admit(key, what);
    held.add(key);
  };
  try {
    return await admitted.run(held, () => fn(admitNow));
  } finally {
    ticket?.release();
  }
}

/** C1: the gate, told apart from writers' momentary probes (header); refused while another closer holds it. */
async function takeGate(gate: string, deadline: number, signal: AbortSignal | undefined): Promise<HeldLock> {
  for (;;) {
    signal?.throwIfAborted();
    const held = tryLockExclusive(gate);
    if (held) return held;
    const probe = tryLockShared(gate);
    if (!probe) throw admissionAlreadyClosed(epochAt(gate));
    probe.release();
    if (performance.now() >= deadline) throw admissionGateBusy();
    await nextTurn();
  }
}

/** The diagnostic record of this closing, written through the locked descriptor (never authority, so not fsynced). */
function writeRecord(fd: number, epoch: string): void {
  const bytes = Buffer.from(`${JSON.stringify({ epoch, pid: process.pid, closed_at: new Date().toISOString() })}\n`);
  ftruncateSync(fd, 0);
  writeSync(fd, bytes, 0, bytes.length, 0);
}

/**
 * Close admission of new writers to `root` and wait up to `timeoutMs` for the admitted ones to
 * finish (C1, C2 above). Not drained in time, it still returns holding the gate (`drained: false`):
 * the caller decides whether to downgrade or refuse, and must `release()` either way.
 * `admission_already_closed` while another closer holds the gate; `root_not_found` for no root.
 */
export async function closeAdmission(root: string, options: CloseAdmissionOptions): Promise<ClosedAdmission> {
  const dir = resolve(root);
  refuseRecoveryWorkspaceRoot(dir);
  assertRuntimeRoot(dir);
  const p = pathsOf(dir);
  ensurePrivateDir(p.locks);
  const started = performance.now();
  const deadline = started + options.timeoutMs;
  const gate = await takeGate(p.gate, deadline, options.signal);
  let writersFd: number | undefined;
  const release = () => {
    if (writersFd !== undefined) closeSync(writersFd);
    writersFd = undefined;
    try {
      // The record goes with the closing it describes (a killed closer's stays, and is never read as authority).
      ftruncateSync(gate.fd, 0);
    } finally {
      gate.release();
    }
  };
  try {
    const epoch = randomBytes(16).toString('hex');
    writeRecord(gate.fd, epoch);
    writersFd = openLockFile(p.writers);
    const drained = await drain(writersFd, deadline, options.pollMs ?? 25, options.signal);
    if (!drained) {
      closeSync(writersFd);
      writersFd = undefined;
    }
    let released = false;
    return {
      epoch,
      drained,
      waitedMs: Math.round(performance.now() - started),
      release() {
        if (released) return;
        released = true;
        release();
      },
    };
  } catch (e) {
    release();
    throw options.signal?.aborted ? options.signal.reason : e;
  }
}

/** C2: writers.lock LOCK_EX|LOCK_NB, every `pollMs`, until taken (true) or the deadline (false). */
async function drain(fd: number, deadline: number, pollMs: number, signal: AbortSignal | undefined): Promise<boolean> {
  for (;;) {
    signal?.throwIfAborted();
    if (tryFlock(fd, 'exclusive')) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    await sleep(Math.min(pollMs, left), undefined, signal ? { signal } : {});
  }
}

/** Whether admission to `root` is open now, by probing the gate (for status output and tests); it creates nothing. */
export function admissionState(root: string): AdmissionState {
  const gate = pathsOf(resolve(root)).gate;
  let fd: number;
  try {
    fd = openSync(gate, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { open: true };
    throw e;
  }
  try {
    if (tryFlock(fd, 'shared')) return { open: true };
    const epoch = recordedEpoch(fd);
    return { open: false, ...(epoch !== undefined ? { epoch } : {}) };
  } finally {
    closeSync(fd);
  }
}
