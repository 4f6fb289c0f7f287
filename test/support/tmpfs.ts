/**
 * A small real file system for out-of-space tests: a tmpfs of a fixed size mounted by the test
 * itself (needs root, as CI has). Where mounting is impossible the suite is skipped — except under
 * CI=true, where it must run: `mountable()` then throws instead of answering false.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface Tmpfs {
  readonly dir: string;
  /** Fill the file system completely (a file `name` of 1 MiB, then 4 KiB, writes until ENOSPC). */
  fill(name?: string): void;
  /** Leave about `bytes` free: a filler file of the rest (tmpfs counts 4 KiB pages). */
  leave(bytes: number, name?: string): void;
  free(): number;
  unmount(): void;
}

export function mountTmpfs(dir: string, bytes: number): Tmpfs | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { encoding: 'utf8' });
  if (r.status !== 0) {
    if (process.env.CI === 'true') throw new Error(`cannot mount a tmpfs under CI (${r.stderr.trim()})`);
    return undefined;
  }
  const free = (): number => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  };
  const writeUpTo = (path: string, limit: number): void => {
    const fd = openSync(path, 'w', 0o600);
    try {
      let left = limit;
      for (const chunk of [1024 * 1024, 4096]) {
        const buf = Buffer.alloc(chunk, 0x5a);
        while (left >= chunk) {
          try {
            writeSync(fd, buf);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
            break;
          }
          left -= chunk;
        }
      }
    } finally {
      closeSync(fd);
    }
  };
  return {
    dir,
    free,
    fill: (name = 'filler') => writeUpTo(join(dir, name), Number.MAX_SAFE_INTEGER),
    leave: (keep, name = 'filler') => writeUpTo(join(dir, name), Math.max(0, free() - keep)),
    unmount: () => {
      if (spawnSync('umount', [dir]).status !== 0) spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
