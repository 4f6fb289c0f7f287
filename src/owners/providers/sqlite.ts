/**
 * The SQLite provider's row: a root's Goal state as files of the root — one database per owner
 * domain (`sessions.db`, `effects.db`, `quota.db`, `scheduler.db`) and one per Goal
 * (`goals/<goal_id>/work.db`), created on first open. It is the default: a root whose
 * configuration records no store keeps its state here, and choosing it records nothing.
 */
import { existsSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ensurePrivateDir, fsyncDir } from '../../core/index.js';
import { SQLITE_PROVIDER } from '../../store/index.js';
import * as effectOwner from '../effect/index.js';
import { LAYOUT } from '../layout.js';
import * as quotaOwner from '../quota/index.js';
import * as schedulerOwner from '../scheduler/index.js';
import * as sessionOwner from '../session/index.js';
import * as workOwner from '../work/index.js';
import type { StoreProvider } from './contract.js';

/** SQLite needs no field to say where: the root is the place. */
export interface SqliteLocation {
  readonly provider: typeof SQLITE_PROVIDER;
}

const HERE: SqliteLocation = { provider: SQLITE_PROVIDER };

/** Moves a retired lifetime's `work.db` (and any sidecar) to `goals/<goal_id>/retired/<goal_instance_id>/`, kept as history. */
function moveAside(root: string, goalId: string, retiredInstanceId: string): void {
  const db = join(root, LAYOUT.workDb(goalId));
  if (!existsSync(db)) return;
  const aside = join(root, LAYOUT.goalDir(goalId), 'retired', retiredInstanceId);
  ensurePrivateDir(join(root, LAYOUT.goalDir(goalId), 'retired'));
  ensurePrivateDir(aside);
  // Sidecars first: the main file moved last, so a crash in between leaves the store where it was or fully set aside.
  for (const suffix of ['-wal', '-shm', '-journal'])
    if (existsSync(`${db}${suffix}`)) renameSync(`${db}${suffix}`, join(aside, `work.db${suffix}`));
  renameSync(db, join(aside, 'work.db'));
  fsyncDir(aside);
  fsyncDir(dirname(db));
}

export const SQLITE: StoreProvider<SqliteLocation, SqliteLocation> = {
  name: SQLITE_PROVIDER,
  inRoot: true,
  describe: () => '',
  root: {
    decode: () => HERE,
    choose: () => ({ location: HERE }),
  },
  holds: (root, _location, file) => existsSync(join(root, file)),
  ports: {
    session: (root) => sessionOwner.openSqliteSessionPort(join(root, LAYOUT.sessionsDb)),
    effect: (root) => effectOwner.openSqliteEffectPort(join(root, LAYOUT.effectsDb)),
    quota: (root) => quotaOwner.openSqliteQuotaPort(join(root, LAYOUT.quotaDb)),
    scheduler: (root) => schedulerOwner.openSqliteSchedulerPort(join(root, LAYOUT.schedulerDb)),
  },
  work: {
    ofRoot: () => HERE,
    decode: (recorded) => (Object.keys(recorded).join(',') === 'provider' ? HERE : undefined),
    same: () => true,
    answers: () => true,
    choose: () => HERE,
    ready: async () => {},
    // A missing file is created on first open (`create` is for stores a service keeps).
    open: async (place, o) =>
      workOwner.openSqliteWorkProvider(join(place.root, LAYOUT.workDb(place.goal_id)), {
        goal_id: o.goal_id,
        ...(o.expected_incarnation === undefined ? {} : { expected_incarnation: o.expected_incarnation }),
        ...(o.expected_store_identity === undefined ? {} : { expected_store_identity: o.expected_store_identity }),
        ...(o.synchronous === undefined ? {} : { synchronous: o.synchronous }),
      }),
    setAside: (place, retiredInstanceId) => (moveAside(place.root, place.goal_id, retiredInstanceId), null),
  },
};
