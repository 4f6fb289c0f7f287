/**
 * The root-wide Goal-scoped stores of a runtime root — sessions, effects, quota, timers — each
 * owner over the port its provider's row opens where the root's configuration says
 * (root-store-location.ts): SQLite files in the root as always, or a database service's tables.
 * A Goal's work store is opened per Goal by the work owner (`openGoalWork`), on the same choice.
 */
import * as effectOwner from './effect/index.js';
import { LAYOUT } from './layout.js';
import { providerOf } from './providers/index.js';
import * as quotaOwner from './quota/index.js';
import { rootStoreLocation } from './root-store-location.js';
import * as schedulerOwner from './scheduler/index.js';
import * as sessionOwner from './session/index.js';

export interface RootStores {
  /** The root's sessions (`sessions.db`, or the session tables of its database service). */
  sessions(): sessionOwner.SessionStore;
  effects(): effectOwner.EffectJournal;
  quota(): quotaOwner.QuotaLedger;
  scheduler(): schedulerOwner.SchedulerStore;
  /** Whether the store may already hold state: its file exists; a service always may. */
  holds(store: 'sessions' | 'effects'): boolean;
}

/** The stores of the root at `root`, on the provider its configuration names (read again at each open). */
export function rootStores(root: string): RootStores {
  const at = () => {
    const location = rootStoreLocation(root);
    return { ports: providerOf(location).ports, location };
  };
  return {
    sessions: () => {
      const { ports, location } = at();
      return sessionOwner.sessionStore(ports.session(root, location));
    },
    effects: () => {
      const { ports, location } = at();
      return effectOwner.effectJournal(ports.effect(root, location));
    },
    quota: () => {
      const { ports, location } = at();
      return quotaOwner.quotaLedger(ports.quota(root, location));
    },
    scheduler: () => {
      const { ports, location } = at();
      return schedulerOwner.schedulerStore(ports.scheduler(root, location));
    },
    holds: (store) => {
      const location = rootStoreLocation(root);
      return providerOf(location).holds(root, location, store === 'sessions' ? LAYOUT.sessionsDb : LAYOUT.effectsDb);
    },
  };
}
