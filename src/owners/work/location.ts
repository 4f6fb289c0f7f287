/**
 * The work owner's record of where ONE Goal's canonical work lives, when the Goal chose a provider
 * other than its root's (`loopx goal create --work-provider`): `goals/<goal_id>/work-store.json`,
 * canonical JSON `{schema_version, provider, …}`, the fields being its provider's row's to read
 * (providers/: a PostgreSQL choice is the URL's *reference* `env:NAME`, the schema and the store's
 * row key — never the URL). A Goal without the record keeps its work where the root keeps its Goal
 * state.
 *
 * The record is written before the Goal's own record (goal.json) and binds once the Goal exists:
 * from then on the Goal's provider never changes (`work_provider_change_refused`). Until then it is
 * a pending choice that a `goal create` of the same Goal may replace (a create refused because the
 * schema was not migrated leaves it for `loopx db migrate` to find). Decoding is strict: a record
 * this loopx does not read is refused (`work_store_location_invalid`), never taken for the default.
 * This module reads and writes the record only; where a Goal without one works is `work.ts`'s.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  canonicalJson,
  conflict,
  ensurePrivateDir,
  readRegularFileOnce,
  rejected,
  usageError,
  writeFileDurable,
  type LoopxError,
} from '../../core/index.js';
import { GOAL_ID, LAYOUT } from '../layout.js';
import { describeLocation, providerOf, storeProvider, type GoalWorkLocation } from '../providers/index.js';

export const WORK_LOCATION_SCHEMA = 'loopx_work_store_location_v0';
const MAX_BYTES = 4096;

/** Where one Goal's work lives: a location of one of the provider table's rows (SQLite: its work.db; a service: a schema, its rows under `store_key`). */
export type { GoalWorkLocation } from '../providers/index.js';

export const workLocationInvalid = (goalId: string, why: string): LoopxError =>
  rejected('work_store_location_invalid', `The record of where Goal ${goalId} keeps its work cannot be read: ${why}.`, {
    nextAction: "restore the Goal's directory from a backup",
    details: { goal_id: goalId },
  });

/** A request to keep an existing Goal's work somewhere else than where it is. */
export const workProviderChangeRefused = (goalId: string, have: GoalWorkLocation): LoopxError =>
  conflict(
    'work_provider_change_refused',
    `Goal ${goalId} keeps its work in ${describeLocation(have)}; it is not moved.`,
    {
      nextAction: 'keep the Goal where it is; create the other store for a new Goal id',
      details: { goal_id: goalId, provider: have.provider },
    },
  );

/** A move of a Goal's work to where it is already. */
export const workMoveSameStore = (goalId: string, have: GoalWorkLocation): LoopxError =>
  usageError(
    'work_move_same_store',
    `Goal ${goalId} keeps its work in ${describeLocation(have)} already.`,
    'name another provider: loopx goal move-work --help',
  );

function decode(goalId: string, bytes: Uint8Array): GoalWorkLocation {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw workLocationInvalid(goalId, 'not UTF-8 JSON');
  }
  const o = (typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {}) as Record<string, unknown>;
  if (o.schema_version !== WORK_LOCATION_SCHEMA) throw workLocationInvalid(goalId, 'unknown schema_version');
  const { schema_version: _, ...fields } = o;
  const location = storeProvider(o.provider)?.work.decode(fields, goalId) as GoalWorkLocation | undefined;
  if (location !== undefined) return location;
  throw workLocationInvalid(goalId, 'unknown provider or fields');
}

/** The Goal's recorded choice, or null when it has none (its work is where the root keeps it). */
export function readWorkLocation(root: string, goalId: string): GoalWorkLocation | null {
  const bytes = readRegularFileOnce(join(root, LAYOUT.workStoreLocation(goalId)), MAX_BYTES, {
    unreadable: (why) => workLocationInvalid(goalId, why),
  });
  return bytes === null ? null : decode(goalId, bytes);
}

/** Records the Goal's choice durably (creating the Goal's directory when needed). */
export function writeWorkLocation(root: string, goalId: string, location: GoalWorkLocation): void {
  ensurePrivateDir(join(root, LAYOUT.goalDir(goalId)));
  writeFileDurable(
    join(root, LAYOUT.workStoreLocation(goalId)),
    new TextEncoder().encode(`${canonicalJson({ schema_version: WORK_LOCATION_SCHEMA, ...location })}\n`),
  );
}

/**
 * After the Goal's service schema was rotated through another reference (a restored copy, named
 * again): the record names that reference from now on. Provider, schema and row key never change.
 */
export function rebindWorkLocation(root: string, goalId: string, reference: string): void {
  const have = readWorkLocation(root, goalId);
  const next =
    have === null ? undefined : (providerOf(have).work.rebind?.(have, reference) as GoalWorkLocation | undefined);
  if (next === undefined) throw workLocationInvalid(goalId, 'not a choice with a database reference to rebind');
  writeWorkLocation(root, goalId, next);
}

/** Drops a pending choice (a Goal not created yet that now takes its root's). */
export function removeWorkLocation(root: string, goalId: string): void {
  rmSync(join(root, LAYOUT.workStoreLocation(goalId)), { force: true });
}

/** A fresh row key for a Goal's store in a schema another root may share: `<goal_id>~<12 hex>`. */
export const mintStoreKey = (goalId: string, hex: string): string => `${goalId}~${hex}`;

/** Every Goal directory's recorded choice (pending ones included), by Goal id. */
export function recordedWorkLocations(
  root: string,
): { readonly goal_id: string; readonly location: GoalWorkLocation }[] {
  let names: string[];
  try {
    names = readdirSync(join(root, LAYOUT.goalsDir));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const out: { goal_id: string; location: GoalWorkLocation }[] = [];
  for (const goalId of names.sort()) {
    if (!GOAL_ID.test(goalId) || goalId.includes('..')) continue;
    const location = readWorkLocation(root, goalId);
    if (location) out.push({ goal_id: goalId, location });
  }
  return out;
}
