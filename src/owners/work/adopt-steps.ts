/**
 * The work owner's adoption steps: `import_inert` (the recovered history, sealed as the audit
 * bound it, imported as read-only lineage of a NEW store — new store identity, new incarnation)
 * then `rebind` (the recovered Todos as that store's first transaction, leases retired, with a
 * receipt naming the recovery). Each reads back what the store holds after the call.
 *
 * `import_inert` reads the work component's copy and export only from the context's paths: the
 * apply's staged copies, checked against the audit's digests before any step ran.
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { rejected } from '../../core/index.js';
import { stepReceipt, type AdoptionContext, type OwnerAdoptionStep } from '../adoption-contract.js';
import { goalScope } from '../contract.js';
import { LAYOUT } from '../layout.js';
import { openGoalWork } from './work.js';

const componentOf = (ctx: AdoptionContext) => {
  const c = ctx.components[0];
  if (!c || c.export_member === null) {
    throw rejected('recovery_work_unreadable', `The recovered work of Goal ${ctx.goal_id} has no verified component.`, {
      nextAction: 'verify the backup again into a new workspace and plan the recovery from it',
    });
  }
  return { component: c, export_member: c.export_member };
};

/** The first line of the component's export, as the backup archived it. */
const headerLine = (ctx: AdoptionContext, member: string): string =>
  readFileSync(join(ctx.workspace_dir, member), 'utf8').split('\n')[0] ?? '';

const importInert: OwnerAdoptionStep = {
  action: 'work:import_inert',
  disposition: 'import_inert',
  describes:
    'the committed history as read-only history of a new work store (new store identity and incarnation); original receipts stay readable',
  async apply(ctx) {
    const { component, export_member } = componentOf(ctx);
    // The first step that opens the new work store makes it (a SQLite file, or its rows in the destination's PostgreSQL schema).
    const work = await openGoalWork({ root: ctx.destination, goal_id: ctx.goal_id, create: true });
    try {
      ctx.fault(`recover.${importInert.action}.before`);
      // Captured from a database service: the export is the whole history; else the workspace's copy of work.db.
      const records = ctx.exports?.('work', goalScope(ctx.goal_id));
      const { result, lineage } = await work.importLineage(
        records !== undefined
          ? { recovery_id: ctx.recovery_id, export_records: records, content_digest: component.content_digest }
          : {
              recovery_id: ctx.recovery_id,
              copy_path: join(ctx.workspace_root, LAYOUT.workDb(ctx.goal_id)),
              export_header_line: headerLine(ctx, export_member),
              content_digest: component.content_digest,
            },
      );
      ctx.fault(`recover.${importInert.action}.after`);
      const identity = await work.storeIdentity();
      return stepReceipt(importInert, 'work', ctx, result, {
        store_identity: identity.store_identity,
        incarnation: identity.incarnation,
        source_store_identity: lineage.source_store_identity,
        source_provider_revision: lineage.source_provider_revision,
        imported_transactions: lineage.source_head_cursor,
      });
    } finally {
      work.close();
    }
  },
};

const rebind: OwnerAdoptionStep = {
  action: 'work:rebind',
  disposition: 'rebind',
  readsWorkspace: false, // the recovered state is the imported lineage's, in the new store
  describes:
    "the recovered Todos as the new lifetime's first transaction: leases retired, claims cleared, a receipt naming the recovery",
  async apply(ctx) {
    const work = await openGoalWork({ root: ctx.destination, goal_id: ctx.goal_id });
    try {
      ctx.fault(`recover.${rebind.action}.before`);
      const r = await work.adoptRecoveredState({ operation_id: ctx.key(rebind.action), recovery_id: ctx.recovery_id });
      ctx.fault(`recover.${rebind.action}.after`);
      const view = await work.view();
      const byStatus: Record<string, number> = {};
      for (const t of view.todos) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
      return stepReceipt(rebind, 'work', ctx, r.result === 'applied' ? 'applied' : 'already', {
        store_identity: view.store_identity,
        cursor: view.cursor,
        provider_revision: view.provider_revision,
        receipt_operation_id: r.receipt.operation_id,
        todos_by_status: byStatus,
      });
    } finally {
      work.close();
    }
  },
};

export const adoptionSteps: readonly OwnerAdoptionStep[] = [importInert, rebind];
