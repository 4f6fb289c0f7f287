/** In-memory reference goal owner: the same decisions over maps of encoded bytes (never shared with callers). */
import type { GoalStore } from './contract.js';
import { goalStoreOver, type GoalStorage, type GoalStoreOptions } from './store.js';

export function memoryGoalStorage(): GoalStorage {
  const goals = new Map<string, Uint8Array>();
  const docs = new Map<string, Uint8Array>();
  const docKey = (goalId: string, name: string): string => `${goalId}/${name}`;
  const copy = (b: Uint8Array | undefined): Uint8Array | null => (b === undefined ? null : new Uint8Array(b));
  return {
    readGoal: (goalId) => copy(goals.get(goalId)),
    writeGoal: (goalId, bytes) => void goals.set(goalId, new Uint8Array(bytes)),
    readDoc: (goalId, name) => copy(docs.get(docKey(goalId, name))),
    writeDoc: (goalId, name, bytes) => void docs.set(docKey(goalId, name), new Uint8Array(bytes)),
    listGoalIds: () => [...goals.keys()],
    withGoalLock: (_goalId, fn) => fn(),
  } satisfies GoalStorage;
}

export function memoryGoalStore(options: GoalStoreOptions): GoalStore {
  return goalStoreOver(memoryGoalStorage(), options) satisfies GoalStore;
}
