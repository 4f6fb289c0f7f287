/**
 * The work owner's part of a PostgreSQL store rotation (runtime/store-rotation.ts drives it): what
 * authority the Goals' work stores in one schema grant — active leases and writer fences — and its
 * revocation, one work transaction per Goal that grants any, under an operation id derived from
 * the rotation, so a rotation resumed after a crash replays instead of revoking twice. Only the
 * rotator's own pool is admitted while the installation is `rotating`.
 */
import { requireSchemaVersion, RowInvalid, textColumn, type PgDatabase } from '../../store/index.js';
import { leaseAuthorization } from './model.js';
import { listPostgresWorkStores, openPostgresWorkProvider } from './postgres.js';
import { WORK_PG_COMPONENT, WORK_PG_MIGRATIONS } from './sql.js';
import { openWork } from './work.js';
import type { WorkView } from './api.js';

/** What one Goal's work store grants a writer now. */
export interface GrantedAuthority {
  readonly goal_id: string;
  readonly active_leases: number;
  readonly fenced: boolean;
}

async function withEachStore<T>(
  db: PgDatabase,
  fn: (work: Awaited<ReturnType<typeof openWork>>) => Promise<T>,
): Promise<T[]> {
  const out: T[] = [];
  for (const s of await listPostgresWorkStores(db)) {
    const work = await openWork({
      provider: await openPostgresWorkProvider(db, { goal_id: s.goal_id, store_key: s.store_key, create: false }),
    });
    try {
      out.push(await fn(work));
    } finally {
      work.close();
    }
  }
  return out;
}

/** What a store's state grants a writer: nothing once its work moved out (its leases were released; it takes no write). */
const granting = (v: WorkView, now: Date): { active_leases: number; fenced: boolean } =>
  v.moved_to !== undefined
    ? { active_leases: 0, fenced: false }
    : {
        active_leases: v.todos.filter((t) => leaseAuthorization(t.lease, now) === 'active').length,
        fenced: v.fence_epoch !== null,
      };

/** Every Goal's granted authority in the schema behind `db`, in store order. */
export function grantedAuthority(db: PgDatabase, now: Date = new Date()): Promise<GrantedAuthority[]> {
  return withEachStore(db, async (work) => {
    const v = await work.view();
    return {
      goal_id: v.goal_id,
      ...granting(v, now),
    };
  });
}

/** Revokes it, Goal by Goal (`rotationId` makes each revocation's operation id). Returns what each revoked. */
export function revokeGrantedAuthority(
  db: PgDatabase,
  rotationId: string,
): Promise<(GrantedAuthority & { readonly result: 'revoked' | 'already' | 'none' })[]> {
  return withEachStore(db, async (work) => {
    const operationId = `store-rotation:${rotationId}`;
    const prior = await work.readReceipt(operationId);
    const v = await work.view();
    const granted = {
      goal_id: v.goal_id,
      ...granting(v, new Date()),
    };
    if (prior !== undefined) return { ...granted, result: 'already' as const };
    if (granted.active_leases === 0 && !granted.fenced) return { ...granted, result: 'none' as const };
    await work.revokeAuthority({ operation_id: operationId, reason: 'store_rotation' });
    return { ...granted, result: 'revoked' as const };
  });
}

/** Where one Goal's work store stands: its identity and its head (the last committed cursor). */
export interface WorkStoreHead {
  readonly goal_id: string;
  readonly store_key: string;
  readonly store_identity: string;
  readonly cursor: number;
  /** The head's provider revision (what a work mark records beside the cursor). */
  readonly provider_revision: string;
}

/** Every Goal work store's head in the schema behind `db`, in store order; read only. */
export async function workStoreHeads(db: PgDatabase): Promise<WorkStoreHead[]> {
  await requireSchemaVersion(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS);
  const rows = await db.query(
    'SELECT goal_key, goal_id, store_identity, cursor, provider_revision FROM work_stores ORDER BY goal_key',
  );
  return rows.map((r) => {
    // BIGINT arrives as text; a head that is not a whole number is a malformed row, never read as 0.
    const cursor =
      typeof r.cursor === 'string' && /^(0|[1-9][0-9]{0,15})$/.test(r.cursor) ? Number(r.cursor) : Number.NaN;
    if (!Number.isSafeInteger(cursor)) throw new RowInvalid('cursor');
    return {
      store_key: textColumn(r.goal_key, 'goal_key'),
      goal_id: textColumn(r.goal_id, 'goal_id'),
      store_identity: textColumn(r.store_identity, 'store_identity'),
      cursor,
      provider_revision: textColumn(r.provider_revision, 'provider_revision'),
    };
  });
}

/** One Goal's committed work an original has past a copy's head (a store the copy lacks counts whole). */
export interface LaterWork {
  readonly goal_id: string;
  readonly copy_cursor: number | null;
  readonly original_cursor: number;
  readonly later: number;
}

/**
 * The work transactions `original` committed after `copy` was taken: per store of the same
 * identity, the cursors past the copy's head. A store whose identity differs is not the copy's
 * (another lineage): counted whole, as the copy holds none of it.
 */
export function laterWork(copy: readonly WorkStoreHead[], original: readonly WorkStoreHead[]): LaterWork[] {
  const byKey = new Map(copy.map((h) => [h.store_key, h]));
  const out: LaterWork[] = [];
  for (const o of original) {
    const c = byKey.get(o.store_key);
    const base = c !== undefined && c.store_identity === o.store_identity ? c.cursor : 0;
    if (o.cursor > base)
      out.push({
        goal_id: o.goal_id,
        copy_cursor: c?.cursor ?? null,
        original_cursor: o.cursor,
        later: o.cursor - base,
      });
  }
  return out;
}
