/**
 * OS advisory locks (flock(2) via fs-ext; Node has no flock of its own). A lock dies with the
 * process that holds it — that is how a later process proves an earlier owner is dead. Lock files
 * are created owner-only and never unlinked: unlinking would let two processes lock two different
 * inodes under one name.
 */
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import fsExt from 'fs-ext';
import { conflict } from './errors.js';

export interface HeldLock {
  readonly path: string;
  release(): void;
}

/** Take an exclusive lock without waiting; `undefined` when another open file description holds it. */
export function tryLockExclusive(path: string): HeldLock | undefined {
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    if (!fstatSync(fd).isFile()) throw conflict('lock_not_regular', 'A lock path is not a regular file.');
    fsExt.flockSync(fd, 'exnb');
  } catch (e) {
    closeSync(fd);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return undefined;
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
