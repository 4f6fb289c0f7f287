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
 * A directory matches its binding when its inode number is the bound one and either its device
 * or its physical path is too — so `mv` within a file system and a device renumbered at boot keep
 * a root's identity, while any copy (another inode) is a different root that owns nothing and is
 * refused (`root_is_copy`). A root seen for the first time is bound (first use wins; roots made
 * before bindings existed are bound the first time a command uses them with the authority).
 *
 * It never reads or writes inside the root, and never prints a path (the binding is private).
 */
import { realpathSync, statSync } from 'node:fs';
import { LoopxError, internal, rejected } from '../core/errors.js';
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

const copyRefusal = (): LoopxError =>
  rejected(ROOT_IS_COPY, 'This directory is a copy of another runtime root; a copy owns no runs and may start none.', {
    nextAction: 'start a new root instead: loopx init --root <new-root>',
  });

interface Binding extends RootDirectoryIdentity {
  readonly rootId: string;
}

function parse(rootId: string, raw: Buffer): Binding {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  } catch {
    doc = {};
  }
  if (doc.schema !== BINDING_SCHEMA || doc.root_id !== rootId || typeof doc.dev !== 'string' || typeof doc.ino !== 'string' || typeof doc.path !== 'string') {
    throw internal('authority_root_binding_corrupt', `The authority's binding of root ${rootId} is malformed.`, { nextAction: 'restore the authority directory from a backup' });
  }
  return { rootId, dev: doc.dev, ino: doc.ino, path: doc.path };
}

const encode = (rootId: string, id: RootDirectoryIdentity): string =>
  `${JSON.stringify({ schema: BINDING_SCHEMA, root_id: rootId, ino: id.ino, dev: id.dev, path: id.path, bound_at: new Date().toISOString() })}\n`;

/**
 * Bind `rootId` to the directory `id` on first use, or prove that `id` is the bound directory;
 * a different directory is `root_is_copy`. A match whose device or path moved refreshes the binding.
 */
export function bindRoot(dir: ConfinedDir, rootId: string, id: RootDirectoryIdentity, options: { noSync?: boolean } = {}): void {
  if (!ROOT_ID.test(rootId)) throw internal('root_id_invalid', 'The root id in engine.db is malformed.');
  const name = `${rootId}.json`;
  let raw = dir.read(name);
  if (!raw) {
    try {
      dir.write(name, encode(rootId, id), { exclusive: true, ...(options.noSync ? { noSync: true } : {}) });
      return;
    } catch (e) {
      // Another process bound it first: what it bound decides.
      if (!(e instanceof LoopxError && e.code === 'authority_entry_exists')) throw e;
      raw = dir.read(name)!;
    }
  }
  const bound = parse(rootId, raw);
  if (bound.ino !== id.ino || (bound.dev !== id.dev && bound.path !== id.path)) throw copyRefusal();
  if (bound.dev !== id.dev || bound.path !== id.path) dir.write(name, encode(rootId, id), options.noSync ? { noSync: true } : {});
}
