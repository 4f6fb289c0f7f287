/**
 * The file-backed owners of one runtime root, opened together: the registry, the machine
 * configuration, the Goals, the sessions and the effect journal (a Goal's work store is opened per
 * Goal through the work owner). Callers close what they open; a failed open closes what it opened.
 */
import { join } from 'node:path';
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

/** The file-backed owners of a runtime root (a Goal's work store is opened per Goal). */
export function openRootOwners(root: string): RootOwners {
  const registry = registryOwner.openFileRegistry(root);
  const config = configOwner.openFileConfigStore(root);
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
