/**
 * File storage for the goal owner under a runtime root:
 *
 *   goals/<goal_id>/goal.json      the record (canonical JSON, durable replace)
 *   goals/<goal_id>/docs/<name>    documents (durable replace; the record holds their digests)
 *   locks/goal-<goal_id>.lock      flock held across one Goal's read-modify-write
 *
 * Reads take no lock; every read opens the final component with O_NOFOLLOW and refuses
 * anything but a bounded regular file (`goal_unreadable`), so a link is never an absence.
 */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fsExt from 'fs-ext';
import { notFound, rejected, type LoopxError } from '../../core/errors.js';
import { writeFileDurable } from '../../core/fs.js';
import { LAYOUT } from '../layout.js';
import { GOAL_DOC_MAX_BYTES, GOAL_MAX_BYTES, isGoalId } from './codec.js';
import type { GoalStore } from './contract.js';
import { goalStoreOver, type GoalStorage, type GoalStoreOptions } from './store.js';

const unreadable = (what: string): LoopxError =>
  rejected('goal_unreadable', `A Goal file cannot be read: ${what}.`, { nextAction: 'replace the path with a regular file (restore it from a backup)' });

/** Read a path's bytes exactly once: `null` only for a confirmed absence (ENOENT). */
export function readOnce(path: string, maxBytes: number): Uint8Array | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw unreadable(code === 'ELOOP' ? 'it is a symbolic link' : (code ?? 'I/O error'));
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw unreadable('it is not a regular file');
    if (st.size > maxBytes) throw unreadable('it exceeds its size bound');
    const bytes = readFileSync(fd);
    if (bytes.byteLength > maxBytes) throw unreadable('it exceeds its size bound');
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } finally {
    closeSync(fd);
  }
}

export function fileGoalStorage(root: string): GoalStorage {
  const abs = (rel: string): string => join(root, rel);
  return {
    readGoal: (goalId) => readOnce(abs(LAYOUT.goalFile(goalId)), GOAL_MAX_BYTES),
    writeGoal(goalId, bytes) {
      mkdirSync(abs(LAYOUT.goalDir(goalId)), { recursive: true, mode: 0o700 });
      writeFileDurable(abs(LAYOUT.goalFile(goalId)), bytes);
    },
    readDoc: (goalId, name) => readOnce(join(abs(LAYOUT.goalDocsDir(goalId)), name), GOAL_DOC_MAX_BYTES),
    writeDoc(goalId, name, bytes) {
      const dir = abs(LAYOUT.goalDocsDir(goalId));
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileDurable(join(dir, name), bytes);
    },
    listGoalIds() {
      let names: string[];
      try {
        names = readdirSync(abs(LAYOUT.goalsDir));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw e;
      }
      return names.filter((id) => {
        if (!isGoalId(id)) return false;
        try {
          return lstatSync(abs(LAYOUT.goalFile(id))).isFile();
        } catch {
          return false;
        }
      });
    },
    withGoalLock(goalId, fn) {
      const dir = abs('locks');
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const fd = openSync(join(dir, `goal-${goalId}.lock`), constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      try {
        fsExt.flockSync(fd, 'ex');
        return fn();
      } finally {
        closeSync(fd);
      }
    },
  } satisfies GoalStorage;
}

/** The file-backed goal owner; `registry` is the root's registry owner (normally openFileRegistry(root)). */
export function openFileGoalStore(root: string, options: GoalStoreOptions): GoalStore {
  let isDir = false;
  try {
    isDir = lstatSync(root).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw notFound('root_not_found', 'The runtime root does not exist.', { nextAction: 'run loopx init, or pass the right --root' });
  return goalStoreOver(fileGoalStorage(root), options) satisfies GoalStore;
}
