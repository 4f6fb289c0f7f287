/**
 * The in-memory reference provider's row: every port's rows in plain objects of this process, kept
 * per `space` (a location names its space, so opening it again is a restart on the same state).
 * No root can choose it and no Goal can record it: it is for tests and embedding, and for the
 * conformance suites, which run every row of the table.
 */
import { randomBytes } from 'node:crypto';
import { MEMORY_PROVIDER } from '../../store/index.js';
import * as clusterOwner from '../cluster/index.js';
import * as effectOwner from '../effect/index.js';
import * as quotaOwner from '../quota/index.js';
import * as schedulerOwner from '../scheduler/index.js';
import * as sessionOwner from '../session/index.js';
import * as workOwner from '../work/index.js';
import type { StoreProvider } from './contract.js';

export interface MemoryLocation {
  readonly provider: typeof MEMORY_PROVIDER;
  /** The state's name in this process. */
  readonly space: string;
}

/** One space's state, per port (a Goal's work under its Goal id). */
export interface MemorySpace {
  readonly session: sessionOwner.MemorySessionState;
  readonly effect: effectOwner.MemoryEffectState;
  readonly quota: quotaOwner.MemoryQuotaState;
  readonly scheduler: schedulerOwner.MemorySchedulerState;
  readonly cluster: clusterOwner.MemoryClusterState;
  readonly work: Map<string, workOwner.MemoryWorkState>;
}

const spaces = new Map<string, MemorySpace>();

/** A location in a fresh space (or the named one). */
export const memoryLocation = (space = randomBytes(8).toString('hex')): MemoryLocation => ({
  provider: MEMORY_PROVIDER,
  space,
});

/** The state of `location`'s space, made on first use. */
export function memorySpace(location: MemoryLocation): MemorySpace {
  let s = spaces.get(location.space);
  if (s === undefined) {
    s = {
      session: sessionOwner.createMemorySessionState(),
      effect: effectOwner.createMemoryEffectState(),
      quota: quotaOwner.createMemoryQuotaState(),
      scheduler: schedulerOwner.createMemorySchedulerState(),
      cluster: clusterOwner.createMemoryClusterState(),
      work: new Map(),
    };
    spaces.set(location.space, s);
  }
  return s;
}

function workState(location: MemoryLocation, goalId: string): workOwner.MemoryWorkState {
  const work = memorySpace(location).work;
  let state = work.get(goalId);
  if (state === undefined) work.set(goalId, (state = workOwner.createMemoryWorkState(goalId)));
  return state;
}

export const MEMORY: StoreProvider<MemoryLocation, MemoryLocation> = {
  name: MEMORY_PROVIDER,
  inRoot: false,
  describe: () => '',
  // Never recorded in a root's configuration: a root cannot choose it.
  root: { decode: () => undefined },
  holds: () => true,
  ports: {
    session: (_root, l) => sessionOwner.memorySessionPort({ state: memorySpace(l).session }),
    effect: (_root, l) => effectOwner.memoryEffectPort({ state: memorySpace(l).effect }),
    quota: (_root, l) => quotaOwner.memoryQuotaPort({ state: memorySpace(l).quota }),
    scheduler: (_root, l) => schedulerOwner.memorySchedulerPort({ state: memorySpace(l).scheduler }),
    cluster: (l) => clusterOwner.memoryClusterPort({ state: memorySpace(l).cluster }),
  },
  work: {
    ofRoot: (root) => root,
    // Never recorded for a Goal either.
    decode: () => undefined,
    same: (a, b) => a.space === b.space,
    answers: () => true,
    ready: async () => {},
    open: async (place, o) =>
      workOwner.memoryWorkProvider({
        goal_id: o.goal_id,
        state: workState(place.location, place.goal_id),
        ...(o.expected_incarnation === undefined ? {} : { expected_incarnation: o.expected_incarnation }),
        ...(o.expected_store_identity === undefined ? {} : { expected_store_identity: o.expected_store_identity }),
      }),
    // Kept as history under `<goal_id>~retired~<instance>`, never opened as the Goal's work again.
    setAside: (place, retiredInstanceId) => {
      const work = memorySpace(place.location).work;
      const retired = work.get(place.goal_id);
      if (retired !== undefined) work.set(`${place.goal_id}~retired~${retiredInstanceId}`, retired);
      work.delete(place.goal_id);
      return null;
    },
  },
};
