/**
 * Durable and private filesystem primitives. Durable writes are: write a new file exclusively,
 * fsync it, rename over the target, fsync the directory. Nothing here swallows an error.
 */
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
  constants,
} from 'node:fs';
import { homedir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { conflict, rejected, type LoopxError } from './errors.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Create (recursively) a directory whose leaf is owner-only. Existing leaves are validated, never chmodded. */
export function ensurePrivateDir(path: string): void {
  try {
    mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const st = statSync(path);
  if (!st.isDirectory())
    throw rejected('root_not_directory', 'The runtime root is not a directory.', {
      nextAction: 'choose another --root',
    });
  if ((st.mode & 0o077) !== 0) {
    throw rejected(
      'root_not_private',
      'The runtime root is readable or writable by other users (expected mode 0700).',
      {
        nextAction: 'chmod 700 the root directory, then retry',
      },
    );
  }
}

export function fsyncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface DurableWriteOptions {
  /** Refuse when the target already exists (non-overwriting publication). */
  exclusive?: boolean;
  mode?: number;
  /** Skip fsyncs (benchmarks measure both). Durable paths never set this. */
  noSync?: boolean;
}

/**
 * Create `tmp` exclusively (never following a link), write all of `data`, fsync unless `noSync`,
 * close. On failure the temp file is removed and the error rethrown. The first half of every
 * durable write here and in the run authority's confined directory.
 */
export function writeNewFileSync(
  tmp: string,
  data: Uint8Array | string,
  options: { mode?: number; noSync?: boolean } = {},
): void {
  const fd = openSync(
    tmp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    options.mode ?? PRIVATE_FILE_MODE,
  );
  try {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.byteLength) off += writeSync(fd, buf, off, buf.byteLength - off);
    if (!options.noSync) fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
}

/** Atomically and durably replace (or, with `exclusive`, create) `path` with `data`. */
export function writeFileDurable(path: string, data: Uint8Array | string, options: DurableWriteOptions = {}): void {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  writeNewFileSync(tmp, data, options);
  try {
    if (options.exclusive) {
      // link(2) fails with EEXIST instead of replacing: the non-overwriting publication primitive.
      linkExclusive(tmp, path);
      unlinkSync(tmp);
    } else {
      renameSync(tmp, path);
    }
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      /* the temp file is ours; it is already gone */
    }
    throw e;
  }
  if (!options.noSync) fsyncDir(dir);
}

/** An output file that already exists: loopx never overwrites one. */
export const destinationOccupied = (): LoopxError =>
  conflict('destination_occupied', 'The output file already exists; loopx never overwrites it.', {
    nextAction: 'choose a new output path',
  });

function linkExclusive(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
      throw destinationOccupied();
    }
    throw e;
  }
}

/**
 * The user's XDG base directory for loopx's `state` (run authority, dev receiver) or `data`
 * (backups): `$XDG_STATE_HOME` / `$XDG_DATA_HOME` when absolute, else `~/.local/state` / `~/.local/share`.
 */
export function xdgHome(kind: 'state' | 'data', env: NodeJS.ProcessEnv = process.env): string {
  const set = kind === 'state' ? env.XDG_STATE_HOME : env.XDG_DATA_HOME;
  return set && set.startsWith('/') ? set : join(homedir(), '.local', kind === 'state' ? 'state' : 'share');
}

/** The same place on disk: equal as given, or equal once links are resolved (a path that does not exist is compared as given). */
export function samePhysicalPath(a: string, b: string): boolean {
  const real = (p: string): string => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  return a === b || real(a) === real(b);
}
