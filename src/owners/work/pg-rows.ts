/**
 * The PostgreSQL work provider's rows as it reads them (postgres.ts): the store row, a committed
 * transaction and an imported lineage, each column decoded strictly (`RowInvalid` names the column;
 * BIGINT columns arrive as text).
 */
import { RowInvalid, jsonColumn, textColumn, textOrNullColumn } from '../../store/index.js';
import type { CommittedTransaction, JsonObject, LineageRecord } from './contract.js';

export interface StoreRow {
  readonly goal_id: string;
  readonly store_identity: string;
  readonly incarnation: string;
  readonly cursor: number;
  readonly provider_revision: string;
  readonly projection: string | null;
  readonly fence_id: string | null;
  readonly fence_epoch: number;
}

export const STORE_COLUMNS =
  'schema, goal_id, store_identity, incarnation, cursor, provider_revision, projection, fence_id, fence_epoch';
export const COMMIT_COLUMNS = 'cursor, provider_revision, operation_id, request_digest, events, receipt';
export const LINEAGE_COLUMNS =
  'source_store_identity, source_incarnation, source_head_cursor, source_provider_revision, source_projection, recovery_id, content_digest, imported_at';

/** A BIGINT column (`pg` hands it over as text): a safe integer of at least `min`. */
export function bigintColumn(v: unknown, field: string, min: number): number {
  const n =
    typeof v === 'string' && /^-?(0|[1-9][0-9]{0,15})$/.test(v) ? Number(v) : typeof v === 'number' ? v : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new RowInvalid(field);
  return n;
}

export function decodeStore(r: Record<string, unknown>): StoreRow {
  return {
    goal_id: textColumn(r.goal_id, 'goal_id'),
    store_identity: textColumn(r.store_identity, 'store_identity'),
    incarnation: textColumn(r.incarnation, 'incarnation'),
    cursor: bigintColumn(r.cursor, 'cursor', 0),
    provider_revision: textColumn(r.provider_revision, 'provider_revision'),
    projection: textOrNullColumn(r.projection, 'projection'),
    fence_id: textOrNullColumn(r.fence_id, 'fence_id'),
    fence_epoch: bigintColumn(r.fence_epoch, 'fence_epoch', 0),
  };
}

export function decodeCommit(r: Record<string, unknown>): Omit<CommittedTransaction, 'projection'> {
  return {
    cursor: bigintColumn(r.cursor, 'cursor', 1),
    provider_revision: textColumn(r.provider_revision, 'provider_revision'),
    operation_id: textColumn(r.operation_id, 'operation_id'),
    request_digest: textColumn(r.request_digest, 'request_digest'),
    events: jsonColumn<JsonObject[]>(r.events, 'events'),
    receipt: jsonColumn<JsonObject>(r.receipt, 'receipt'),
  };
}

export function decodeLineage(r: Record<string, unknown>): LineageRecord {
  return {
    source_store_identity: textColumn(r.source_store_identity, 'source_store_identity'),
    source_incarnation: textColumn(r.source_incarnation, 'source_incarnation'),
    source_head_cursor: bigintColumn(r.source_head_cursor, 'source_head_cursor', 0),
    source_provider_revision: textColumn(r.source_provider_revision, 'source_provider_revision'),
    source_projection: textOrNullColumn(r.source_projection, 'source_projection'),
    recovery_id: textColumn(r.recovery_id, 'recovery_id'),
    content_digest: textColumn(r.content_digest, 'content_digest'),
    imported_at: textColumn(r.imported_at, 'imported_at'),
  };
}
