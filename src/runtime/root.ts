/**
 * Opening a runtime root's engine and owners for one operation, shared by every consumer (the
 * CLI's commands and the daemon's routes), so both open them the same way and close them always.
 * Read-only access opens neither the run authority nor — when it does not exist yet — the root:
 * it creates nothing. A path inside a recovery workspace is never opened as a root
 * (`root_is_recovery_workspace`): a workspace is inert evidence, read only by its own readers.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir, refuseRecoveryWorkspaceRoot } from '../core/index.js';
import { builtinApplication, openEngine, openReadOnlyEngine, type Engine } from '../engine/index.js';
import { LAYOUT, assertRuntimeRoot, openRootOwners, type RootOwners } from '../owners/index.js';
import { openRunAuthority, type LocalRunAuthority } from '../run-authority/index.js';

export interface RootAccess {
  /** The runtime root (absolute). */
  readonly root: string;
  /** The per-user run authority directory (default: its usual place). */
  readonly authorityDir?: string;
}

export async function withAuthority<T>(a: Pick<RootAccess, 'authorityDir'>, fn: (authority: LocalRunAuthority) => Promise<T> | T, options: { create?: boolean } = {}): Promise<T> {
  const authority = openRunAuthority({ ...(a.authorityDir !== undefined ? { dir: a.authorityDir } : {}), create: options.create ?? true });
  try {
    return await fn(authority);
  } finally {
    await authority.close();
  }
}

/** The root's engine with the user's run authority (created on first use), or read-only without it. */
export async function withRootEngine<T>(a: RootAccess, fn: (engine: Engine) => Promise<T> | T, options: { readOnly?: boolean } = {}): Promise<T> {
  refuseRecoveryWorkspaceRoot(a.root);
  if (options.readOnly) {
    const engine = existsSync(join(a.root, LAYOUT.engineDb))
      ? openReadOnlyEngine({ root: a.root, application: builtinApplication(a.root) })
      : openReadOnlyEngine({ application: builtinApplication(a.root) });
    try {
      return await fn(engine);
    } finally {
      engine.close();
    }
  }
  return withAuthority(a, async (authority) => {
    const engine = openEngine({ root: a.root, application: builtinApplication(a.root), authority });
    try {
      return await fn(engine);
    } finally {
      engine.close();
    }
  });
}

/**
 * An engine that opens no root and never creates the run authority: for checking a snapshot's
 * claim (`run inspect --verify`), which reads only the authority. A missing authority is
 * `authority_missing` (nothing it could verify exists).
 */
export async function withVerifyingEngine<T>(a: Pick<RootAccess, 'root' | 'authorityDir'>, fn: (engine: Engine) => Promise<T> | T): Promise<T> {
  return withAuthority(
    a,
    async (authority) => {
      const engine = openEngine({ application: builtinApplication(a.root), authority });
      try {
        return await fn(engine);
      } finally {
        engine.close();
      }
    },
    { create: false },
  );
}

/** The root's file-backed owners; `root_not_found` when the root does not exist. */
export async function withRootOwners<T>(root: string, fn: (owners: RootOwners) => Promise<T> | T): Promise<T> {
  refuseRecoveryWorkspaceRoot(root);
  assertRuntimeRoot(root);
  ensurePrivateDir(root); // validates an existing root (0700), never chmods it
  const owners = openRootOwners(root);
  try {
    return await fn(owners);
  } finally {
    owners.close();
  }
}

/**
 * Create the runtime root (0700) and its owners' stores, or check an existing one; idempotent
 * (`loopx init`, `loopx daemon`). It binds nothing to the run authority.
 */
export function initRoot(root: string): void {
  refuseRecoveryWorkspaceRoot(root);
  ensurePrivateDir(root);
  openRootOwners(root).close();
}
