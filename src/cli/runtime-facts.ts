/**
 * What the CLI's help texts and option parsers say of the runtime, repeated here so that building
 * the program — `--help`, `--version`, a usage error — loads no runtime (src/cli/main.ts).
 * test/cli/cold-start.test.ts holds each equal to the runtime's own; nothing here decides anything
 * the runtime decides again.
 */
import type { CaptureProfile } from '../runtime/index.js';

/** `--cluster-schema`'s default (runtime/cluster.ts). */
export const DEFAULT_CLUSTER_SCHEMA = 'loopx_cluster';

/**
 * The providers `init --store` (`root`) and `goal create --work-provider` (`goal_work`) take, in
 * the provider table's order, and those of them that are a database service and so take
 * `--database-url` / `--pg-schema` (runtime/store-config.ts: `storeChoices`, `takesServiceOptions`).
 */
export const STORE_CHOICES: Readonly<Record<'root' | 'goal_work', readonly string[]>> = {
  root: ['sqlite', 'postgresql'],
  goal_work: ['sqlite', 'postgresql'],
};
export const SERVICE_STORE_CHOICES: readonly string[] = ['postgresql'];

/** The statuses `todo update --status` takes, and how many Todos one update changes at most (runtime/todos.ts). */
export const TODO_STATUSES = ['open', 'done', 'blocked', 'deferred'] as const;
export const MAX_TODOS_PER_UPDATE = 100;

/** `backup-state --profile`: a capture profile, `crash-consistent` or `crash_consistent` alike (backup's `parseProfile`). */
const CAPTURE_PROFILES: readonly string[] = [
  'online',
  'quiescent',
  'crash_consistent',
] satisfies readonly CaptureProfile[];
export const parseCaptureProfile = (s: string): CaptureProfile | undefined => {
  const p = s.replace(/-/g, '_');
  return CAPTURE_PROFILES.includes(p) ? (p as CaptureProfile) : undefined;
};
