/**
 * The work owner's recovery contract where a Goal's work is in PostgreSQL (its root's schema, or one
 * the Goal chose, its rows under the Goal's store key):
 * - `capture`: the Goal's retained-prefix export (`loopx_work_retained_prefix_v0`) read entirely in
 *   the backup set's one snapshot — store identity, head, and every committed transaction up to it.
 *   Its records are all in the export (`in_export`); there is no member. One snapshot: the head it
 *   pins is both ends of the interval.
 * - `verifyOffline`: the retained-prefix verifier on that export alone — chain, seal, contiguity,
 *   receipts, and the replay of every transaction to the head projection the header names. It opens
 *   nothing: no copy, no connection.
 * - `readHistorical` of such a component (a recovery workspace's): the same export replayed — its
 *   Todos, fence and history as history only.
 */
import { canonicalJson, sha256Hex } from '../../core/index.js';
import type { LiveService, OfflineVerification, OwnerCapture, OwnerScope } from '../contract.js';
import type { HistoricalWork } from './historical.js';
import { openPgWorkSnapshot, pgWorkHead } from './postgres.js';
import { RETAINED_PREFIX_SCHEMA, exportRetainedPrefix, verifyRetainedPrefix } from './retained-prefix.js';

export async function captureWorkFromService(
  service: LiveService,
  scope: OwnerScope & { goal_id: string },
  storeKey: string = scope.goal_id,
): Promise<OwnerCapture> {
  const reader = await openPgWorkSnapshot((fn) => service.snapshot(fn), scope.goal_id, storeKey);
  const ex = await exportRetainedPrefix(reader, () => new Date());
  const point = { revision: ex.provider_revision, cursor: ex.head_cursor };
  return {
    owner: 'work',
    scope,
    export_schema: RETAINED_PREFIX_SCHEMA,
    source_identity: ex.store_identity,
    start: { ...point, at: ex.capture_interval.start },
    end: { ...point, at: ex.capture_interval.end },
    captured: point,
    members: [],
    export_items: 'in_export',
    export: ex.records,
    export_lines: ex.lines,
    export_sha256: ex.archive_sha256,
    record_count: ex.head_cursor,
    provider: service.provider,
  };
}

/** The Goal's head now (null: it has no store in the schema). */
export async function observeWorkInService(
  service: LiveService,
  goalId: string,
  storeKey: string = goalId,
): Promise<{ revision: string; cursor: number; at: string } | null> {
  const head = await service.current((q) => pgWorkHead(q, goalId, storeKey));
  return head === null ? null : { revision: head.provider_revision, cursor: head.cursor, at: new Date().toISOString() };
}

/** A retained-prefix export captured from the service, verified alone. */
export function verifyWorkExport(
  scope: OwnerScope & { goal_id: string },
  records: readonly unknown[],
): OfflineVerification {
  const v = verifyRetainedPrefix(records, { goal_id: scope.goal_id });
  const header = records[0] as { provider_revision?: unknown } | undefined;
  const revision = v.ok && typeof header?.provider_revision === 'string' ? header.provider_revision : null;
  const todos = v.projection?.todos ?? [];
  const byStatus: Record<string, number> = {};
  for (const t of todos) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
  return {
    owner: 'work',
    scope,
    members: [],
    ok: v.ok,
    readback: { ok: v.ok, counts: { todos: todos.length, history: v.record_count } },
    source_identity: v.store_identity,
    revision,
    cursor: v.head_cursor,
    export_sha256: v.archive_sha256,
    facts: {
      work: {
        goal_id: v.goal_id,
        readable: v.ok,
        store_identity: v.store_identity,
        head_cursor: v.head_cursor,
        history_count: v.record_count,
        todo_count: todos.length,
        todos_by_status: byStatus,
      },
    },
    findings: v.findings,
  };
}

/** A Goal's work read back from its retained-prefix export alone (a recovery workspace of a PostgreSQL root): history only. */
export function historicalFromExport(records: readonly unknown[], goalId: string): HistoricalWork {
  const v = verifyRetainedPrefix(records, { goal_id: goalId });
  const header = (v.goal_id === null ? null : records[0]) as {
    incarnation?: unknown;
    provider_revision?: unknown;
  } | null;
  const projection = v.projection;
  return {
    readable: v.ok,
    execution_authority_granted: false,
    goal_id: v.goal_id,
    store_identity: v.store_identity,
    incarnation: typeof header?.incarnation === 'string' ? header.incarnation : null,
    user_version: null,
    head_cursor: v.head_cursor,
    provider_revision: v.ok && typeof header?.provider_revision === 'string' ? header.provider_revision : null,
    history_count: v.record_count,
    handoff_mode: projection?.handoff_mode ?? null,
    fence_epoch: projection?.fence?.epoch ?? null,
    todos: projection?.todos ?? [],
    head_projection_sha256: projection === null ? null : sha256Hex(canonicalJson(projection)),
    findings: v.findings,
  };
}
