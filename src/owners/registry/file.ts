/**
 * The file-backed registry: `<root>/registry.json`, written canonically and durably under the
 * flock `<root>/locks/registry.lock` (held only across read-compare-write, released by process
 * death). Reads take no lock: a rename is atomic, so a read sees one whole version.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fsExt from 'fs-ext';
import { notFound, rejected, type LoopxError } from '../../core/errors.js';
import { writeFileDurable } from '../../core/fs.js';
import { LAYOUT } from '../layout.js';
import { checkRevision, encodeRegistry, exactRead, REGISTRY_MAX_BYTES, toRead, withGoal, withGoalStatus, withProject } from './codec.js';
import type { Registry, RegistryDocument, RegistryExactRead, RegistryRead } from './contract.js';

const unreadable = (what: string): LoopxError =>
  rejected('registry_unreadable', `registry.json cannot be read as a registry: ${what}.`, {
    nextAction: 'replace the registry path with a regular file (restore it from a backup)',
  });

/**
 * Read a path's bytes exactly once: `null` only for a confirmed absence (ENOENT). A link, a
 * non-regular file or an oversized file is unreadable, never absent.
 */
export function readRegistryBytes(path: string): Uint8Array | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw unreadable('it is a symbolic link');
    throw unreadable(code ?? 'I/O error');
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw unreadable('it is not a regular file');
    if (st.size > REGISTRY_MAX_BYTES) throw unreadable('it exceeds 16 MiB');
    const bytes = readFileSync(fd);
    if (bytes.byteLength > REGISTRY_MAX_BYTES) throw unreadable('it exceeds 16 MiB');
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } finally {
    closeSync(fd);
  }
}

function withRootLock<T>(root: string, name: string, fn: () => T): T {
  const dir = join(root, 'locks');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const fd = openSync(join(dir, name), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    fsExt.flockSync(fd, 'ex');
    return fn();
  } finally {
    closeSync(fd);
  }
}

export function openFileRegistry(root: string): Registry {
  let isDir = false;
  try {
    isDir = lstatSync(root).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw notFound('root_not_found', 'The runtime root does not exist.', { nextAction: 'run loopx init, or pass the right --root' });
  const path = join(root, LAYOUT.registry);
  const readExact = (): RegistryExactRead => exactRead(readRegistryBytes(path));
  const read = (): RegistryRead => toRead(readExact());

  const mutate = (expectedRevision: string, change: (doc: RegistryDocument) => RegistryDocument): RegistryRead =>
    withRootLock(root, 'registry.lock', () => {
      const current = readExact();
      checkRevision(current.revision, expectedRevision);
      const bytes = encodeRegistry(change(current.value));
      if (current.bytes !== null && Buffer.from(bytes).equals(current.bytes)) return toRead(current);
      writeFileDurable(path, bytes);
      return toRead(exactRead(bytes));
    });

  return {
    read,
    readExact,
    addProject: (project, expectedRevision) => mutate(expectedRevision, (doc) => withProject(doc, project)),
    registerGoal: (goal, expectedRevision) => mutate(expectedRevision, (doc) => withGoal(doc, goal)),
    updateGoalStatus: (update, expectedRevision) => mutate(expectedRevision, (doc) => withGoalStatus(doc, update)),
  } satisfies Registry;
}
