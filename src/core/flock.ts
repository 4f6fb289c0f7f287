/**
 * OS advisory locks (flock(2) via fs-ext; Node has no flock of its own). A lock dies with the
 * process that holds it — that is how a later process proves an earlier owner is dead. Lock files
 * are created owner-only and never unlinked: unlinking would let two processes lock two different
 * inodes under one name.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import fsExt from 'fs-ext';
import { conflict } from './errors.js';

export interface HeldLock {
  readonly path: string;
  release(): void;
}

/**
 * flock(fd, LOCK_EX|LOCK_NB): true when taken, false when another open file description holds
 * it. Any other failure is thrown. The caller owns (and eventually closes) the descriptor.
 */
export function tryFlock(fd: number): boolean {
  try {
    fsExt.flockSync(fd, 'exnb');
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
    throw e;
  }
}

/** Take an exclusive lock without waiting; `undefined` when another open file description holds it. */
export function tryLockExclusive(path: string): HeldLock | undefined {
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    if (!fstatSync(fd).isFile()) throw conflict('lock_not_regular', 'A lock path is not a regular file.');
    if (!tryFlock(fd)) {
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
    release() {
      if (!held) return;
      held = false;
      // Closing the descriptor releases the flock; the file stays.
      closeSync(fd);
    },
  };
}

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
    fsExt.flockSync(fd, 'ex');
    return fn();
  } finally {
    closeSync(fd);
  }
}
