/**
 * The work owner's adoption actions, for a Goal recovered from a backup into a new root:
 *
 * - `importLineage` (disposition `import_inert`): the source store's committed rows — read from
 *   the verified copy in a recovery workspace, or from the retained-prefix export of a Goal
 *   captured from a database service (verified whole, its seal the audited digest) — become this
 *   store's read-only history. Before anything is written the rows are sealed again exactly as the backup sealed them
 *   (the copy export's header line and `CopySeal`) and the seal's digest must be the component's
 *   content digest from the audit: only the history the backup bound is imported. The original
 *   receipts stay readable under their original operation ids, store identity and revisions; a
 *   commit under one of those operation ids is a replay, never a second application.
 * - `adoptRecoveredState` (disposition `rebind`): the new lifetime's first transaction, under the
 *   caller's operation id, is the source head's Todos as this store's state — active leases
 *   retired (kept as released records, so lease epochs never repeat), claims cleared, the writer
 *   fence void — with a receipt naming the recovery and the source head (`recovery`).
 *
 * Both are idempotent: the same request again is a readback (`already`, `already_applied`). This
 * store keeps its own new identity and incarnation; the source's are history.
 */
import { canonicalJson, conflict, internal, rejected } from '../../core/index.js';
import { MAX_SCAN_LIMIT, type LineageImportResult, type LineageRecord, type StoredCommitText } from './contract.js';
import { execute, type WorkCore } from './commit.js';
import { COPY_EXPORT_SCHEMA, CopySeal } from './copy-export.js';
import { projectionProblem, type RecoveredFrom, type Todo, type WorkProjection } from './model.js';
import { verifyRetainedPrefix, type RetainedPrefixHeader, type RetainedPrefixTransaction } from './retained-prefix.js';
import { openWorkDbCopy } from './sqlite.js';
import type { AdoptStateRequest, ImportLineageRequest, WorkOperationResult } from './api.js';

const lineageRefused = (code: 'work_lineage_mismatch', why: string) =>
  rejected(code, `The recovered work history cannot be imported: ${why}.`, {
    nextAction: 'verify the backup again into a new workspace and plan the recovery from it',
  });

/** This store has work of its own: history is imported, and a recovered state adopted, only into a new store. */
export const storeNotEmpty = (details?: Record<string, unknown>) =>
  conflict(
    'work_lineage_store_not_empty',
    'This work store already has work of its own; a recovered Goal is adopted only into a new store.',
    {
      nextAction: 'recover into a new, empty destination',
      ...(details ? { details } : {}),
    },
  );

interface SourceRows {
  readonly lineage: Omit<LineageRecord, 'imported_at'>;
  readonly rows: StoredCommitText[];
}

/**
 * A retained-prefix export's transactions, verified whole (chain, seal, contiguity, replay to the
 * head it names) and bound to the audited digest (its seal's SHA-256), as the rows to import.
 */
function readExportSource(
  core: WorkCore,
  r: ImportLineageRequest & { readonly export_records: readonly unknown[] },
): SourceRows {
  const v = verifyRetainedPrefix(r.export_records, { goal_id: core.goalId });
  if (!v.ok || v.store_identity === null || v.head_cursor === null)
    throw lineageRefused('work_lineage_mismatch', 'the export is not a sound history of this Goal');
  if (v.archive_sha256 !== r.content_digest)
    throw lineageRefused('work_lineage_mismatch', 'the export is not the one the backup sealed');
  if (v.store_identity === core.identity.store_identity)
    throw lineageRefused('work_lineage_mismatch', 'the export carries this store’s own identity');
  const header = r.export_records[0] as RetainedPrefixHeader;
  const rows: StoredCommitText[] = (r.export_records.slice(1, 1 + v.head_cursor) as RetainedPrefixTransaction[]).map(
    (t) => ({
      cursor: t.cursor,
      provider_revision: t.provider_revision,
      operation_id: t.operation_id,
      request_digest: t.request_digest,
      events: canonicalJson(t.events),
      receipt: canonicalJson(t.receipt),
    }),
  );
  return {
    rows,
    lineage: {
      source_store_identity: header.store_identity,
      source_incarnation: header.incarnation,
      source_head_cursor: header.head_cursor,
      source_provider_revision: header.provider_revision,
      source_projection: header.head_cursor === 0 || v.projection === null ? null : canonicalJson(v.projection),
      recovery_id: r.recovery_id,
      content_digest: r.content_digest,
    },
  };
}

/** The copy's rows, checked against the export header and re-sealed to the audited digest. */
function readSource(core: WorkCore, r: ImportLineageRequest): SourceRows {
  if ('export_records' in r) return readExportSource(core, r);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(r.export_header_line) as Record<string, unknown>;
  } catch {
    throw lineageRefused('work_lineage_mismatch', 'the export header is not JSON');
  }
  if (header.schema_version !== COPY_EXPORT_SCHEMA || header.goal_id !== core.goalId)
    throw lineageRefused('work_lineage_mismatch', 'the export header is not this Goal’s');
  const copy = openWorkDbCopy(r.copy_path);
  try {
    const meta = copy.metadata();
    const head = copy.head();
    if (!meta || !head || meta.goal_id !== core.goalId)
      throw lineageRefused('work_lineage_mismatch', 'the copy is not this Goal’s work store');
    if (
      header.store_identity !== meta.store_identity ||
      header.head_cursor !== head.cursor ||
      header.provider_revision !== head.provider_revision
    ) {
      throw lineageRefused('work_lineage_mismatch', 'the copy is not the store its export header names');
    }
    if (meta.store_identity === core.identity.store_identity)
      throw lineageRefused('work_lineage_mismatch', 'the copy carries this store’s own identity');
    const sealer = new CopySeal(r.export_header_line);
    const rows: StoredCommitText[] = [];
    for (let after = 0; after < head.cursor;) {
      const page = copy.scanRows(after, Math.min(MAX_SCAN_LIMIT, head.cursor - after));
      if (page.length === 0) break;
      for (const row of page) {
        sealer.add(row);
        rows.push({ ...row, events: String(row.events), receipt: String(row.receipt) });
        after = row.cursor;
      }
    }
    if (sealer.seal().sha256 !== r.content_digest)
      throw lineageRefused('work_lineage_mismatch', 'the copy’s rows are not the ones the backup sealed');
    return {
      rows,
      lineage: {
        source_store_identity: meta.store_identity,
        source_incarnation: meta.incarnation,
        source_head_cursor: head.cursor,
        source_provider_revision: head.provider_revision,
        source_projection: head.projection,
        recovery_id: r.recovery_id,
        content_digest: r.content_digest,
      },
    };
  } finally {
    copy.close();
  }
}

/** `import_inert`: the source history, sealed as audited, imported once. */
export async function importLineage(
  core: WorkCore,
  r: ImportLineageRequest,
): Promise<{ readonly result: 'applied' | 'already'; readonly lineage: LineageRecord }> {
  const source = readSource(core, r);
  let outcome: LineageImportResult = await core.provider.importLineage(source);
  if (outcome.status === 'ambiguous') outcome = await core.provider.importLineage(source); // a landed import reads back as `already`
  switch (outcome.status) {
    case 'applied':
    case 'already':
      if (outcome.lineage.recovery_id !== r.recovery_id || outcome.lineage.content_digest !== r.content_digest) {
        throw conflict('work_lineage_conflict', 'This work store already holds that history from another recovery.', {
          nextAction: 'recover into a new, empty destination',
        });
      }
      return { result: outcome.status, lineage: outcome.lineage };
    case 'conflict':
      if (outcome.reason === 'rows_invalid')
        throw lineageRefused('work_lineage_mismatch', 'the copy’s history is not contiguous in its own incarnation');
      throw storeNotEmpty({ reason: outcome.reason });
    default:
      throw internal('work_lineage_import_failed', 'The work store could not import the recovered history.', {
        nextAction: 'retry the same recovery step',
        details: { outcome: outcome.status },
      });
  }
}

/** A Todo as the new lifetime starts it: an active lease retired, a claim cleared. */
function retired(t: Todo, at: string): Todo {
  const lease = t.lease?.status === 'active' ? { ...t.lease, status: 'released' as const, released_at: at } : t.lease;
  if (lease === t.lease && t.claimed_by === null) return t;
  return { ...t, lease, claimed_by: null, todo_revision: t.todo_revision + 1, updated_at: at };
}

/** `rebind`: the source head's Todos as this store's first transaction, with a receipt naming the recovery. */
export async function adoptRecoveredState(core: WorkCore, r: AdoptStateRequest): Promise<WorkOperationResult> {
  const lineage = (await core.provider.lineage()).find((l) => l.recovery_id === r.recovery_id);
  if (!lineage) {
    throw rejected('work_lineage_missing', 'The recovered history has not been imported into this work store.', {
      nextAction: 'run the recovery’s apply step again: it imports the history first',
    });
  }
  const source = lineage.source_projection === null ? null : (JSON.parse(lineage.source_projection) as WorkProjection);
  if (source !== null && projectionProblem(source, core.goalId))
    throw lineageRefused('work_lineage_mismatch', 'the source head is not a work head of this Goal');
  const from: RecoveredFrom = {
    recovery_id: r.recovery_id,
    source_store_identity: lineage.source_store_identity,
    source_provider_revision: lineage.source_provider_revision,
    source_cursor: lineage.source_head_cursor,
  };
  // Only a move names a base: a recovery's request (and so its digest) is as it always was.
  const base: { installation_base?: number } =
    r.installation_base === undefined ? {} : { installation_base: r.installation_base };
  return execute(core, 'adopt_recovered_state', r, { recovery: canonicalJson(from), ...base }, ({ p, at }) => {
    if (p.authority_revision !== 0) {
      throw storeNotEmpty();
    }
    return {
      events: [
        {
          type: 'state_adopted',
          from,
          todos: (source?.todos ?? []).map((t) => retired(t, at)),
          todo_seq: source?.todo_seq ?? 0,
          handoff_mode: source?.handoff_mode ?? p.handoff_mode,
          ...base,
        },
      ],
      recovery: from,
    };
  });
}
