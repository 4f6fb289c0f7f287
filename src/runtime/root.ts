/**
 * Opening a runtime root's engine and owners for one operation, shared by every consumer (the
 * CLI's commands and the daemon's routes), so both open them the same way and close them always.
 * Read-only access opens neither the run authority nor — when it does not exist yet — the root:
 * it creates nothing. Every other access is a writer, admitted through the root's admission gate
 * (admission.ts) before it first opens anything in the root, holding its ticket until the
 * operation ends, so a quiescent backup can close the root to writers and drain them. A path
 * inside a recovery workspace is never opened as a root (`root_is_recovery_workspace`): a
 * workspace is inert evidence, read only by its own readers. A root whose recovery is held (its
 * effects not yet reconciled) admits no writer (`recover_reconciliation_held`) until the hold is
 * resolved.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir, refuseRecoveryWorkspaceRoot } from '../core/index.js';
import {
  builtinApplication,
  openEngine,
  openReadOnlyEngine,
  type Engine,
  type LifetimeGuard,
} from '../engine/index.js';
import {
  LAYOUT,
  assertRuntimeRoot,
  inRoot,
  openRootOwners,
  rootStoreLocation,
  type RootOwners,
} from '../owners/index.js';
import { refuseHeldRecovery, refuseRecoveryInProgress } from '../recovery/index.js';
import {
  openRunAuthority,
  type LifetimeSupersession,
  type LocalRunAuthority,
  type WorkHead,
} from '../run-authority/index.js';
import { withAdmission, withLazyAdmission } from './admission.js';
import { withDrivenProbe } from './driven.js';

export interface RootAccess {
  /** The runtime root (absolute). */
  readonly root: string;
  /** The per-user run authority directory (default: its usual place). */
  readonly authorityDir?: string;
}

export async function withAuthority<T>(
  a: Pick<RootAccess, 'authorityDir'>,
  fn: (authority: LocalRunAuthority) => Promise<T> | T,
  options: { create?: boolean } = {},
): Promise<T> {
  const authority = openRunAuthority({
    ...(a.authorityDir !== undefined ? { dir: a.authorityDir } : {}),
    create: options.create ?? true,
  });
  try {
    return await fn(authority);
  } finally {
    await authority.close();
  }
}

/**
 * What a writer of a root's Goals (Todos, lifecycle, creation) asks the run authority, for this
 * root: whether a lifetime is superseded, the work marks, and which lifetimes this root held under
 * an alias that recoveries superseded (by this root's id, so a removed Goal directory forgets nothing).
 */
export interface GoalWriterGuard extends LifetimeGuard {
  observeWorkHead(head: WorkHead): Promise<unknown>;
  supersededHere(goalId: string): Promise<readonly LifetimeSupersession[]>;
}

/**
 * The user's run authority as the guard of a writer of a root's Goals (Todos, lifecycle) that
 * needs no engine: the root is first proven to be the directory the authority bound its id to,
 * under the authority the root belongs to (engine/ownership.ts), so a byte copy of a root
 * (`root_is_copy`) or a root under another authority (`root_authority_mismatch`) changes none of
 * its Goals — as a run would not start in it.
 */
export async function withGoalWriter<T>(a: RootAccess, fn: (guard: GoalWriterGuard) => Promise<T> | T): Promise<T> {
  refuseRecoveryWorkspaceRoot(a.root);
  // The recovery guard is asked where the write opens the owners (withRootOwners), once.
  return withAuthority(a, async (authority) => {
    let rootId: string | undefined;
    if (existsSync(join(a.root, LAYOUT.engineDb))) {
      const engine = openEngine({ root: a.root, application: builtinApplication(a.root, authority), authority });
      try {
        rootId = await engine.rootId();
      } finally {
        engine.close();
      }
    }
    const guard: GoalWriterGuard = {
      lifetimeSupersession: (id) => authority.lifetimeSupersession(id),
      rootDirectory: (id) => authority.rootDirectory(id),
      observeWorkHead: (head) => authority.observeWorkHead(head),
      supersededHere: async (goalId) => (rootId === undefined ? [] : authority.lifetimesSupersededIn(rootId, goalId)),
    };
    return fn(guard);
  });
}

/**
 * The root's engine with the user's run authority (created on first use), admitted as a writer
 * (`admission_closed` while a backup holds the root closed; `what` names the writer in it) — or
 * read-only without the authority, never refused by the gate.
 */
export async function withRootEngine<T>(
  a: RootAccess,
  fn: (engine: Engine) => Promise<T> | T,
  options: { readOnly?: boolean; what?: string } = {},
): Promise<T> {
  refuseRecoveryInProgress(a.root, { writer: options.readOnly !== true });
  if (options.readOnly !== true) await refuseHeldRecovery(a.root);
  return rootEngine(a, fn, options);
}

/** The engine of the new root a recovery's apply is making (refused to every other command until it is made). */
export const withDestinationEngine = <T>(a: RootAccess, fn: (engine: Engine) => Promise<T> | T): Promise<T> =>
  rootEngine(a, fn, { what: 'recover apply' });

async function rootEngine<T>(
  a: RootAccess,
  fn: (engine: Engine) => Promise<T> | T,
  options: { readOnly?: boolean; what?: string },
): Promise<T> {
  refuseRecoveryWorkspaceRoot(a.root);
  if (options.readOnly) {
    // The authority, when it exists (never created by a read), only to see whether a run is driven now.
    return withDrivenProbe(a, async (isDriven) => {
      const engine = existsSync(join(a.root, LAYOUT.engineDb))
        ? openReadOnlyEngine({
            root: a.root,
            application: builtinApplication(a.root),
            ...(isDriven ? { isDriven } : {}),
          })
        : openReadOnlyEngine({ application: builtinApplication(a.root) });
      try {
        return await fn(engine);
      } finally {
        engine.close();
      }
    });
  }
  // Admitted when the engine first opens the root: a command refused before (an import whose claim
  // does not verify) leaves the root as it was, or absent.
  return withLazyAdmission(a.root, options.what ?? 'run command', (admitNow) =>
    withAuthority(a, async (authority) => {
      const engine = openEngine({
        root: a.root,
        application: builtinApplication(a.root, authority),
        authority,
        beforeRootOpen: admitNow,
      });
      try {
        return await fn(engine);
      } finally {
        engine.close();
      }
    }),
  );
}

/**
 * An engine that opens no root and never creates the run authority: for checking a snapshot's
 * claim (`run inspect --verify`), which reads only the authority. A missing authority is
 * `authority_missing` (nothing it could verify exists).
 */
export async function withVerifyingEngine<T>(
  a: Pick<RootAccess, 'root' | 'authorityDir'>,
  fn: (engine: Engine) => Promise<T> | T,
): Promise<T> {
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

/**
 * The root's file-backed owners; `root_not_found` when the root does not exist. With `write` (the
 * writer's name), `fn` changes owner state: it is admitted through the admission gate first
 * (`admission_closed` while a backup holds the root closed), after the root is known to exist.
 */
export async function withRootOwners<T>(
  root: string,
  fn: (owners: RootOwners) => Promise<T> | T,
  options: { write?: string } = {},
): Promise<T> {
  refuseRecoveryWorkspaceRoot(root);
  refuseRecoveryInProgress(root, { writer: options.write !== undefined });
  if (options.write !== undefined) await refuseHeldRecovery(root);
  assertRuntimeRoot(root);
  ensurePrivateDir(root); // validates an existing root (0700), never chmods it
  const open = async () => {
    const owners = openRootOwners(root);
    try {
      return await fn(owners);
    } finally {
      owners.close();
    }
  };
  return options.write === undefined ? open() : withAdmission(root, options.write, open);
}

/**
 * Create the runtime root (0700) and its owners' stores, or check an existing one; idempotent
 * (`loopx init`, `loopx daemon`). It binds nothing to the run authority.
 */
export function initRoot(root: string, options: { readonly ownerStores?: boolean } = {}): void {
  refuseRecoveryInProgress(root, { writer: true });
  initDestinationRoot(root, options);
}

/** `initRoot` for the new root a recovery's apply is making (its plan is there already). */
export function initDestinationRoot(root: string, options: { readonly ownerStores?: boolean } = {}): void {
  refuseRecoveryWorkspaceRoot(root);
  ensurePrivateDir(root);
  // A root whose Goal state lives elsewhere (a database service), or is about to, has no owner files to make.
  if (options.ownerStores !== false && inRoot(rootStoreLocation(root))) openRootOwners(root).close();
}
