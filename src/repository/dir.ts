/**
 * A directory repository (another disk, a mounted share): the storage port (contract.ts) over a
 * private directory tree, one file per object.
 *
 *   - create: the bytes go to a private temporary file under `.tmp/`, fsynced, then link(2) to the
 *     key — which fails instead of replacing an existing name — and the directory is fsynced. An
 *     interrupted create leaves only a temporary file, which no listing shows.
 *   - replace / remove with a tag: under an exclusive flock(2) on `.lock` (released by process
 *     death), the current file's tag is compared, then a rename(2) over it (or an unlink).
 *   - tags: the file's inode, size and modification time in nanoseconds. Objects are never written
 *     in place, so a new version is always a new inode.
 *   - every path component is checked to be a real directory (never a symbolic link) and objects
 *     are opened with O_NOFOLLOW: a link planted in the repository cannot redirect a read or write.
 */
import { randomBytes } from 'node:crypto';
import { constants, type BigIntStats } from 'node:fs';
import { copyFile, link, lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fsyncDir, tryLock, type HeldLock } from '../core/index.js';
import { checkKey, type DirLocation, type ObjectBody, type ObjectInfo, type RepositoryObjects } from './contract.js';
import { notInitialized, objectChanged, objectExists, objectMissing } from './codes.js';

const TMP = '.tmp';
const LOCK = '.lock';
/** How long replace/remove wait for another process's short critical section (never a maintenance lock). */
const LOCK_WAIT_MS = 30_000;

const etagOf = (st: BigIntStats): string => `${st.ino.toString(16)}-${st.size}-${st.mtimeNs}`;
const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

export async function openDir(location: DirLocation, create: boolean, label: string): Promise<RepositoryObjects> {
  const root = location.path;
  if (create) await mkdir(root, { recursive: true, mode: 0o700 });
  const st = await lstat(root).catch((e: unknown) => {
    if (isMissing(e)) throw notInitialized(label);
    throw e;
  });
  if (!st.isDirectory()) throw notInitialized(label);
  await mkdir(join(root, TMP), { mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'EEXIST') throw e;
  });
  return new DirObjects(root);
}

class DirObjects implements RepositoryObjects {
  readonly provider = 'dir';
  constructor(private readonly root: string) {}

  /** The path of `key`, its parent directories checked (and with `make`, created) as real directories. */
  private async pathOf(key: string, make = false): Promise<string> {
    const parts = checkKey(key).split('/');
    let dir = this.root;
    for (let i = 0; i < parts.length - 1; i++) {
      dir = join(dir, parts[i]!);
      if (make)
        await mkdir(dir, { mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'EEXIST') throw e;
        });
      const st = await lstat(dir).catch((e: unknown) => (isMissing(e) ? undefined : Promise.reject(e)));
      if (st === undefined) return join(dir, ...parts.slice(i + 1)); // absent: nothing below it either
      if (!st.isDirectory()) throw objectMissing(key);
    }
    return join(dir, parts[parts.length - 1]!);
  }

  private async stat(key: string): Promise<BigIntStats | undefined> {
    const st = await lstat(await this.pathOf(key), { bigint: true }).catch((e: unknown) =>
      isMissing(e) ? undefined : Promise.reject(e),
    );
    if (st !== undefined && !st.isFile()) throw objectMissing(key);
    return st;
  }

  /** A new fsynced private file under .tmp holding `body`. */
  private async staged(body: ObjectBody): Promise<string> {
    const tmp = join(this.root, TMP, randomBytes(12).toString('hex'));
    if (body instanceof Uint8Array) {
      const fh = await open(
        tmp,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      );
      try {
        await fh.writeFile(body);
        await fh.sync();
      } finally {
        await fh.close();
      }
      return tmp;
    }
    await copyFile(body.path, tmp, constants.COPYFILE_EXCL);
    const fh = await open(tmp, constants.O_RDWR | constants.O_NOFOLLOW);
    try {
      await fh.chmod(0o600);
      if ((await fh.stat()).size !== body.size) throw new Error('the source file changed size while it was copied');
      await fh.sync();
    } finally {
      await fh.close();
    }
    return tmp;
  }

  async create(key: string, body: ObjectBody): Promise<ObjectInfo> {
    const path = await this.pathOf(key, true);
    const tmp = await this.staged(body);
    try {
      await link(tmp, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw objectExists(key);
      throw e;
    } finally {
      await unlink(tmp).catch(() => {});
    }
    fsyncDir(join(path, '..'));
    return this.infoOf(key);
  }

  private async infoOf(key: string): Promise<ObjectInfo> {
    const st = await this.stat(key);
    if (st === undefined) throw objectMissing(key);
    return { key, size: Number(st.size), etag: etagOf(st), modified: st.mtime.toISOString() };
  }

  /** Run `fn` holding the repository's short exclusive lock. */
  private async locked<T>(fn: () => Promise<T>): Promise<T> {
    let held: HeldLock | undefined;
    for (let waited = 0; (held = tryLock(join(this.root, LOCK), 'exclusive')) === undefined; waited += 10) {
      if (waited > LOCK_WAIT_MS) throw new Error('the directory repository stayed locked by another process');
      await sleep(10);
    }
    try {
      return await fn();
    } finally {
      held.release();
    }
  }

  async replace(key: string, etag: string, body: Uint8Array): Promise<ObjectInfo> {
    const path = await this.pathOf(key, true);
    const tmp = await this.staged(body);
    try {
      await this.locked(async () => {
        const st = await this.stat(key);
        if (st === undefined || etagOf(st) !== etag) throw objectChanged(key);
        await rename(tmp, path);
      });
    } finally {
      await unlink(tmp).catch(() => {});
    }
    fsyncDir(join(path, '..'));
    return this.infoOf(key);
  }

  async remove(key: string, etag?: string): Promise<void> {
    const path = await this.pathOf(key);
    const removed = await this.locked(async () => {
      const st = await this.stat(key);
      if (st === undefined) return false;
      if (etag !== undefined && etagOf(st) !== etag) throw objectChanged(key);
      await unlink(path);
      return true;
    });
    if (removed) fsyncDir(join(path, '..'));
  }

  async read(key: string): Promise<Readable> {
    const path = await this.pathOf(key);
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT' || e.code === 'ELOOP') throw objectMissing(key);
      throw e;
    });
    if (!(await fh.stat()).isFile()) {
      await fh.close();
      throw objectMissing(key);
    }
    return fh.createReadStream();
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    const st = await this.stat(key);
    return st === undefined
      ? undefined
      : { key, size: Number(st.size), etag: etagOf(st), modified: st.mtime.toISOString() };
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    // Start from the deepest directory the prefix names whole; filter the rest by the prefix.
    const whole = prefix.split('/').slice(0, -1);
    yield* this.walk(whole.join('/'), prefix);
  }

  private async *walk(dirKey: string, prefix: string): AsyncIterable<ObjectInfo> {
    const dir = dirKey === '' ? this.root : join(this.root, ...dirKey.split('/'));
    const entries = await readdir(dir, { withFileTypes: true }).catch((e: unknown) =>
      isMissing(e) || (e as NodeJS.ErrnoException).code === 'ENOTDIR' ? [] : Promise.reject(e),
    );
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (e.name.startsWith('.')) continue;
      const key = dirKey === '' ? e.name : `${dirKey}/${e.name}`;
      if (e.isDirectory()) {
        if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) yield* this.walk(key, prefix);
      } else if (e.isFile() && key.startsWith(prefix)) {
        const info = await this.head(key).catch(() => undefined);
        if (info) yield info;
      }
    }
  }

  async localPath(key: string): Promise<string | undefined> {
    return (await this.stat(key)) === undefined ? undefined : this.pathOf(key);
  }

  async close(): Promise<void> {}
}
