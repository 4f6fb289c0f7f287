/**
 * Where a root keeps its Goal-scoped state, as its configuration says (namespace `store`, written
 * once by `loopx init --store`), read by the row of the provider it names (providers/table.ts):
 * SQLite files in the root (the default, also when nothing is recorded) or a database service.
 * A Goal may keep its work elsewhere than its root (the work owner's record, `work/location.ts`).
 */
import { rejected } from '../core/index.js';
import * as configOwner from './config/index.js';
import { inRoot, releaseStoreProviders, rootLocationOf, type RootStoreLocation } from './providers/index.js';
import { recordedWorkLocations } from './work/index.js';

/** The namespace of a root's configuration that says where its Goal state lives (`loopx init --store`): the config owner's. */
export const STORE_CONFIG_NAMESPACE = configOwner.STORE_CONFIG_NAMESPACE;

export type { RootStoreLocation } from './providers/index.js';

/** Where the root at `root` keeps its Goal state. */
export function rootStoreLocation(root: string): RootStoreLocation {
  const ns = configOwner.openFileConfigStore(root).read().value.namespaces[STORE_CONFIG_NAMESPACE] as
    Record<string, unknown> | undefined;
  return rootLocationOf(ns);
}

/** Ends every pool this process opened for roots (a daemon's shutdown): a later use opens a new one, admitted anew. */
export const closeRootPools = (): Promise<void> => releaseStoreProviders();

/**
 * Refuses a root whose Goal state is not all files of the root, for the paths that read and write
 * those files directly (backup capture, recovery, adoption): they would miss the state, not
 * protect it. That is a root on a database service, or a root on files one of whose Goals keeps
 * its work on a service (`goal create --work-provider postgresql`).
 */
export function refuseNonSqliteRoot(root: string, operation: string): void {
  let at: RootStoreLocation;
  try {
    at = rootStoreLocation(root);
  } catch {
    return; // an unreadable configuration is the operation's own finding, not this refusal
  }
  // A Goal's record that cannot be read is refused as it is: where that Goal's work lives is unknown.
  const off = inRoot(at) ? recordedWorkLocations(root).find((r) => !inRoot(r.location)) : undefined;
  if (inRoot(at) && off === undefined) return;
  const where = off === undefined ? 'its Goal state' : `the work of Goal ${off.goal_id}`;
  const what = off?.location.provider ?? at.provider;
  throw providerUnsupported(
    `This root keeps ${where} in ${what}; ${operation} works only on roots whose Goal state is in SQLite.`,
    {
      provider: what,
      operation,
      ...(off === undefined ? {} : { goal_id: off.goal_id }),
    },
  );
}

/** The one refusal of an operation that cannot cover where some Goal state lives. */
const providerUnsupported = (message: string, details: Record<string, unknown>) =>
  rejected('store_provider_unsupported', message, {
    nextAction: 'protect this root with its database service’s own backups',
    details,
  });
