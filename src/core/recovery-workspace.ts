/**
 * Recognising a recovery workspace (`loopx backup-state verify --execute` output) from any path
 * inside it, so that no command opens one as a live runtime root and no verification writes into
 * one. A verified destination D is marked by its audit file `D/recovery-audit.json`; its inert copy
 * of the root lives in `D/workspace/`, staged in `D/.staging/` while verification runs.
 *
 * The test is structural and checks every ancestor of the path (after resolving the links of its
 * existing part), so `D`, `D/workspace/runtime-root` and anything deeper are all recognised once
 * the audit is published (a verification still running holds its staging directory in a
 * destination it created itself, 0700, that no one else has been told of). A byte copy taken out of a workspace is not recognised here: the run authority's
 * root binding makes such a copy a different, unknown root that owns no runs.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { rejected } from './errors.js';

export const RECOVERY_AUDIT_FILE = 'recovery-audit.json';
export const RECOVERY_WORKSPACE_DIR = 'workspace';

/** The longest existing prefix of `path` with its links resolved, followed by the rest unchanged. */
export function physical(path: string): string {
  let head = resolve(path);
  const tail: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(head), ...tail.reverse());
    } catch {
      const up = dirname(head);
      if (up === head) return resolve(path);
      tail.push(head.slice(up.length + (up.endsWith('/') ? 0 : 1)));
      head = up;
    }
  }
}

const hasAudit = (dir: string): boolean => {
  try {
    return lstatSync(join(dir, RECOVERY_AUDIT_FILE)).isFile();
  } catch {
    return false;
  }
};

/** The recovery destination D (the directory holding `recovery-audit.json`) that contains `path` or is it, else undefined. */
export function recoveryDestinationOf(path: string): string | undefined {
  for (let dir = physical(path); ;) {
    if (hasAudit(dir)) return dir;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** `path` as the operator can type it from here: relative to the working directory, shell-quoted when it must be. */
export function operatorPath(path: string): string {
  const rel = relative(process.cwd(), path) || '.';
  return /^[A-Za-z0-9._/+-]+$/.test(rel) ? rel : `'${rel.replaceAll("'", "'\\''")}'`;
}

export const ROOT_IS_RECOVERY_WORKSPACE = 'root_is_recovery_workspace';

/**
 * Refuse to use `root` as a live runtime root when it lies inside a recovery workspace (exit 3).
 * The one next action reads the workspace back without changing it.
 */
export function refuseRecoveryWorkspaceRoot(root: string): void {
  const destination = recoveryDestinationOf(root);
  if (destination === undefined) return;
  throw rejected(
    ROOT_IS_RECOVERY_WORKSPACE,
    'That directory is inside a recovery workspace, which is inert evidence and never a live root.',
    {
      nextAction: `read it without changing it: loopx backup-state workspace ls ${operatorPath(destination)}`,
    },
  );
}
