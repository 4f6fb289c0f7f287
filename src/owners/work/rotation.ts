/**
 * The work owner's part of a PostgreSQL store rotation (runtime/store-rotation.ts drives it): what
 * authority the Goals' work stores in one schema grant — active leases and writer fences — and its
 * revocation, one work transaction per Goal that grants any, under an operation id derived from
 * the rotation, so a rotation resumed after a crash replays instead of revoking twice. Only the
 * rotator's own pool is admitted while the installation is `rotating`.
 */
import { type PgDatabase } from '../../store/index.js';
import { leaseAuthorization } from './model.js';
import { listPostgresWorkStores, openPostgresWorkProvider } from './postgres.js';
import { openWork } from './work.js';

/** What one Goal's work store grants a writer now. */
export interface GrantedAuthority {
  readonly goal_id: string;
  readonly active_leases: number;
  readonly fenced: boolean;
}

async function withEachStore<T>(db: PgDatabase, fn: (work: Awaited<ReturnType<typeof openWork>>) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (const s of await listPostgresWorkStores(db)) {
    const work = await openWork({ provider: await openPostgresWorkProvider(db, { goal_id: s.goal_id, store_key: s.store_key, create: false }) });
    try {
      out.push(await fn(work));
    } finally {
      work.close();
    }
  }
  return out;
}

/** Every Goal's granted authority in the schema behind `db`, in store order. */
export function grantedAuthority(db: PgDatabase, now: Date = new Date()): Promise<GrantedAuthority[]> {
  return withEachStore(db, async (work) => {
    const v = await work.view();
    return { goal_id: v.goal_id, active_leases: v.todos.filter((t) => leaseAuthorization(t.lease, now) === 'active').length, fenced: v.fence_epoch !== null };
  });
}

/** Revokes it, Goal by Goal (`rotationId` makes each revocation's operation id). Returns what each revoked. */
export function revokeGrantedAuthority(db: PgDatabase, rotationId: string): Promise<(GrantedAuthority & { readonly result: 'revoked' | 'already' | 'none' })[]> {
  return withEachStore(db, async (work) => {
    const operationId = `store-rotation:${rotationId}`;
    const prior = await work.readReceipt(operationId);
    const v = await work.view();
    const granted = { goal_id: v.goal_id, active_leases: v.todos.filter((t) => leaseAuthorization(t.lease, new Date()) === 'active').length, fenced: v.fence_epoch !== null };
    if (prior !== undefined) return { ...granted, result: 'already' as const };
    if (granted.active_leases === 0 && !granted.fenced) return { ...granted, result: 'none' as const };
    await work.revokeAuthority({ operation_id: operationId, reason: 'store_rotation' });
    return { ...granted, result: 'revoked' as const };
  });
}
