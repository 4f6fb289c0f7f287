/**
 * A Goal's work moved from one store to another — a change of provider (PostgreSQL to SQLite and
 * back), the rollback path of a service-kept Goal — as the work owner's own actions, on two stores
 * it holds open. The runtime's coordinator (runtime/work-move.ts) plans, confirms and orders them:
 *
 * 1. the source's last transaction (`moveOut`, handoff.ts): leases released, the fence replaced,
 *    the store marked moved to the destination — it takes no write from then on;
 * 2. `importMovedWork` on the new, empty destination: every lineage the source holds (earlier
 *    lifetimes' or stores' histories, in their import order), then the source's own history — its
 *    retained-prefix export, verified whole and bound to its own seal, ending in the move — each as
 *    read-only history whose receipts read back as the originals and whose operation ids replay;
 *    then the source head's Todos as the destination's first transaction, naming the move.
 *
 * The destination's delivery fence stays above the source's (`installation_base`): a process still
 * holding the source open is refused by a receiver once the destination has delivered there.
 * Every step is idempotent: run again, it reads back what it did.
 */
import { conflict } from '../../core/index.js';
import { protocolViolation } from './errors.js';
import { importLineage, adoptRecoveredState, storeNotEmpty } from './adopt.js';
import { MAX_SCAN_LIMIT, type LineageImportResult, type StoredCommitText } from './contract.js';
import type { WorkCore } from './commit.js';
import { verifyRetainedPrefix } from './retained-prefix.js';
import type { ImportMovedWorkRequest, WorkOperationResult, WorkOwner } from './api.js';

const notMovedHere = (goalId: string) =>
  conflict(
    'work_move_source_not_moved',
    `Goal ${goalId}'s source store has not been moved out to this store by this move.`,
    { nextAction: 'run the move again from its plan: loopx goal move-work --help', details: { goal_id: goalId } },
  );

/** One lineage's rows, as the source holds them. */
export async function* lineageRows(core: WorkCore, source: string): AsyncGenerator<StoredCommitText, void, undefined> {
  for (let after = 0; ;) {
    const page = await core.provider.scanLineage(source, after, MAX_SCAN_LIMIT);
    if (page.length === 0) return;
    yield* page;
    after = page.at(-1)!.cursor;
  }
}

async function collect(source: WorkOwner, identity: string): Promise<StoredCommitText[]> {
  const rows: StoredCommitText[] = [];
  for await (const r of source.lineageRows(identity)) rows.push(r);
  return rows;
}

export async function importMovedWork(core: WorkCore, r: ImportMovedWorkRequest): Promise<WorkOperationResult> {
  const source = r.source;
  const from = await source.view();
  const me = core.identity.store_identity;
  if (from.moved_to?.move_id !== r.move_id || from.moved_to.store_identity !== me) throw notMovedHere(core.goalId);
  // 1. What the source held from before it: each lineage, as it was imported there.
  for (const l of await source.lineage()) {
    const { imported_at: _, ...lineage } = l;
    const rows = await collect(source, l.source_store_identity);
    let outcome: LineageImportResult = await core.provider.importLineage({ lineage, rows });
    // A landed import reads back as `already`.
    if (outcome.status === 'ambiguous') outcome = await core.provider.importLineage({ lineage, rows });
    if (outcome.status !== 'applied' && outcome.status !== 'already')
      throw storeNotEmpty({ outcome: outcome.status, ...('reason' in outcome ? { reason: outcome.reason } : {}) });
  }
  // 2. The source's own history, ending in the move: its export, verified whole and bound to its seal.
  const ex = await source.exportRetainedPrefix();
  const sealed = verifyRetainedPrefix(ex.records, { goal_id: core.goalId });
  if (!sealed.ok || sealed.archive_sha256 === null)
    throw protocolViolation('the moved store’s history does not verify', { findings: sealed.findings.length });
  await importLineage(core, {
    recovery_id: r.move_id,
    export_records: ex.records,
    content_digest: sealed.archive_sha256,
  });
  // 3. Its head's Todos as this store's first transaction; the fence counts the installations before it.
  const base = Math.max(0, from.delivery_incarnation + 1 - (core.provider.restoreGeneration ?? 0));
  return adoptRecoveredState(core, { operation_id: r.operation_id, recovery_id: r.move_id, installation_base: base });
}
