/**
 * The file-backed registry: `<root>/registry.json`, written canonically and durably under the
 * flock `<root>/locks/registry.lock` (held only across read-compare-write, released by process
 * death). Reads take no lock: a rename is atomic, so a read sees one whole version.
 */
import { join } from 'node:path';
import {
  rejected,
  type LoopxError,
  withExclusiveLock,
  writeFileDurable,
  readRegularFileOnce,
} from '../../core/index.js';
import { assertRuntimeRoot, LAYOUT } from '../layout.js';
import {
  checkRevision,
  encodeRegistry,
  exactRead,
  REGISTRY_MAX_BYTES,
  toRead,
  withGoal,
  withGoalStatus,
  withProject,
} from './codec.js';
import type { Registry, RegistryDocument, RegistryExactRead, RegistryRead } from './contract.js';

export const unreadable = (what: string): LoopxError =>
  rejected('registry_unreadable', `registry.json cannot be read as a registry: ${what}.`, {
    nextAction: 'replace the registry path with a regular file (restore it from a backup)',
  });

/**
 * Read a path's bytes exactly once: `null` only for a confirmed absence (ENOENT). A link, a
 * non-regular file or an oversized file is unreadable, never absent.
 */
export function readRegistryBytes(path: string): Uint8Array | null {
  return readRegularFileOnce(path, REGISTRY_MAX_BYTES, { unreadable, tooLarge: 'it exceeds 16 MiB' });
}

export function openFileRegistry(root: string): Registry {
  assertRuntimeRoot(root);
  const path = join(root, LAYOUT.registry);
  const readExact = (): RegistryExactRead => exactRead(readRegistryBytes(path));
  const read = (): RegistryRead => toRead(readExact());

  const mutate = (expectedRevision: string, change: (doc: RegistryDocument) => RegistryDocument): RegistryRead =>
    withExclusiveLock(join(root, 'locks'), 'registry.lock', () => {
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
