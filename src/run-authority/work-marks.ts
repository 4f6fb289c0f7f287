/**
 * Work marks (`loopx.run-authority.work-mark/v1`): the authority's record, per Goal work store, of
 * the lifetime that writes it and the last committed head a writer of that lifetime saw. They
 * make two accidents visible that the root's own bytes cannot show (ARCHITECTURE.md "A Goal's
 * lineage outlives its lifetimes"; docs/security.md):
 *
 * - a `goal.json` whose `goal_instance_id` was edited, or a Goal directory taken from another
 *   lifetime: the store is bound to another lifetime → `goal_identity_mismatch`;
 * - a root restored from an older copy of itself: the store's head is behind the mark →
 *   `root_rolled_back`.
 *
 * The rules, decided here once over a provider's `WorkMarkTable` (`works/<store hex>.json` in the
 * local directory, a Map in memory, a table on PostgreSQL):
 *
 * - A store without a mark is bound on first use to the lifetime that opens it (trust on first
 *   use: a store written before marks existed is bound at its first open after).
 * - A mark only moves forward. `observe` is asked when a writer opens the store and again after it
 *   committed: a store AHEAD of the mark advances it (a crash between a commit and its mark never
 *   bricks a healthy root); a store at the mark's cursor with another head revision, or behind it,
 *   is rolled back and refused.
 * - A stored mark is read strictly; one that does not decode is `authority_work_mark_corrupt`,
 *   never "no mark".
 *
 * It never reads or writes inside a root.
 */
import { conflict, internal, rejected, type LoopxError } from '../core/index.js';
import type { ConfinedDir } from './confined-dir.js';

const MARK_SCHEMA = 'loopx.run-authority.work-mark/v1';
const STORE_IDENTITY = /^[a-z][a-z0-9_-]{0,31}:[0-9a-f]{32}$/;
const GOAL_INSTANCE_ID = /^ginst_[0-9a-f]{32}$/;
const GOAL_ALIAS = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** What a writer saw of a Goal's work store: whose it is and where its head was. */
export interface WorkHead {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  /** `<provider>:<32 hex>`. */
  readonly store_identity: string;
  readonly cursor: number;
  /** The head's provider revision (`<incarnation>:<cursor>` or the provider's form). */
  readonly provider_revision: string;
}

export interface WorkMark extends WorkHead {
  readonly updated_at: string;
}

/** Where a provider keeps marks, one per store identity; `put` is atomic and durable. */
export interface WorkMarkTable {
  get(key: string): Uint8Array | string | undefined | Promise<Uint8Array | string | undefined>;
  put(key: string, encoded: string): void | Promise<void>;
}

const markKey = (storeIdentity: string): string => storeIdentity.replace(':', '-');

export const goalIdentityMismatch = (goalId: string): LoopxError =>
  rejected(
    'goal_identity_mismatch',
    `Goal ${goalId}'s record names another lifetime than the one its work store belongs to; goal.json was changed or the Goal's directory was replaced.`,
    {
      nextAction: `restore goals/${goalId}/goal.json from the backup it came from, or recover the Goal into a new root: loopx recover plan --from <workspace> --goal ${goalId} --destination <new-root>`,
      details: { goal_id: goalId },
    },
  );

export const rootRolledBack = (goalId: string, have: number, marked: number): LoopxError =>
  conflict(
    'root_rolled_back',
    `Goal ${goalId}'s work in this root is behind what it had committed (${have} of ${marked} transactions): this root was restored from an older copy of itself.`,
    {
      nextAction: `recover the Goal from a backup into a new root: loopx recover plan --from <workspace> --goal ${goalId} --destination <new-root>`,
      details: { goal_id: goalId, committed_transactions: have, marked_transactions: marked },
    },
  );

const markCorrupt = (key: string): LoopxError =>
  internal(
    'authority_work_mark_corrupt',
    `The authority's work mark ${key} is malformed; it was changed outside loopx.`,
    {
      nextAction: 'restore the authority directory from a backup; until then writers of that Goal are refused',
    },
  );

function checkHead(h: WorkHead): WorkHead {
  const ok =
    GOAL_ALIAS.test(h.goal_id) &&
    GOAL_INSTANCE_ID.test(h.goal_instance_id) &&
    STORE_IDENTITY.test(h.store_identity) &&
    Number.isSafeInteger(h.cursor) &&
    h.cursor >= 0 &&
    typeof h.provider_revision === 'string' &&
    h.provider_revision.length > 0 &&
    h.provider_revision.length <= 200;
  if (!ok) throw internal('work_mark_invalid', 'A work head to mark is malformed.');
  return h;
}

function decodeMark(key: string, raw: Uint8Array | string): WorkMark {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw markCorrupt(key);
  }
  const fields = [
    'schema',
    'goal_id',
    'goal_instance_id',
    'store_identity',
    'cursor',
    'provider_revision',
    'updated_at',
  ];
  if (
    typeof doc !== 'object' ||
    doc === null ||
    Object.keys(doc).length !== fields.length ||
    !fields.every((f) => f in doc) ||
    doc.schema !== MARK_SCHEMA
  )
    throw markCorrupt(key);
  const { goal_id, goal_instance_id, store_identity, cursor, provider_revision, updated_at } = doc;
  if (
    typeof goal_id !== 'string' ||
    typeof goal_instance_id !== 'string' ||
    typeof store_identity !== 'string' ||
    typeof cursor !== 'number'
  )
    throw markCorrupt(key);
  if (typeof provider_revision !== 'string' || typeof updated_at !== 'string' || markKey(store_identity) !== key)
    throw markCorrupt(key);
  try {
    checkHead({ goal_id, goal_instance_id, store_identity, cursor, provider_revision });
  } catch {
    throw markCorrupt(key);
  }
  return { goal_id, goal_instance_id, store_identity, cursor, provider_revision, updated_at };
}

const encodeMark = (h: WorkHead, now: Date): string =>
  `${JSON.stringify({ schema: MARK_SCHEMA, goal_id: h.goal_id, goal_instance_id: h.goal_instance_id, store_identity: h.store_identity, cursor: h.cursor, provider_revision: h.provider_revision, updated_at: now.toISOString() })}\n`;

/** The mark of a store; `undefined` while none. */
export async function readWorkMark(table: WorkMarkTable, storeIdentity: string): Promise<WorkMark | undefined> {
  const key = markKey(storeIdentity);
  const raw = await table.get(key);
  return raw === undefined ? undefined : decodeMark(key, raw);
}

/**
 * A writer's view of a store checked against its mark, and the mark moved to it (see the header):
 * `goal_identity_mismatch` for another lifetime, `root_rolled_back` for a head behind the mark.
 */
export async function observeWorkHead(table: WorkMarkTable, head: WorkHead, now: Date = new Date()): Promise<WorkMark> {
  const h = checkHead(head);
  const mark = await readWorkMark(table, h.store_identity);
  if (mark) {
    if (mark.goal_instance_id !== h.goal_instance_id) throw goalIdentityMismatch(h.goal_id);
    if (h.cursor < mark.cursor || (h.cursor === mark.cursor && h.provider_revision !== mark.provider_revision))
      throw rootRolledBack(h.goal_id, h.cursor, mark.cursor);
    if (h.cursor === mark.cursor) return mark;
  }
  const encoded = encodeMark(h, now);
  await table.put(markKey(h.store_identity), encoded);
  return decodeMark(markKey(h.store_identity), encoded);
}

/**
 * An operator's confirmed rewind: the mark set to `head` even when it is behind — a database
 * rotation whose operator abandoned the writes the original made after the copy (or could not count
 * them) makes the copy's head the store's truth. Another lifetime is still `goal_identity_mismatch`.
 */
export async function rewindWorkMark(table: WorkMarkTable, head: WorkHead, now: Date = new Date()): Promise<WorkMark> {
  const h = checkHead(head);
  const mark = await readWorkMark(table, h.store_identity);
  if (mark && mark.goal_instance_id !== h.goal_instance_id) throw goalIdentityMismatch(h.goal_id);
  const encoded = encodeMark(h, now);
  await table.put(markKey(h.store_identity), encoded);
  return decodeMark(markKey(h.store_identity), encoded);
}

/** The local authority's table: `works/<provider>-<hex>.json` in its confined directory (0600, atomic, durable). */
export function directoryWorkMarks(dir: ConfinedDir, options: { noSync?: boolean } = {}): WorkMarkTable {
  return {
    get: (key) => dir.read(`${key}.json`),
    put: (key, encoded) => dir.write(`${key}.json`, encoded, options.noSync ? { noSync: true } : {}),
  };
}

/** The memory table. */
export function mapWorkMarks(): WorkMarkTable {
  const marks = new Map<string, string>();
  return { get: (key) => marks.get(key), put: (key, encoded) => void marks.set(key, encoded) };
}
