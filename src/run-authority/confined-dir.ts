/**
 * A directory bound by identity, not by name.
 *
 * Node has no openat(2). The technique (Linux): open the directory once (O_DIRECTORY|O_NOFOLLOW)
 * and keep that descriptor for the object's lifetime; every later access goes through
 * `/proc/self/fd/<fd>/<name>`, which the kernel resolves through the descriptor to the retained
 * directory object itself — never through the original path. Renaming the directory, replacing
 * it with another one, or swapping a symlink into its place therefore cannot redirect a read or
 * a write. On top of that, every operation re-proves identity: `fstat(fd)` must still show the
 * retained device+inode, and the configured path must still `lstat` to that same object (a
 * substituted path fails closed with `authority_dir_substituted` rather than silently acting on
 * an unlinked directory). Names are single components; the final component is opened with
 * O_NOFOLLOW, so a planted symlink is refused (ELOOP).
 *
 * Opening validates the whole ancestry first (see `validateAncestry`). Creation sets a newly made
 * leaf to 0700; an existing leaf is only validated (exactly 0700, owned by the current user),
 * never chmodded.
 *
 * Written by hand because no maintained npm package offers descriptor-relative file access.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  linkSync,
  readdirSync,
  renameSync,
  unlinkSync,
  type Stats,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { isAbsolute, resolve, sep } from 'node:path';
import { conflict, internal, LoopxError, rejected, faultPoint, writeNewFileSync } from '../core/index.js';
import { authorityClosed, authorityMissing } from './errors.js';

const STICKY = 0o1000;
const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}$/;

export interface DirIdentity {
  readonly dev: number;
  readonly ino: number;
}

const uid = (): number => (process.getuid ? process.getuid() : -1);

const unsafe = (code: string, message: string): LoopxError =>
  rejected(code, message, {
    nextAction: 'choose an authority directory whose every ancestor is owned by root or you and not writable by others',
  });

/** An entry that is a link (or a directory where a file belongs): never followed. */
const entrySymlink = (name: string): LoopxError =>
  unsafe('authority_entry_symlink', `The authority entry ${name} is a symbolic link or not what it should be.`);

const entryUnsafe = (name: string, what: string): LoopxError =>
  unsafe('authority_entry_unsafe', `The authority entry ${name} is not ${what} of yours.`);

const dirSubstituted = (when: string): LoopxError =>
  conflict(
    'authority_dir_substituted',
    `The run authority directory was renamed or replaced ${when}; nothing was read or written.`,
    {
      nextAction: 'find out who moved or replaced it, restore it, then retry',
    },
  );

/**
 * Walk every component of `absPath` from `/` (lstat, no following): each must be a directory (no
 * symlinks anywhere), owned by root or the current user, and not group/other-writable unless it
 * is sticky — then the entry below it must itself be owned by root or the user, which the owner
 * rule enforces for the next component. Returns the leaf's stats, or undefined if the leaf does
 * not exist (its parent is then fully validated).
 */
export function validateAncestry(
  absPath: string,
  options: { createParents?: boolean; mustExist?: boolean } = {},
): Stats | undefined {
  if (process.platform !== 'linux')
    throw rejected('authority_platform_unsupported', 'The OS-backed run authority needs Linux (/proc/self/fd).');
  if (!isAbsolute(absPath))
    throw internal('authority_path_relative', 'Authority paths are resolved before validation.');
  const parts = absPath.split(sep).filter(Boolean);
  const me = uid();
  let current = '/';
  let st = lstatSync(current);
  for (let i = 0; i <= parts.length; i++) {
    if (i > 0) {
      current = `${current === '/' ? '' : current}/${parts[i - 1]}`;
      try {
        st = lstatSync(current);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' && i === parts.length) return undefined;
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' && options.createParents) {
          // Made owner-only inside a parent this walk has already validated, then validated itself.
          mkdirSync(current, { mode: 0o700 });
          st = lstatSync(current);
          if (!st.isSymbolicLink() && st.isDirectory() && st.uid === me && (st.mode & 0o022) !== 0) fchmodPath(current);
          i--;
          current = current.slice(0, current.lastIndexOf('/')) || '/';
          continue;
        }
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' && options.mustExist) {
          throw authorityMissing();
        }
        if ((e as NodeJS.ErrnoException).code === 'ENOENT')
          throw rejected('authority_parent_missing', 'A parent of the authority directory does not exist.', {
            nextAction: 'create the parent directories first',
          });
        throw e;
      }
    }
    const isLeaf = i === parts.length;
    if (st.isSymbolicLink())
      throw unsafe('authority_path_symlink', 'The authority path contains a symbolic link; pass its real path.');
    if (!st.isDirectory())
      throw unsafe('authority_path_not_directory', 'A component of the authority path is not a directory.');
    if (!isLeaf && st.uid !== 0 && st.uid !== me)
      throw unsafe('authority_ancestor_foreign_owner', 'A directory on the authority path is owned by another user.');
    if (!isLeaf && (st.mode & 0o022) !== 0 && (st.mode & STICKY) === 0) {
      throw unsafe(
        'authority_ancestor_writable',
        'A directory on the authority path is writable by other users and not sticky.',
      );
    }
  }
  return st;
}

/** open(2) with O_NOFOLLOW whose symlink refusal (ELOOP, or ENOTDIR for O_DIRECTORY) is a typed error. */
function openNoFollow(path: string, flags: number, mode: number | undefined, name: string): number {
  try {
    return openSync(path, flags, mode);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw entrySymlink(name);
    throw e;
  }
}

/** Tighten a directory this process just created (umask may have left it group/other-writable). */
function fchmodPath(path: string): void {
  const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}

type EntryName = { readonly path: string } | { readonly parent: ConfinedDir; readonly entry: string };

export class ConfinedDir {
  readonly #fd: number;
  readonly identity: DirIdentity;
  /** How the object is named: the validated absolute path (a root) or a name in a parent. Used only to re-prove identity, never to reach files. */
  readonly #name: EntryName;
  #closed = false;

  private constructor(fd: number, identity: DirIdentity, name: EntryName) {
    this.#fd = fd;
    this.identity = identity;
    this.#name = name;
  }

  /** Open (and with `create`, make) a private directory after validating its whole ancestry. */
  static open(path: string, options: { create: boolean; createParents?: boolean }): ConfinedDir {
    const abs = resolve(path);
    let leaf = validateAncestry(abs, { createParents: options.createParents ?? false, mustExist: !options.create });
    if (!leaf) {
      if (!options.create) throw authorityMissing();
      let created = true;
      try {
        mkdirSync(abs, { mode: 0o700 });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        created = false; // someone else made it first: validate only
      }
      leaf = lstatSync(abs);
      // A leaf we just created gets exactly 0700 whatever the umask; an existing one is never chmodded.
      if (
        created &&
        !leaf.isSymbolicLink() &&
        leaf.isDirectory() &&
        leaf.uid === uid() &&
        (leaf.mode & 0o7777) !== 0o700
      ) {
        const fd = openSync(abs, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
        try {
          const st = fstatSync(fd);
          if (st.ino === leaf.ino && st.dev === leaf.dev) {
            // fchmod on the descriptor we just proved is the new leaf.
            fchmodSync(fd, 0o700);
          }
        } finally {
          closeSync(fd);
        }
      }
      leaf = validateAncestry(abs)!;
    }
    if (leaf.uid !== uid())
      throw unsafe('authority_not_owned', 'The authority directory is not owned by the current user.');
    if ((leaf.mode & 0o7777) !== 0o700) {
      throw rejected(
        'authority_mode_unsafe',
        'The authority directory must have mode exactly 0700; loopx never changes an existing one.',
        {
          nextAction: 'inspect the directory, then chmod 700 it yourself if it is yours',
        },
      );
    }
    const fd = openSync(abs, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const st = fstatSync(fd);
    if (st.dev !== leaf.dev || st.ino !== leaf.ino) {
      closeSync(fd);
      throw dirSubstituted('while it was being opened');
    }
    return new ConfinedDir(fd, { dev: st.dev, ino: st.ino }, { path: abs });
  }

  /** Prove the descriptor still refers to the retained object and the path still names it. */
  verify(): void {
    if (this.#closed) throw authorityClosed();
    const name = this.#name;
    if ('parent' in name) name.parent.verify();
    const st = fstatSync(this.#fd);
    const byPath = lstatSync('parent' in name ? name.parent.#at(name.entry) : name.path, { throwIfNoEntry: false });
    if (
      st.dev !== this.identity.dev ||
      st.ino !== this.identity.ino ||
      !byPath ||
      byPath.isSymbolicLink() ||
      byPath.dev !== this.identity.dev ||
      byPath.ino !== this.identity.ino
    ) {
      throw dirSubstituted('after it was opened');
    }
  }

  /** Descriptor-relative path of a single-component entry. */
  #at(name: string): string {
    if (!NAME.test(name))
      throw internal('authority_name_invalid', `Invalid authority entry name ${JSON.stringify(name)}.`);
    return `/proc/self/fd/${this.#fd}/${name}`;
  }

  /** A private subdirectory (created 0700 if missing), itself retained by descriptor. */
  subdir(name: string): ConfinedDir {
    this.verify();
    const p = this.#at(name);
    try {
      mkdirSync(p, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const fd = openNoFollow(p, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW, undefined, name);
    const st = fstatSync(fd);
    if (st.uid !== uid() || (st.mode & 0o7777) !== 0o700) {
      closeSync(fd);
      throw unsafe('authority_subdir_unsafe', `The authority's ${name} directory is not private (0700, yours).`);
    }
    return new ConfinedDir(fd, { dev: st.dev, ino: st.ino }, { parent: this, entry: name });
  }

  list(): string[] {
    this.verify();
    return readdirSync(`/proc/self/fd/${this.#fd}`)
      .filter((n) => NAME.test(n))
      .sort();
  }

  /** Read a private regular file (0600, ours); undefined if absent. */
  read(name: string): Buffer | undefined {
    this.verify();
    let fd: number;
    try {
      // O_NONBLOCK: a FIFO planted under the name is opened (then refused below), never waited on.
      fd = openSync(this.#at(name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      if (code === 'ELOOP') throw entrySymlink(name);
      throw e;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.uid !== uid() || (st.mode & 0o077) !== 0)
        throw entryUnsafe(name, 'a private regular file');
      return readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Atomically and durably replace (or, with `exclusive`, create) an entry: write a new file,
   * fsync it, rename it into place (or link, when exclusive), fsync the directory. `fault` names
   * the crash points around the rename for tests.
   */
  write(
    name: string,
    data: Uint8Array | string,
    options: { exclusive?: boolean; noSync?: boolean; fault?: string } = {},
  ): void {
    this.verify();
    // Temp names start with a dot, outside the entry-name space (list() never shows them).
    const tmp = `/proc/self/fd/${this.#fd}/.tmp-${randomBytes(8).toString('hex')}`;
    writeNewFileSync(tmp, data, { mode: 0o600, ...(options.noSync ? { noSync: true } : {}) });
    if (options.fault) faultPoint(`${options.fault}.before-rename`);
    try {
      if (options.exclusive) {
        try {
          linkSync(tmp, this.#at(name));
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'EEXIST')
            throw conflict('authority_entry_exists', `The authority entry ${name} already exists.`);
          throw e;
        } finally {
          unlinkSync(tmp);
        }
      } else {
        renameSync(tmp, this.#at(name));
      }
    } catch (e) {
      try {
        unlinkSync(tmp);
      } catch {
        /* already gone */
      }
      throw e;
    }
    if (!options.noSync) fsyncSync(this.#fd);
    if (options.fault) faultPoint(`${options.fault}.after-rename`);
  }

  /** fsync the directory itself: an entry another writer linked is durable before this one answers from it. */
  sync(): void {
    this.verify();
    fsyncSync(this.#fd);
  }

  remove(name: string): void {
    this.verify();
    try {
      unlinkSync(this.#at(name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    fsyncSync(this.#fd);
  }

  /** Open (creating 0600) a lock file and return its descriptor; the caller flocks and closes it. */
  openLockFile(name: string): number {
    this.verify();
    const fd = openNoFollow(this.#at(name), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600, name);
    const st = fstatSync(fd);
    if (!st.isFile() || st.uid !== uid()) {
      closeSync(fd);
      throw entryUnsafe(name, 'a regular file');
    }
    return fd;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }
}
