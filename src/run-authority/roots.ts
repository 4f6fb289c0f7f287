/**
 * Root bindings: how the run authority tells a runtime root from a byte copy of it.
 *
 * A root names itself by the random `root_id` in its engine.db, and run records name their owner
 * by that id — but a copy of the root's bytes (a `cp -a`, a restored backup, a recovery
 * workspace) carries the same id. So the authority also keeps, per root id, the identity of the
 * directory it was first used from, in `roots/<root_id>.json` (0600, atomic, durable):
 *
 *   { schema, root_id, ino, dev, path, bound_at }
 *
 * A directory is the bound root only when both its device and inode numbers are the bound ones
 * (an inode number alone repeats across file systems: every volume's top directory has the same
 * one). `mv` within a file system keeps both; any copy — another inode, or the same inode number
 * on another device — is a different root that owns nothing (`root_is_copy`). The same path and
 * inode number on another device (a device renumbered at boot, or a cloned volume mounted in
 * its place) cannot be told apart automatically: `root_binding_moved`, and the operator decides
 * with `loopx authority bind-root`.
 *
 * A root seen for the first time is bound on first use — unless the authority already has runs
 * recorded under its id (a root made before bindings existed, or a copy of one): then whichever
 * directory came first would win, so `root_binding_required` asks the operator to bind the
 * original once. `bind-root` (rebindRoot) binds explicitly, and moves a binding only while the
 * directory it names no longer exists with its bound identity: a copy can never take the place
 * of a live original.
 *
 * The decisions — bind, prove, refresh, refuse; rebind or refuse — are made here once, by
 * `bindRoot` and `rebindRoot` over a provider's `RootBindingTable`: the directory-backed one below
 * for the local authority, a Map for the in-memory one (memory.ts).
 *
 * It never reads or writes inside the root, and never prints a path (the binding is private).
 */
import { realpathSync, statSync } from 'node:fs';
import { LoopxError, conflict, internal, rejected } from '../core/index.js';
import type { ConfinedDir } from './confined-dir.js';

const BINDING_SCHEMA = 'loopx.run-authority.root/v1';
const ROOT_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** A root directory's identity, as the file system reports it now. */
export interface RootDirectoryIdentity {
  readonly dev: string;
  readonly ino: string;
  /** Physical (link-free) absolute path. */
  readonly path: string;
}

export function rootDirectoryIdentity(root: string): RootDirectoryIdentity {
  const path = realpathSync(root);
  const st = statSync(path, { bigint: true });
  return { dev: st.dev.toString(), ino: st.ino.toString(), path };
}

export const ROOT_IS_COPY = 'root_is_copy';

const NEW_ROOT = 'start a new root instead: loopx init --root <new-root>';

const copyRefusal = (): LoopxError =>
  rejected(ROOT_IS_COPY, 'This directory is a copy of another runtime root; a copy owns no runs and may start none.', {
    nextAction: NEW_ROOT,
  });

const bindingRequired = (): LoopxError =>
  rejected(
    'root_binding_required',
    'The run authority has runs of this root recorded from before roots were bound to their directories; bind the original root once.',
    {
      nextAction: 'if this directory is the original root (not a copy of it), bind it: loopx authority bind-root',
    },
  );

const bindingMoved = (): LoopxError =>
  rejected(
    'root_binding_moved',
    "This root's directory is at its bound path but on another device (a renumbered device, or another volume mounted there).",
    {
      nextAction: 'if this directory is the original root (not a copy of it), bind it again: loopx authority bind-root',
    },
  );

const originalPresentRefusal = (): LoopxError =>
  conflict(
    'root_binding_original_present',
    'The directory this root id is bound to still exists; a copy never takes its place.',
    { nextAction: NEW_ROOT },
  );

const bindingCorrupt = (rootId: string): LoopxError =>
  internal('authority_root_binding_corrupt', `The authority's binding of root ${rootId} is malformed.`, {
    nextAction: 'restore the authority directory from a backup',
  });

/**
 * Where a provider keeps its bindings, one per root id. `create` is exclusive: it answers false
 * when another writer bound the id first (what that one bound then decides). Bindings are never
 * removed by the authority.
 */
export interface RootBindingTable {
  get(rootId: string): RootDirectoryIdentity | undefined | Promise<RootDirectoryIdentity | undefined>;
  create(rootId: string, id: RootDirectoryIdentity): boolean | Promise<boolean>;
  put(rootId: string, id: RootDirectoryIdentity): void | Promise<void>;
}

const sameDirectory = (a: RootDirectoryIdentity, b: RootDirectoryIdentity): boolean =>
  a.dev === b.dev && a.ino === b.ino;

/** Whether the directory a binding names still exists there with its bound identity. */
export function stillThere(bound: RootDirectoryIdentity): boolean {
  try {
    const st = statSync(bound.path, { bigint: true });
    return st.isDirectory() && st.dev.toString() === bound.dev && st.ino.toString() === bound.ino;
  } catch {
    return false;
  }
}

/**
 * The decision of `bindRoot` (pure): `create` a first binding, keep the `same` one, `refresh` one
 * whose path moved, or refuse (see the header).
 */
export function decideBind(
  bound: RootDirectoryIdentity | undefined,
  id: RootDirectoryIdentity,
  hasRecordedRuns: () => boolean,
): 'create' | 'same' | 'refresh' {
  if (!bound) {
    if (hasRecordedRuns()) throw bindingRequired();
    return 'create';
  }
  if (sameDirectory(bound, id)) return bound.path === id.path ? 'same' : 'refresh';
  if (bound.ino === id.ino && bound.path === id.path) throw bindingMoved();
  throw copyRefusal();
}

/**
 * The decision of `rebindRoot` (pure but for `originalPresent`, which asks about the bound
 * directory): `unchanged`, `bound` or `rebound` — never while the bound original still exists.
 */
export function decideRebind(
  bound: RootDirectoryIdentity | undefined,
  id: RootDirectoryIdentity,
  originalPresent: (bound: RootDirectoryIdentity) => boolean,
): RebindOutcome {
  if (bound && sameDirectory(bound, id) && bound.path === id.path) return 'unchanged';
  if (bound && !sameDirectory(bound, id) && originalPresent(bound)) throw originalPresentRefusal();
  return bound ? 'rebound' : 'bound';
}

/** The form of a root id (the one `bindRoot` takes): what a lifetime supersession names its successor's root by. */
export const isRootId = (rootId: string): boolean => ROOT_ID.test(rootId);

const checkRootId = (rootId: string): void => {
  if (!isRootId(rootId)) throw internal('root_id_invalid', 'The root id in engine.db is malformed.');
};

/**
 * Bind `rootId` to the directory `id` on first use, or prove that `id` is the bound directory
 * (refreshing a binding whose path moved); otherwise `root_is_copy`, `root_binding_moved` or
 * `root_binding_required` (see the header). `hasRecordedRuns` says whether run records already
 * name `rootId` as their owner (asked only when it has no binding yet).
 */
export async function bindRoot(
  table: RootBindingTable,
  rootId: string,
  id: RootDirectoryIdentity,
  hasRecordedRuns: () => boolean | Promise<boolean>,
): Promise<void> {
  checkRootId(rootId);
  const bound = await table.get(rootId);
  const recorded = bound === undefined && (await hasRecordedRuns());
  let decision = decideBind(bound, id, () => recorded);
  if (decision === 'create') {
    if (await table.create(rootId, id)) return;
    // Another writer bound it first: what it bound decides.
    const winner = await table.get(rootId);
    if (!winner) throw bindingCorrupt(rootId);
    decision = decideBind(winner, id, () => recorded);
  }
  if (decision === 'refresh') await table.put(rootId, id);
}

export type RebindOutcome = 'bound' | 'unchanged' | 'rebound';

/**
 * The operator's explicit binding (`loopx authority bind-root`): bind `rootId` to `id`, also when
 * runs are recorded under it or its binding names another directory — but never while that other
 * directory still exists with its bound identity (`root_binding_original_present`).
 */
export async function rebindRoot(
  table: RootBindingTable,
  rootId: string,
  id: RootDirectoryIdentity,
  originalPresent: (bound: RootDirectoryIdentity) => boolean = stillThere,
): Promise<RebindOutcome> {
  checkRootId(rootId);
  const outcome = decideRebind(await table.get(rootId), id, originalPresent);
  if (outcome !== 'unchanged') await table.put(rootId, id);
  return outcome;
}

/** The local authority's table: `roots/<root_id>.json` in its confined directory (0600, atomic, durable). */
export function directoryBindings(dir: ConfinedDir, options: { noSync?: boolean } = {}): RootBindingTable {
  const sync = options.noSync ? { noSync: true } : {};
  const encode = (rootId: string, id: RootDirectoryIdentity): string =>
    `${JSON.stringify({ schema: BINDING_SCHEMA, root_id: rootId, ino: id.ino, dev: id.dev, path: id.path, bound_at: new Date().toISOString() })}\n`;
  return {
    get(rootId) {
      const raw = dir.read(`${rootId}.json`);
      if (!raw) return undefined;
      let doc: Record<string, unknown>;
      try {
        doc = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      } catch {
        doc = {};
      }
      if (
        doc.schema !== BINDING_SCHEMA ||
        doc.root_id !== rootId ||
        typeof doc.dev !== 'string' ||
        typeof doc.ino !== 'string' ||
        typeof doc.path !== 'string'
      )
        throw bindingCorrupt(rootId);
      return { dev: doc.dev, ino: doc.ino, path: doc.path };
    },
    create(rootId, id) {
      try {
        dir.write(`${rootId}.json`, encode(rootId, id), { exclusive: true, ...sync });
        return true;
      } catch (e) {
        if (e instanceof LoopxError && e.code === 'authority_entry_exists') return false;
        throw e;
      }
    },
    put(rootId, id) {
      dir.write(`${rootId}.json`, encode(rootId, id), sync);
    },
  };
}
