/**
 * The work owner's recovery contract, for one Goal:
 * - `capture`: an online snapshot of `work.db` between two reads of the live head (start and end),
 *   then the copy export (`loopx_work_copy_export_v0`) of that snapshot. Its records are the
 *   snapshot's rows (`from_copy`): only the header and the seal leave the owner.
 * - `verifyOffline`: the work reader on a private copy, with the full `integrity_check` (one copy,
 *   one check). With a `from_copy` export it rebuilds the seal from the copy's rows in the same
 *   pass that replays them and checks the header against the copy's head and the seal against the
 *   rebuilt one; with a whole retained-prefix export (`in_export`) it runs the export's offline verifier plus the check
 *   that the copy's history holds it as a prefix (same revision at the export's head cursor).
 * - `readHistorical`: the copy's Todos, leases, fence and committed history — history only.
 * - On a root whose Goal state is in PostgreSQL: capture and verification of the Goal's
 *   retained-prefix export from the set's one snapshot (service-recovery.ts).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { snapshotSqliteDatabase } from '../../store/index.js';
import type {
  HistoricalRead,
  LiveService,
  LiveSource,
  OfflineVerification,
  OwnerFinding,
  OwnerRecovery,
  OwnerScope,
} from '../contract.js';
import { hasErrors, servedBy } from '../contract.js';
import { POSTGRESQL_PROVIDER } from '../../store/index.js';
import {
  captureWorkFromService,
  historicalFromExport,
  observeWorkInService,
  verifyWorkExport,
} from './service-recovery.js';
import { LAYOUT } from '../layout.js';
import { walHeader } from '../sqlite-recovery.js';
import { readHistoricalFile, type HistoricalWork } from './historical.js';
import { canonicalJson } from '../../core/index.js';
import { WORK_RETENTION, type WorkLoad } from './contract.js';
import { COPY_EXPORT_SCHEMA, exportWorkCopy } from './copy-export.js';
import { initialProjection, projectionDigest } from './model.js';
import { verifyRetainedPrefix, type RetainedPrefixHeader } from './retained-prefix.js';
import { openSqliteWorkProvider, openWorkDbCopy, WORK_DB_SCHEMA } from './sqlite.js';

const SERVED = { providers: [POSTGRESQL_PROVIDER] } as const;

const goalOf = (scope: OwnerScope): string => {
  if (scope.goal_id === null) throw new TypeError('the work owner is read per Goal');
  return scope.goal_id;
};

/** Where a set reads this Goal's work: the schema and row key of a service, or (null) its files under the root. */
function workSourceOf(
  live: LiveSource,
  goalId: string,
): { readonly service: LiveService; readonly store_key: string } | null {
  const own = live.goalWork?.get(goalId);
  if (own !== undefined) return 'service' in own ? { service: own.service, store_key: own.store_key } : null;
  return servedBy(SERVED, live) ? { service: live.service, store_key: goalId } : null;
}

function envelope(h: HistoricalWork, scope: OwnerScope): HistoricalRead<HistoricalWork> {
  return {
    owner: 'work',
    scope,
    readable: h.readable,
    ok: h.readable && !hasErrors(h.findings),
    schema_version: h.user_version === null ? null : WORK_DB_SCHEMA,
    source_identity: h.store_identity,
    revision: h.provider_revision,
    cursor: h.head_cursor,
    counts: { todos: h.todos.length, history: h.history_count },
    value: h,
    findings: h.findings,
    execution_authority_granted: false,
  };
}

const INTEGRITY_FAILED = new Set(['work_db_integrity_failed']);
const UNREADABLE = new Set(['work_db_unreadable', 'work_db_not_sqlite', 'work_db_too_large']);

/** The copy's revision at `cursor` (its history is the export's extension iff they agree there). */
function revisionAt(abs: string, cursor: number): string | null | undefined {
  if (cursor === 0) return null;
  const copy = openWorkDbCopy(abs);
  try {
    return copy.scanRows(cursor - 1, 1)[0]?.provider_revision;
  } finally {
    copy.close();
  }
}

function prefixFindings(abs: string, goalId: string, records: readonly unknown[]): OwnerFinding[] {
  // A copy export's header and seal, said to hold every record: not a retained-prefix export at all.
  if ((records[0] as { schema_version?: unknown } | undefined)?.schema_version === COPY_EXPORT_SCHEMA) {
    return [{ code: 'retained_prefix_record_invalid', severity: 'error', subject: 'header', next_action: REEXPORT }];
  }
  const v = verifyRetainedPrefix(records, { goal_id: goalId });
  const findings: OwnerFinding[] = [...v.findings];
  if (!v.ok) return findings;
  const header = records[0] as RetainedPrefixHeader;
  const at = revisionAt(abs, header.head_cursor);
  if (header.head_cursor > 0 && at !== header.provider_revision) {
    findings.push({
      code: 'retained_prefix_head_mismatch',
      severity: 'error',
      subject: 'header',
      next_action: 'capture this Goal again; the export is not a prefix of the copied store',
    });
  }
  return findings;
}

/** A `from_copy` export as archived: its header and its seal (either undefined when it is not there). */
interface CopyFrame {
  readonly header: Record<string, unknown> | undefined;
  readonly seal: Record<string, unknown> | undefined;
  readonly extra: boolean;
}

const isRecord = (v: unknown, kind: string): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && (v as Record<string, unknown>).record === kind;

function copyFrame(records: readonly unknown[]): CopyFrame {
  const [header, seal, ...rest] = records;
  return {
    header: isRecord(header, 'header') ? header : undefined,
    seal: isRecord(seal, 'seal') ? seal : undefined,
    extra: rest.length > 0,
  };
}

const REEXPORT = 'capture this Goal again; do not trust this export';

/** The archived header and seal against the copy: the header names the copy's head, the seal the one rebuilt from its rows. */
function copyExportFindings(frame: CopyFrame, h: HistoricalWork, goalId: string): OwnerFinding[] {
  const err = (code: string, subject: string): OwnerFinding => ({
    code,
    severity: 'error',
    subject,
    next_action: REEXPORT,
  });
  const { header, seal } = frame;
  if (header === undefined) return [err('retained_prefix_record_invalid', 'header')];
  if (header.schema_version !== COPY_EXPORT_SCHEMA)
    return [
      {
        ...err('retained_prefix_schema_unknown', 'header'),
        next_action: 'read it with the loopx version that wrote it',
      },
    ];
  const out: OwnerFinding[] = [];
  if (header.goal_id !== goalId) out.push(err('retained_prefix_goal_mismatch', 'header'));
  if (!h.readable) return out;
  const headProjection =
    h.head_projection_sha256 ?? (h.head_cursor === 0 ? projectionDigest(initialProjection(goalId)) : null);
  const sameHead =
    header.store_identity === h.store_identity &&
    header.incarnation === h.incarnation &&
    header.retention === WORK_RETENTION &&
    header.head_cursor === h.head_cursor &&
    header.provider_revision === h.provider_revision &&
    header.head_projection_sha256 === headProjection;
  if (!sameHead) out.push(err('retained_prefix_head_mismatch', 'header'));
  if (seal === undefined)
    out.push({
      ...err('retained_prefix_seal_missing', 'seal'),
      next_action: 'the export is truncated; capture this Goal again',
    });
  else if (h.export_seal == null || canonicalJson(seal) !== h.export_seal.line)
    out.push(err('retained_prefix_seal_mismatch', 'seal'));
  if (frame.extra) out.push(err('retained_prefix_trailing_records', 'record:2'));
  return out;
}

export const recovery: OwnerRecovery<HistoricalWork> = {
  name: 'work',
  decides: "a Goal's canonical work: Todos, committed history, receipts, leases, store identity and writer fence",
  scope: 'goal',
  members: (scope) => [{ path: LAYOUT.workDb(goalOf(scope)), kind: 'sqlite' }],
  requiredForGoal: true,
  providers: SERVED.providers,
  placedPerGoal: true,
  recoveryPoint: true,
  dependsOn: ['goal'],
  classification: 'recovered_readable',

  async observe(live, scope) {
    const served = workSourceOf(live, goalOf(scope));
    if (served !== null) return observeWorkInService(served.service, goalOf(scope), served.store_key);
    const abs = join(live.root, LAYOUT.workDb(goalOf(scope)));
    if (!existsSync(abs)) return null;
    const provider = openSqliteWorkProvider(abs, { goal_id: goalOf(scope), create: false });
    try {
      const head = await provider.load();
      return { revision: head.provider_revision, cursor: head.cursor, at: new Date().toISOString() };
    } finally {
      provider.close();
    }
  },
  verificationProfile: 'sqlite.integrity_check+work.readHistorical/v0',

  async capture(live, scope, into) {
    const goalId = goalOf(scope);
    const served = workSourceOf(live, goalId);
    if (served !== null) return captureWorkFromService(served.service, { ...scope, goal_id: goalId }, served.store_key);
    const rel = LAYOUT.workDb(goalId);
    const dest = join(into, rel);
    const provider = openSqliteWorkProvider(join(live.root, rel), { goal_id: goalId, create: false });
    let start: WorkLoad;
    let end: WorkLoad;
    const startAt = new Date().toISOString();
    try {
      start = await provider.load();
      mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
      await snapshotSqliteDatabase(join(live.root, rel), dest);
      end = await provider.load();
    } finally {
      provider.close();
    }
    const endAt = new Date().toISOString();
    // The export is the snapshot's: its records are the copy's rows, archived once (in the copy).
    const ex = exportWorkCopy(dest, goalId, { start: startAt, end: endAt });
    return {
      owner: 'work',
      scope,
      export_schema: COPY_EXPORT_SCHEMA,
      source_identity: ex.store_identity,
      start: { revision: start.provider_revision, cursor: start.cursor, at: startAt },
      end: { revision: end.provider_revision, cursor: end.cursor, at: endAt },
      captured: { revision: ex.provider_revision, cursor: ex.head_cursor },
      members: [rel],
      export_items: 'from_copy',
      export: [ex.header, ex.seal],
      export_lines: ex.lines,
      export_sha256: ex.archive_sha256,
      record_count: ex.record_count,
    };
  },

  verifyOffline(copy, scope, options = {}): OfflineVerification {
    const goalId = goalOf(scope);
    if (options.provider !== undefined) return verifyWorkExport({ goal_id: goalId }, options.export ?? []);
    const rel = LAYOUT.workDb(goalId);
    const abs = join(copy.root, rel);
    const frame =
      options.export !== undefined && options.exportItems === 'from_copy' ? copyFrame(options.export) : undefined;
    const h = readHistoricalFile(abs, {
      goal_id: goalId,
      integrity: options.integrity ?? 'full',
      ...(frame?.header === undefined ? {} : { sealHeader: canonicalJson(frame.header) }),
    });
    const codes = new Set(h.findings.map((f) => f.code));
    const integrity = [...codes].some((c) => INTEGRITY_FAILED.has(c))
      ? 'failed'
      : [...codes].some((c) => UNREADABLE.has(c))
        ? 'unreadable'
        : 'ok';
    const member = { path: rel, integrity, wal_header: walHeader(abs) === true } as const;
    const base = {
      owner: 'work',
      scope,
      members: [member],
      source_identity: h.store_identity,
      revision: h.provider_revision,
      cursor: h.head_cursor,
    };
    if (integrity !== 'ok') return { ...base, ok: false, readback: null, facts: {}, findings: h.findings };
    const exportChecks =
      frame !== undefined
        ? copyExportFindings(frame, h, goalId)
        : options.export === undefined
          ? []
          : prefixFindings(abs, goalId, options.export);
    const findings: OwnerFinding[] = [...h.findings, ...exportChecks];
    const byStatus: Record<string, number> = {};
    for (const t of h.todos) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
    const ok = h.readable && !hasErrors(findings);
    return {
      ...base,
      ok,
      ...(frame === undefined ? {} : { export_sha256: h.export_seal?.sha256 ?? null }),
      readback: { ok, counts: { todos: h.todos.length, history: h.history_count } },
      facts: {
        work: {
          goal_id: h.goal_id,
          readable: h.readable,
          store_identity: h.store_identity,
          head_cursor: h.head_cursor,
          history_count: h.history_count,
          todo_count: h.todos.length,
          todos_by_status: byStatus,
        },
      },
      findings,
    };
  },

  readHistorical(copy, scope) {
    const records = copy.exports?.('work', scope);
    if (records !== undefined) return envelope(historicalFromExport(records, goalOf(scope)), scope);
    return envelope(
      readHistoricalFile(join(copy.root, LAYOUT.workDb(goalOf(scope))), { goal_id: goalOf(scope) }),
      scope,
    );
  },
};
