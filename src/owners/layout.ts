/**
 * The runtime root's layout: where each decision owner keeps its state. One SQLite file per owner
 * domain and per Goal (separate revision domains and commit points); plain JSON files for the
 * small documents whose exact bytes the backup producer must witness. Owners reach their files
 * only through these names; the backup producer discovers members by walking the root.
 *
 *   engine.db                     run kernel and event log (engine)
 *   registry.json                 projects and Goal routes (registry)
 *   machine/configuration.json    machine configuration store (config)
 *   goals/<goal_id>/goal.json     Goal identity and lifecycle (goal)
 *   goals/<goal_id>/docs/         the Goal's documents, kind=goal_doc (goal)
 *   goals/<goal_id>/work.db       canonical work: Todos, history, receipts, leases, fence (work)
 *   goals/<goal_id>/work-store.json  where the Goal's work lives, when not where the root keeps it (work)
 *   sessions.db                   agent sessions, Turn journals, settlement (session)
 *   effects.db                    external effects journal and outbox (effect)
 *   quota.db                      spend ledger (quota)
 *   scheduler.db                  timers (scheduler)
 *   automations/  skills/         plain directories, captured only on request (scheduler)
 *   locks/  outbox.jsonl  exports/  backups/  daemon/   not owner state (daemon/: its token, uploads and recovery workspaces)
 *   locks/admission.gate  locks/writers.lock           the admission gate of quiescent backups (runtime/admission.ts)
 *
 * A directory holding any of the root-level owner files (`ROOT_MARKERS`) is taken for a runtime
 * root. The only place inside a root where a recovery workspace may be created is a direct child
 * of `recoveriesDir` (under daemon/, which backup never captures): a workspace anywhere else in a
 * root would be swept into its next backup as live state (e.g. a second copy of every Goal).
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { notFound, rejected } from '../core/index.js';

export const GOAL_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export function assertGoalId(goalId: string): string {
  if (!GOAL_ID.test(goalId) || goalId.includes('..')) {
    throw rejected(
      'goal_id_invalid',
      'A Goal id is 1–64 characters of a–z, 0–9, ., _ and -, starting with a letter or digit.',
      {
        nextAction: 'choose another Goal id',
      },
    );
  }
  return goalId;
}

/** Refuses (`root_not_found`) unless `root` is an existing directory (not a link to one). */
export function assertRuntimeRoot(root: string): void {
  let isDir = false;
  try {
    isDir = lstatSync(root).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir)
    throw notFound('root_not_found', 'The runtime root does not exist.', {
      nextAction: 'pass the right --root, or create this root: loopx init',
    });
}

export const LAYOUT = {
  engineDb: 'engine.db',
  registry: 'registry.json',
  machineConfiguration: join('machine', 'configuration.json'),
  goalsDir: 'goals',
  goalDir: (goalId: string) => join('goals', assertGoalId(goalId)),
  goalFile: (goalId: string) => join('goals', assertGoalId(goalId), 'goal.json'),
  goalDocsDir: (goalId: string) => join('goals', assertGoalId(goalId), 'docs'),
  workDb: (goalId: string) => join('goals', assertGoalId(goalId), 'work.db'),
  /** The Goal's own choice of work provider (`goal create --work-provider`), only when it differs from the root's. */
  workStoreLocation: (goalId: string) => join('goals', assertGoalId(goalId), 'work-store.json'),
  sessionsDb: 'sessions.db',
  effectsDb: 'effects.db',
  quotaDb: 'quota.db',
  schedulerDb: 'scheduler.db',
  automationsDir: 'automations',
  skillsDir: 'skills',
  /** Advisory lock files (flock), never unlinked; not owner state. */
  locksDir: 'locks',
  /** Held LOCK_EX by a quiescent backup for as long as admission of writers is closed. */
  admissionGate: join('locks', 'admission.gate'),
  /** Held LOCK_SH by every admitted writer for the whole of its write work. */
  writersLock: join('locks', 'writers.lock'),
  /** Not owner state: never captured as such. */
  nonState: ['locks', 'exports', 'backups', 'daemon', 'outbox.jsonl'] as readonly string[],
  /** Where the daemon's verifications create their recovery workspaces (inside daemon/, not state). */
  recoveriesDir: join('daemon', 'recoveries'),
} as const;

/** Files only a runtime root holds at its top: any one of them marks a directory as a root. */
export const ROOT_MARKERS: readonly string[] = [
  LAYOUT.engineDb,
  LAYOUT.registry,
  LAYOUT.sessionsDb,
  LAYOUT.effectsDb,
  LAYOUT.quotaDb,
  LAYOUT.schedulerDb,
  LAYOUT.machineConfiguration,
];
