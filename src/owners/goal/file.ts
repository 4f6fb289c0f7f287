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
import { lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  rejected,
  type LoopxError,
  withExclusiveLock,
  writeFileDurable,
  readRegularFileOnce,
} from '../../core/index.js';
import { assertRuntimeRoot, LAYOUT } from '../layout.js';
import { GOAL_DOC_MAX_BYTES, GOAL_MAX_BYTES, isGoalId } from './codec.js';
import type { GoalStore } from './contract.js';
import { goalStoreOver, type GoalStorage, type GoalStoreOptions } from './store.js';

const unreadable = (what: string): LoopxError =>
  rejected('goal_unreadable', `A Goal file cannot be read: ${what}.`, {
    nextAction: 'replace the path with a regular file (restore it from a backup)',
  });

/** Read a path's bytes exactly once: `null` only for a confirmed absence (ENOENT). */
export function readOnce(path: string, maxBytes: number): Uint8Array | null {
  return readRegularFileOnce(path, maxBytes, { unreadable, tooLarge: 'it exceeds its size bound' });
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
    withGoalLock: (goalId, fn) => withExclusiveLock(abs('locks'), `goal-${goalId}.lock`, fn),
  } satisfies GoalStorage;
}

/** The file-backed goal owner; `registry` is the root's registry owner (normally openFileRegistry(root)). */
export function openFileGoalStore(root: string, options: GoalStoreOptions): GoalStore {
  assertRuntimeRoot(root);
  return goalStoreOver(fileGoalStorage(root), options) satisfies GoalStore;
}
