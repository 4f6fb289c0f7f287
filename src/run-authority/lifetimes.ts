/**
 * Goal lifetime supersessions (`loopx.run-authority.lifetime/v1`): the authority's record that a
 * recovery replaced a Goal lifetime (`goal_instance_id`) with a new one in another root
 * (ARCHITECTURE.md "Decisions": Goal recovery mints a new lifetime; fencing at the resource).
 *
 * The record is per user, outside every root, so every root of the user — the lost source root
 * too, if it comes back — sees that the old lifetime is over, and its writers stop with
 * `goal_lifetime_superseded` (errors.ts). The rules, decided here once over a provider's
 * `LifetimeTable` (`lifetimes/<goal_instance_id>.json` in the local directory, a Map in memory):
 *
 * - A lifetime is superseded once, ever. The record is created exclusively, never changed and
 *   never removed. A caller always tries the exclusive create first, so of two concurrent writers
 *   (any processes) exactly one creates it and the other reads the winner's record: the same
 *   request (every field but `recorded_at` equal) is a replay — the stored record, `replayed:
 *   true` — and any other is `goal_lifetime_already_superseded` (conflict), which changes nothing.
 * - A request is exactly the fields of `LifetimeSupersessionRequest`, each of its form (`source_root`,
 *   the root that held the superseded lifetime, may be absent or null when it is not known);
 *   anything else is `lifetime_supersession_invalid` before anything is written. Records are
 *   written as v2 (with `source_root`); v1 records, written before it, read with `source_root: null`.
 * - The authority's revision — how many supersessions it has recorded — is kept outside the
 *   records' own directory (`revision` at the authority's top, for the local directory): a
 *   `lifetimes/` that is missing or older than the rest of the authority holds fewer records
 *   than counted and every read is `authority_rolled_back`, never "not superseded".
 * - A stored record is read strictly: the exact fields, each of its form, naming the lifetime it
 *   is stored under. Anything else is `authority_lifetime_corrupt` — never "not superseded",
 *   which would let an old writer through.
 *
 * It never reads or writes inside a root.
 */
import { conflict, internal, LoopxError, rejected } from '../core/index.js';
import type { ConfinedDir } from './confined-dir.js';
import { authorityCorrupt } from './errors.js';
import type { LifetimeSupersession, LifetimeSupersessionOutcome } from './contract.js';
import { isRootId } from './roots.js';

/** v2 names the superseded lifetime's root (`source_root`); v1 records (written before it) stay readable, with `source_root: null`. */
const LIFETIME_SCHEMA = 'loopx.run-authority.lifetime/v2';
const LIFETIME_SCHEMA_V1 = 'loopx.run-authority.lifetime/v1';
const GOAL_INSTANCE_ID = /^ginst_[0-9a-f]{32}$/;
/**
 * The goal owner's alias form (owners/layout.ts `GOAL_ID`, no `..`). The run authority imports
 * only core/, so it is repeated here; test/run-authority/lifetimes.test.ts holds the two equal.
 */
export const GOAL_ALIAS = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const LINEAGE = /^[A-Za-z0-9_.:-]{1,128}$/;
const RECOVERY_ID = /^[0-9a-f]{64}$/;

const V1_FIELDS = [
  'goal_instance_id',
  'goal_id',
  'successor_instance_id',
  'goal_lineage',
  'fence',
  'recovery_id',
  'successor_root',
] as const;
const REQUEST_FIELDS = [...V1_FIELDS, 'source_root'] as const;
const RECORD_FIELDS: readonly string[] = ['schema', ...REQUEST_FIELDS, 'recorded_at'];
const RECORD_FIELDS_V1: readonly string[] = ['schema', ...V1_FIELDS, 'recorded_at'];

const invalid = (why: string): LoopxError =>
  rejected('lifetime_supersession_invalid', `The Goal lifetime supersession is invalid: ${why}.`);

const alreadySuperseded = (stored: LifetimeSupersession): LoopxError =>
  conflict(
    'goal_lifetime_already_superseded',
    `Goal ${stored.goal_id}'s lifetime ${stored.goal_instance_id} was already superseded by lifetime ${stored.successor_instance_id} (recovery ${stored.recovery_id}); a lifetime is superseded once, and nothing was changed.`,
    {
      nextAction: `continue the Goal in the root the earlier recovery made (root id ${stored.successor_root}): loopx work run --goal ${stored.goal_id} --agent <agent-file> --root <recovered-root>`,
      details: {
        goal_id: stored.goal_id,
        goal_instance_id: stored.goal_instance_id,
        successor_instance_id: stored.successor_instance_id,
        successor_root: stored.successor_root,
        recovery_id: stored.recovery_id,
      },
    },
  );

const lifetimeCorrupt = (goalInstanceId: string, why: string): LoopxError =>
  internal(
    'authority_lifetime_corrupt',
    `The authority's record of Goal lifetime ${goalInstanceId} is ${why}; it was changed outside loopx.`,
    {
      nextAction: `restore the authority's lifetimes/${goalInstanceId}.json from a backup of the authority directory; until then every writer of that lifetime is refused`,
    },
  );

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every request field in its form (the successor is another lifetime), copied; else `fail(why)`. */
type Fields = Omit<LifetimeSupersession, 'recorded_at'>;

function requestFields(doc: Record<string, unknown>, fail: (why: string) => LoopxError): Fields {
  const {
    goal_instance_id,
    goal_id,
    successor_instance_id,
    goal_lineage,
    fence,
    recovery_id,
    successor_root,
    source_root = null,
  } = doc;
  if (typeof goal_instance_id !== 'string' || !GOAL_INSTANCE_ID.test(goal_instance_id))
    throw fail("goal_instance_id is not 'ginst_' and 32 lowercase hex");
  if (typeof goal_id !== 'string' || !GOAL_ALIAS.test(goal_id) || goal_id.includes('..'))
    throw fail('goal_id is not a Goal alias');
  if (typeof successor_instance_id !== 'string' || !GOAL_INSTANCE_ID.test(successor_instance_id))
    throw fail("successor_instance_id is not 'ginst_' and 32 lowercase hex");
  if (successor_instance_id === goal_instance_id) throw fail('successor_instance_id is the superseded lifetime itself');
  if (typeof goal_lineage !== 'string' || !LINEAGE.test(goal_lineage))
    throw fail('goal_lineage is not 1–128 characters of A–Z, a–z, 0–9, _ . : and -');
  if (typeof fence !== 'number' || !Number.isSafeInteger(fence) || fence < 1)
    throw fail('fence is not a positive safe integer');
  if (typeof recovery_id !== 'string' || !RECOVERY_ID.test(recovery_id))
    throw fail('recovery_id is not 64 lowercase hex');
  if (typeof successor_root !== 'string' || !isRootId(successor_root)) throw fail('successor_root is not a root id');
  if (source_root !== null && (typeof source_root !== 'string' || !isRootId(source_root)))
    throw fail('source_root is neither null nor a root id');
  if (source_root === successor_root) throw fail('source_root is the successor root itself');
  return {
    goal_instance_id,
    goal_id,
    successor_instance_id,
    goal_lineage,
    fence,
    recovery_id,
    successor_root,
    source_root,
  };
}

/** A caller's request: the seven fields and `source_root` (absent or null when the source root is not known), each of its form. */
function checkRequest(request: unknown): Fields {
  if (!isObject(request)) throw invalid('it is not an object');
  const unknown = Object.keys(request).find((k) => !(REQUEST_FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined)
    throw invalid(
      `${JSON.stringify(unknown.slice(0, 64))} is not a field of a request (recorded_at is set by the authority)`,
    );
  return requestFields(request, invalid);
}

function checkInstanceId(goalInstanceId: unknown): asserts goalInstanceId is string {
  if (typeof goalInstanceId !== 'string' || !GOAL_INSTANCE_ID.test(goalInstanceId))
    throw invalid("goal_instance_id is not 'ginst_' and 32 lowercase hex");
}

export function encodeLifetime(record: LifetimeSupersession): string {
  const doc = {
    schema: LIFETIME_SCHEMA,
    ...Object.fromEntries(REQUEST_FIELDS.map((k) => [k, record[k]])),
    recorded_at: record.recorded_at,
  };
  return `${JSON.stringify(doc)}\n`;
}

/** Decode the record stored under `goalInstanceId`, strictly (see the header). */
export function decodeLifetime(goalInstanceId: string, raw: Uint8Array | string): LifetimeSupersession {
  const corrupt = (why: string): LoopxError => lifetimeCorrupt(goalInstanceId, why);
  let doc: unknown;
  try {
    doc = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8'));
  } catch {
    throw corrupt('not JSON');
  }
  if (!isObject(doc)) throw corrupt('not an object');
  const keys = Object.keys(doc);
  const fields =
    doc.schema === LIFETIME_SCHEMA ? RECORD_FIELDS : doc.schema === LIFETIME_SCHEMA_V1 ? RECORD_FIELDS_V1 : undefined;
  if (fields === undefined) throw corrupt('of an unknown schema');
  if (keys.length !== fields.length || !fields.every((k) => keys.includes(k)))
    throw corrupt('not exactly the fields of a lifetime record');
  const request = requestFields(doc, (why) => corrupt(`malformed (${why})`));
  if (request.goal_instance_id !== goalInstanceId) throw corrupt('the record of another lifetime');
  const at = doc.recorded_at;
  if (typeof at !== 'string' || Number.isNaN(Date.parse(at)) || new Date(at).toISOString() !== at)
    throw corrupt('malformed (recorded_at is not an ISO timestamp)');
  return { ...request, recorded_at: at };
}

/**
 * Where a provider keeps supersessions, one per superseded lifetime. `create` is exclusive and
 * durable: it answers false when a record is already there (and that one is durable too before
 * it answers). Records are never changed or removed.
 */
export interface LifetimeTable {
  get(goalInstanceId: string): Uint8Array | string | undefined | Promise<Uint8Array | string | undefined>;
  create(goalInstanceId: string, encoded: string): boolean | Promise<boolean>;
  /** The superseded lifetimes' ids, in any order. */
  list(): readonly string[] | Promise<readonly string[]>;
  /**
   * Where a provider that keeps its records in a directory of their own keeps, outside that
   * directory, how many it has ever created (the authority's revision): `read` answers 0 while
   * none was counted, `raise` never lowers it. A provider whose records cannot go missing apart
   * from the rest (one table of one database) has none.
   */
  readonly watermark?: { read(): number; raise(count: number): void };
}

export const authorityRolledBack = (have: number, expected: number): LoopxError =>
  internal(
    'authority_rolled_back',
    `The run authority's record of superseded Goal lifetimes holds ${have} of the ${expected} it has recorded: its lifetimes/ directory is missing or older than the rest of it.`,
    {
      nextAction:
        "restore the authority directory's lifetimes/ from the backup it was taken from; until then every Goal writer under this authority is refused",
    },
  );

/**
 * The authority's revision: how many lifetime supersessions it holds, never fewer than it has
 * recorded (`authority_rolled_back`). A crash between a record and its count leaves more records
 * than counted, which is healthy: the count is raised to match.
 */
export async function lifetimesRevision(table: LifetimeTable): Promise<number> {
  const have = (await table.list()).length;
  const counted = table.watermark?.read() ?? have;
  if (have < counted) throw authorityRolledBack(have, counted);
  if (have > counted) table.watermark?.raise(have);
  return have;
}

/** The supersessions of lifetimes that `sourceRoot` held under the alias `goalId` (v1 records name no root and never match). */
export async function lifetimesSupersededIn(
  table: LifetimeTable,
  sourceRoot: string,
  goalId: string,
): Promise<LifetimeSupersession[]> {
  await lifetimesRevision(table);
  const out: LifetimeSupersession[] = [];
  for (const id of await table.list()) {
    if (!GOAL_INSTANCE_ID.test(id)) continue;
    // Read once each, strictly; the revision was checked above, once for all of them.
    const raw = await table.get(id);
    const record = raw === undefined ? undefined : decodeLifetime(id, raw);
    if (record?.source_root === sourceRoot && record.goal_id === goalId) out.push(record);
  }
  return out.sort((a, b) => (a.recorded_at < b.recorded_at ? -1 : 1));
}

/** `lifetimeSupersession`: the stored record, `undefined` while none; a malformed id is `lifetime_supersession_invalid`. */
export async function readLifetime(
  table: LifetimeTable,
  goalInstanceId: string,
): Promise<LifetimeSupersession | undefined> {
  checkInstanceId(goalInstanceId);
  await lifetimesRevision(table);
  const raw = await table.get(goalInstanceId);
  return raw === undefined ? undefined : decodeLifetime(goalInstanceId, raw);
}

/** The same request; a v1 record (no source root) answers a request naming any source root. */
const sameRequest = (stored: Fields, asked: Fields): boolean =>
  V1_FIELDS.every((k) => stored[k] === asked[k]) &&
  (stored.source_root === null || stored.source_root === asked.source_root);

/** `supersedeLifetime`: create the record, or answer the stored one as a replay, or refuse (see the header). */
export async function supersedeLifetime(
  table: LifetimeTable,
  request: unknown,
  now: Date = new Date(),
): Promise<LifetimeSupersessionOutcome> {
  const fields = checkRequest(request);
  const record: LifetimeSupersession = { ...fields, recorded_at: now.toISOString() };
  const revision = await lifetimesRevision(table);
  if (await table.create(fields.goal_instance_id, encodeLifetime(record))) {
    table.watermark?.raise(revision + 1);
    return { record, replayed: false };
  }
  // Another writer — earlier, or concurrent and first — recorded this lifetime: its record decides.
  const stored = await readLifetime(table, fields.goal_instance_id);
  if (!stored) throw lifetimeCorrupt(fields.goal_instance_id, 'gone though its entry existed');
  if (!sameRequest(stored, fields)) throw alreadySuperseded(stored);
  return { record: stored, replayed: true };
}

/** The local authority's table: `lifetimes/<goal_instance_id>.json` in its confined directory (0600, exclusive, durable). */
export function directoryLifetimes(
  dir: ConfinedDir,
  options: { noSync?: boolean; top?: ConfinedDir } = {},
): LifetimeTable {
  const noSync = options.noSync === true;
  const top = options.top;
  return {
    get: (goalInstanceId) => dir.read(`${goalInstanceId}.json`),
    list: () =>
      dir
        .list()
        .filter((n) => n.endsWith('.json'))
        .map((n) => n.slice(0, -'.json'.length)),
    ...(top === undefined ? {} : { watermark: topWatermark(top, noSync) }),
    create(goalInstanceId, encoded) {
      try {
        dir.write(`${goalInstanceId}.json`, encoded, { exclusive: true, ...(noSync ? { noSync } : {}) });
        return true;
      } catch (e) {
        if (!(e instanceof LoopxError && e.code === 'authority_entry_exists')) throw e;
        // The winner may not have synced the directory yet: its entry is made durable before anyone answers from it.
        if (!noSync) dir.sync();
        return false;
      }
    },
  };
}

const REVISION_FILE = 'revision';

/** The authority's revision file at its top (outside lifetimes/): `{"lifetimes": N}`. */
function topWatermark(top: ConfinedDir, noSync: boolean): NonNullable<LifetimeTable['watermark']> {
  const read = (): number => {
    const raw = top.read(REVISION_FILE);
    if (raw === undefined) return 0;
    let n: unknown;
    try {
      n = (JSON.parse(raw.toString('utf8')) as { lifetimes?: unknown }).lifetimes;
    } catch {
      n = undefined;
    }
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw authorityCorrupt('revision');
    return n;
  };
  return {
    read,
    raise(count) {
      if (count <= read()) return;
      top.write(REVISION_FILE, `${JSON.stringify({ lifetimes: count })}\n`, noSync ? { noSync } : {});
    },
  };
}
