/**
 * The root-wide Goal-scoped stores of a runtime root — sessions, effects, quota, timers — on the
 * provider its configuration names (root-store-location.ts): SQLite files in the root as always,
 * or PostgreSQL ports on the root's shared pool. A Goal's work store is opened per Goal by the
 * work owner (`openGoalWork`), on the same choice.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as effectOwner from './effect/index.js';
import { LAYOUT } from './layout.js';
import * as quotaOwner from './quota/index.js';
import { rootPostgres, rootStoreLocation } from './root-store-location.js';
import * as schedulerOwner from './scheduler/index.js';
import * as sessionOwner from './session/index.js';

export interface RootStores {
  /** The root's sessions (`sessions.db`, or the session tables of its PostgreSQL schema). */
  sessions(): sessionOwner.SessionStore;
  effects(): effectOwner.EffectJournal;
  quota(): quotaOwner.QuotaLedger;
  scheduler(): schedulerOwner.SchedulerStore;
  /** Whether the store may already hold state: its SQLite file exists; PostgreSQL always may. */
  holds(store: 'sessions' | 'effects'): boolean;
}

/** The stores of the root at `root`, on the provider its configuration names. */
export function rootStores(root: string): RootStores {
  const at = (file: string) => join(root, file);
  return {
    sessions: () => {
      const db = rootPostgres(root);
      return db ? sessionOwner.sessionStore(sessionOwner.openPgSessionPort(db)) : sessionOwner.openSqliteSessionStore(at(LAYOUT.sessionsDb));
    },
    effects: () => {
      const db = rootPostgres(root);
      return db ? effectOwner.effectJournal(effectOwner.openPgEffectPort(db)) : effectOwner.openSqliteEffectJournal(at(LAYOUT.effectsDb));
    },
    quota: () => {
      const db = rootPostgres(root);
      return db ? quotaOwner.quotaLedger(quotaOwner.openPgQuotaPort(db)) : quotaOwner.openSqliteQuotaLedger(at(LAYOUT.quotaDb));
    },
    scheduler: () => {
      const db = rootPostgres(root);
      return db ? schedulerOwner.schedulerStore(schedulerOwner.openPgSchedulerPort(db)) : schedulerOwner.openSqliteSchedulerStore(at(LAYOUT.schedulerDb));
    },
    holds: (store) => rootStoreLocation(root).provider !== 'sqlite' || existsSync(at(store === 'sessions' ? LAYOUT.sessionsDb : LAYOUT.effectsDb)),
  };
}
