/**
 * The one snapshot a backup set reads a root's database service in (its provider's
 * `service.snapshot`: PostgreSQL's is one REPEATABLE READ READ ONLY transaction held from before
 * the first component is captured until the last one is), so every owner's rows in the set are of
 * one committed state of the database. Owners read it one at a time through `LiveService.snapshot`.
 *
 * A Goal that keeps its work apart from its root (`goal create --work-provider`) is read where it
 * lives (`openGoalWorkSources`): in the root's snapshot when its schema is the root's, else in one
 * snapshot per other service installation — opened at the same time and held as long — or from
 * its files when it chose files on a root on a service.
 *
 * What it records about the service is a reference, never a credential (`ServiceReference`).
 */
import type { GoalWorkSource } from './contract.js';
import { isServiceLocation, providerOf, sameService, type ServiceSnapshot } from './providers/index.js';
import { rootStoreLocation } from './root-store-location.js';
import { recordedWorkLocations } from './work/index.js';

export type { ServiceReference, ServiceSnapshot } from './providers/index.js';

/** The snapshot of the root's database service for one set, or null for a root whose state is elsewhere (files). */
export async function openServiceSnapshot(root: string): Promise<ServiceSnapshot | null> {
  const location = rootStoreLocation(root);
  return isServiceLocation(location) ? providerOf(location).service!.snapshot(location) : null;
}

/** A service a Goal's work was read from, apart from its root's: its reference and the Goals read in it. */
export interface GoalServiceSnapshot {
  readonly goal_ids: readonly string[];
  readonly snapshot: ServiceSnapshot;
}

/**
 * Where each of `goalIds` that chose where its work lives keeps it, for one set: the root's own
 * snapshot (`rootService`) when it is the root's installation, one snapshot per other installation
 * (opened here; the caller closes them), or the root's files. Goals without a choice are not listed.
 */
export async function openGoalWorkSources(
  root: string,
  goalIds: readonly string[],
  rootService: ServiceSnapshot | null,
): Promise<{
  readonly sources: ReadonlyMap<string, GoalWorkSource>;
  readonly services: readonly GoalServiceSnapshot[];
}> {
  const rootAt = rootStoreLocation(root);
  const wanted = new Set(goalIds);
  const sources = new Map<string, GoalWorkSource>();
  const byService = new Map<string, { goal_ids: string[]; snapshot: ServiceSnapshot }>();
  try {
    for (const { goal_id, location } of recordedWorkLocations(root)) {
      if (!wanted.has(goal_id)) continue;
      if (!isServiceLocation(location)) {
        sources.set(goal_id, { provider: location.provider });
        continue;
      }
      const isRoots = sameService(rootAt, location);
      const key = `${location.provider}\n${location.database_url}\n${location.schema}`;
      let own = byService.get(key);
      if (!isRoots && own === undefined) {
        own = { goal_ids: [], snapshot: await providerOf(location).service!.snapshot(location) };
        byService.set(key, own);
      }
      own?.goal_ids.push(goal_id);
      sources.set(goal_id, {
        provider: location.provider,
        service: isRoots ? rootService! : own!.snapshot,
        store_key: location.store_key,
      });
    }
  } catch (e) {
    for (const s of byService.values()) await s.snapshot.close();
    throw e;
  }
  return { sources, services: [...byService.values()] };
}
