/**
 * `loopx backup-state --execute` with its capture profile: the runtime's part is admission. A
 * quiescent backup closes admission to the root (a durable gate every writer entry honours, held by
 * this process, so its death reopens it), waits up to the quiesce timeout for running work to drain,
 * captures against that one epoch and reopens admission whatever happened. Online and
 * crash-consistent backups leave admission alone (crash-consistent proves the root stopped itself).
 * What was achieved is the backup producer's evidence, never this layer's claim.
 */
import { realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { xdgHome } from '../core/index.js';
import {
  create,
  formatProfileConflict,
  type BackupPlan,
  type BackupResult,
  type CreateOptions,
} from '../backup/index.js';
import { closeAdmission } from './admission.js';

export interface ProfiledCreateOptions extends CreateOptions {
  /** Quiescent: how long running work may take to drain (default 30 s). */
  readonly quiesceTimeoutMs?: number;
}

export const DEFAULT_QUIESCE_TIMEOUT_MS = 30_000;

export async function createBackupWithProfile(
  p: BackupPlan,
  options: ProfiledCreateOptions = {},
): Promise<BackupResult> {
  const { quiesceTimeoutMs, ...rest } = options;
  if (rest.format === 'v0' && (rest.profile !== undefined || rest.requireProfile === true))
    throw formatProfileConflict();
  if (rest.profile !== 'quiescent') return create(p, rest);
  const closed = await closeAdmission(p.root, { timeoutMs: quiesceTimeoutMs ?? DEFAULT_QUIESCE_TIMEOUT_MS });
  try {
    return await create(p, {
      ...rest,
      quiescence: { epoch: closed.epoch, drained: closed.drained, waited_ms: Math.round(closed.waitedMs) },
    });
  } finally {
    closed.release();
  }
}

/**
 * Where a published backup lies against the root it protects: inside it (lost with it), or on the
 * same file system (lost with the disk). Device numbers compared by `stat`, physical paths for
 * inside. Both are said plainly by the CLI and the Capability Center after every backup.
 */
export interface BackupPlacement {
  readonly inside_root: boolean;
  readonly same_filesystem: boolean;
}

export function backupPlacement(root: string, outputDir: string): BackupPlacement {
  const rootReal = realpathSync(root);
  const outReal = realpathSync(outputDir);
  const rel = relative(rootReal, outReal);
  return {
    inside_root: rel === '' || (!rel.startsWith('..') && !isAbsolute(rel)),
    same_filesystem: statSync(rootReal).dev === statSync(outReal).dev,
  };
}

/** The user's backups folder, the Capability Center's default: `$XDG_DATA_HOME/loopx/backups` (absolute only), else `~/.local/share/loopx/backups`. */
export function userBackupsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdgHome('data', env), 'loopx', 'backups');
}

/** How the operator puts the next backup elsewhere (one runnable command). */
export const ELSEWHERE_ACTION =
  'put it elsewhere (another disk or host): loopx backup-state --execute --output-dir DIR';

/** The one line both the CLI and the Capability Center print about a placement, or none when the backup lies on another file system. */
export function placementWarning(p: BackupPlacement): string | undefined {
  if (p.inside_root) return 'This backup lies inside the root it protects: losing the root loses the backup too.';
  if (p.same_filesystem)
    return 'This backup is on the same file system as the root it protects: a lost disk loses both.';
  return undefined;
}
