/**
 * OS advisory locks (flock(2) via fs-ext; Node has no flock of its own). A lock dies with the
 * process that holds it — that is how a later process proves an earlier owner is dead. Lock files
 * are created owner-only and never unlinked: unlinking would let two processes lock two different
 * inodes under one name.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { conflict } from './errors.js';

type FsExt = typeof import('fs-ext');
let loaded: FsExt | undefined;

/**
 * fs-ext, loaded on first use and only on the main thread: its addon is not safe to load on a
 * worker thread (a second thread that loads it crashes the process), and no worker thread locks —
 * the backup's capture thread takes every lock-related proof on the main thread first.
 */
function fsExt(): FsExt {
  if (!isMainThread) throw new Error('locks are taken on the main thread only');
  return (loaded ??= createRequire(import.meta.url)('fs-ext') as FsExt);
}

export interface HeldLock {
  readonly path: string;
  /** The locked open file description's descriptor: for writing a diagnostic record into the lock file; closing it is `release()`'s job. */
  readonly fd: number;
  release(): void;
}

/** flock(2) lock modes: exclusive (one holder) or shared (any number of holders, no exclusive one). */
export type FlockMode = 'exclusive' | 'shared';

/**
 * flock(fd, LOCK_EX|LOCK_NB) — or LOCK_SH|LOCK_NB for `shared`: true when taken, false when a
 * conflicting lock is held through another open file description (in this process or another).
 * Any other failure is thrown. The caller owns (and eventually closes) the descriptor.
 */
export function tryFlock(fd: number, mode: FlockMode = 'exclusive'): boolean {
  try {
    fsExt().flockSync(fd, mode === 'exclusive' ? 'exnb' : 'shnb');
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
    throw e;
  }
}

/** Open (creating owner-only, never through a link) a lock file: a new open file description, holding no lock yet. */
export function openLockFile(path: string): number {
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    if (!fstatSync(fd).isFile()) throw conflict('lock_not_regular', 'A lock path is not a regular file.');
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return fd;
}

/** Take a lock without waiting; `undefined` when a conflicting lock is held through another open file description. */
export function tryLock(path: string, mode: FlockMode): HeldLock | undefined {
  const fd = openLockFile(path);
  try {
    if (!tryFlock(fd, mode)) {
      closeSync(fd);
      return undefined;
    }
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  let held = true;
  return {
    path,
    fd,
    release() {
      if (!held) return;
      held = false;
      // Closing the descriptor releases the flock; the file stays.
      closeSync(fd);
    },
  };
}

/** Take an exclusive lock without waiting; `undefined` when another open file description holds it. */
export const tryLockExclusive = (path: string): HeldLock | undefined => tryLock(path, 'exclusive');

/** Take a shared lock without waiting; `undefined` while another open file description holds it exclusively. */
export const tryLockShared = (path: string): HeldLock | undefined => tryLock(path, 'shared');

/**
 * Run `fn` holding an exclusive lock on the lock file `name` in `dir`, waiting as long as another
 * open file description holds it. `dir` is created (owner-only) when missing, the lock file is
 * created owner-only and never followed through a link; the lock is released when `fn` returns or
 * throws.
 */
export function withExclusiveLock<T>(dir: string, name: string, fn: () => T): T {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fd = openSync(join(dir, name), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    fsExt().flockSync(fd, 'ex');
    return fn();
  } finally {
    closeSync(fd);
  }
}
