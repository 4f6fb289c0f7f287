/**
 * The file-backed owners of one runtime root, opened together: the registry, the machine
 * configuration, the Goals, the sessions and the effect journal (a Goal's work store is opened per
 * Goal through the work owner). Callers close what they open; a failed open closes what it opened.
 */
import { join } from 'node:path';
import { rejected } from '../core/index.js';
import * as configOwner from './config/index.js';
import * as effectOwner from './effect/index.js';
import * as goalOwner from './goal/index.js';
import { LAYOUT } from './layout.js';
import * as registryOwner from './registry/index.js';
import * as sessionOwner from './session/index.js';

export interface RootOwners {
  readonly registry: registryOwner.Registry;
  readonly config: configOwner.ConfigStore;
  readonly goals: goalOwner.GoalStore;
  readonly sessions: sessionOwner.SessionStore;
  readonly effects: effectOwner.EffectJournal;
  close(): void;
}

/** The namespace of a root's configuration that says where its Goal state lives (`loopx init --store`). */
export const STORE_CONFIG_NAMESPACE = 'store';

/** The provider a root's configuration names for its Goal state (`sqlite` when it names none). */
export function rootStoreProvider(config: configOwner.ConfigStore): string {
  const ns = config.read().value.namespaces[STORE_CONFIG_NAMESPACE] as { provider?: unknown } | undefined;
  return typeof ns?.provider === 'string' ? ns.provider : 'sqlite';
}

/**
 * The file-backed owners of a runtime root (a Goal's work store is opened per Goal). A root whose
 * Goal state lives in PostgreSQL is not opened here: these are its SQLite stores, and writing
 * there would split its state in two (`store_not_openable`).
 */
export function openRootOwners(root: string): RootOwners {
  const registry = registryOwner.openFileRegistry(root);
  const config = configOwner.openFileConfigStore(root);
  const provider = rootStoreProvider(config);
  if (provider !== 'sqlite') {
    throw rejected(
      'store_not_openable',
      `This root keeps its Goal state in ${provider}; this loopx prepares such a root (loopx db migrate) and does Goal work only in roots on SQLite.`,
      {
        nextAction: 'keep Goal work in a root on the default store',
        details: { provider },
      },
    );
  }
  const goals = goalOwner.openFileGoalStore(root, { registry });
  const sessions = sessionOwner.openSqliteSessionStore(join(root, LAYOUT.sessionsDb));
  let effects: effectOwner.EffectJournal;
  try {
    effects = effectOwner.openSqliteEffectJournal(join(root, LAYOUT.effectsDb));
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
