/**
 * The owners of one runtime root, opened together: the registry, the machine
 * configuration, the Goals, the sessions and the effect journal (a Goal's work store is opened per
 * Goal through the work owner). Callers close what they open; a failed open closes what it opened.
 */
import * as configOwner from './config/index.js';
import type * as effectOwner from './effect/index.js';
import * as goalOwner from './goal/index.js';
import * as registryOwner from './registry/index.js';
import { rootStores } from './root-stores.js';
import type * as sessionOwner from './session/index.js';

export interface RootOwners {
  readonly registry: registryOwner.Registry;
  readonly config: configOwner.ConfigStore;
  readonly goals: goalOwner.GoalStore;
  readonly sessions: sessionOwner.SessionStore;
  readonly effects: effectOwner.EffectJournal;
  close(): void;
}

export { STORE_CONFIG_NAMESPACE } from './root-store-location.js';

/**
 * The owners of a runtime root (a Goal's work store is opened per Goal): its files, and its
 * sessions and effect journal on the provider its configuration names (SQLite or PostgreSQL).
 */
export function openRootOwners(root: string): RootOwners {
  const registry = registryOwner.openFileRegistry(root);
  const config = configOwner.openFileConfigStore(root);
  const stores = rootStores(root);
  const goals = goalOwner.openFileGoalStore(root, { registry });
  const sessions = stores.sessions();
  let effects: effectOwner.EffectJournal;
  try {
    effects = stores.effects();
  } catch (e) {
    sessions.close();
    throw e;
  }
  return {
    registry,
    config,
    goals,
    sessions,
    effects,
    close() {
      sessions.close();
      effects.close();
    },
  };
}
