/**
 * Recovery read side of the work owner: readback of a COPIED work database without any authority.
 * The copy is opened from an in-memory image (see `openWorkDbCopy`): no write, no sidecar, no lock.
 * Everything wrong with it becomes a finding; nothing here throws for damaged data (only for a
 * scratch file system out of space, which says nothing about the data), and nothing
 * read here — leases, fence, receipts — authorizes execution (`execution_authority_granted: false`).
 */
import { existsSync, statSync } from 'node:fs';
import { canonicalJson } from '../../core/index.js';
import { sha256Hex } from '../../core/index.js';
import { isLoopxError } from '../../core/index.js';
import { isOutOfSpace, isStoreIdentity } from '../../store/index.js';
import { INCARNATION_PATTERN, MAX_SCAN_LIMIT, parseProviderRevision } from './contract.js';
import { finding, type WorkFinding, type WorkFindingCode } from './findings.js';
import {
  applyTransaction,
  eventsProblem,
  initialProjection,
  projectionDigest,
  projectionProblem,
  receiptProblem,
  type HandoffMode,
  type Todo,
  type WorkEvent,
  type WorkProjection,
  type WorkReceipt,
} from './model.js';
import { CopySeal } from './copy-export.js';
import { MAX_RETAINED_TRANSACTIONS } from './retained-prefix.js';
import { WORK_DB_SCHEMA, WORK_DB_VERSION, openWorkDbCopy, type WorkDbCopy } from './sqlite.js';

export interface HistoricalWork {
  /** The copy could be opened and its metadata understood. */
  readonly readable: boolean;
  readonly execution_authority_granted: false;
  readonly goal_id: string | null;
  readonly store_identity: string | null;
  readonly incarnation: string | null;
  readonly user_version: number | null;
  readonly head_cursor: number | null;
  readonly provider_revision: string | null;
  /** Committed transactions read from the copy (all of them; history is never truncated). */
  readonly history_count: number;
  readonly handoff_mode: HandoffMode | null;
  readonly fence_epoch: number | null;
  /** The head's Todos (or, when the head is unusable, the replayed ones). Leases in them are history. */
  readonly todos: readonly Todo[];
  /** SHA-256 of the head projection as stored, when there is one. */
  readonly head_projection_sha256: string | null;
  /** With `sealHeader`: the copy export's seal rebuilt from every row read (null when the rows could not be read). */
  readonly export_seal?: { readonly line: string; readonly sha256: string } | null;
  readonly findings: readonly WorkFinding[];
}

export interface ReadHistoricalOptions {
  /** The Goal the copy is expected to belong to. */
  readonly goal_id?: string;
  /** `full` runs `integrity_check` (the recovery verifier's check) instead of `quick_check`. */
  readonly integrity?: 'quick' | 'full';
  /**
   * The canonical header line of a copy export (`loopx_work_copy_export_v0`) sealing this copy's
   * rows: the replay then also rebuilds the seal over every row it reads (`export_seal`).
   */
  readonly sealHeader?: string;
}

const INSPECT = 'keep the copy held; inspect it with the recovery audit';

export function readHistoricalFile(copiedWorkDbPath: string, options: ReadHistoricalOptions = {}): HistoricalWork {
  const findings: WorkFinding[] = [];
  const add = (
    code: WorkFindingCode,
    subject: string,
    next = INSPECT,
    severity: 'error' | 'warning' = 'error',
  ): void => {
    findings.push(finding(code, subject, next, severity));
  };
  const out = {
    readable: false,
    execution_authority_granted: false as const,
    goal_id: null as string | null,
    store_identity: null as string | null,
    incarnation: null as string | null,
    user_version: null as number | null,
    head_cursor: null as number | null,
    provider_revision: null as string | null,
    history_count: 0,
    handoff_mode: null as HandoffMode | null,
    fence_epoch: null as number | null,
    todos: [] as readonly Todo[],
    head_projection_sha256: null as string | null,
    ...(options.sealHeader === undefined ? {} : { export_seal: null }),
    findings,
  };

  const wal = `${copiedWorkDbPath}-wal`;
  if (existsSync(wal) && statSync(wal).size > 0) {
    add(
      'work_db_wal_sidecar_present',
      'work.db-wal',
      'readback reflects the main file only; capture with the SQLite backup API instead of copying files',
      'warning',
    );
  }

  let copy: WorkDbCopy;
  try {
    copy = openWorkDbCopy(copiedWorkDbPath);
  } catch (e) {
    if (isOutOfSpace(e)) throw e; // the environment failed, not the copy: no finding can say so
    const code =
      isLoopxError(e) && (e.code === 'work_db_not_sqlite' || e.code === 'work_db_too_large')
        ? e.code
        : 'work_db_unreadable';
    add(code, 'work.db', 'check that the copy is complete');
    return out;
  }
  try {
    return readCopy(copy, out, add, options);
  } catch (e) {
    if (isOutOfSpace(e)) throw e;
    // A copy that fails mid-read (corrupt pages) is a finding, not a crash.
    add(
      isLoopxError(e) && e.code === 'work_db_unreadable' ? 'work_db_unreadable' : 'work_db_integrity_failed',
      'work.db',
      'check that the copy is complete',
    );
    return { ...out, readable: false };
  } finally {
    copy.close();
  }
}

type Out = { -readonly [K in keyof HistoricalWork]: HistoricalWork[K] };
type Add = (code: WorkFindingCode, subject: string, next?: string, severity?: 'error' | 'warning') => void;

type HeadRow = NonNullable<ReturnType<WorkDbCopy['head']>>;
type CommitRow = ReturnType<WorkDbCopy['scanRows']>[number];

function readCopy(copy: WorkDbCopy, out: Out, add: Add, options: ReadHistoricalOptions): HistoricalWork {
  const check = options.integrity === 'full' ? copy.integrityCheck() : copy.quickCheck();
  if (check.length !== 1 || check[0] !== 'ok') add('work_db_integrity_failed', 'work.db');

  out.user_version = copy.user_version;
  if (copy.user_version > WORK_DB_VERSION) {
    add('work_store_schema_unknown', 'work.db', 'read it with the loopx version that wrote it');
    return out;
  }
  if (copy.user_version === 0) {
    add('work_store_unrecognized', 'work.db', 'this is not a loopx work database');
    return out;
  }
  const meta = copy.metadata();
  if (
    !meta ||
    meta.schema !== WORK_DB_SCHEMA ||
    !isStoreIdentity(meta.store_identity) ||
    !INCARNATION_PATTERN.test(meta.incarnation) ||
    typeof meta.goal_id !== 'string'
  ) {
    add('work_store_metadata_invalid', 'metadata');
    return out;
  }
  out.readable = true;
  out.goal_id = meta.goal_id;
  out.store_identity = meta.store_identity;
  out.incarnation = meta.incarnation;
  if (options.goal_id !== undefined && meta.goal_id !== options.goal_id)
    add('work_store_goal_mismatch', 'metadata', 'use the work database of the Goal being recovered');

  const head = copy.head();
  if (!head) {
    add('work_store_metadata_invalid', 'head');
    return out;
  }
  out.head_cursor = head.cursor;
  out.provider_revision = head.provider_revision;
  const rev = parseProviderRevision(head.provider_revision);
  if (rev && rev.incarnation !== meta.incarnation) add('work_store_foreign_incarnation', 'head');
  else if (!rev || rev.cursor !== head.cursor) add('provider_protocol_violation', 'head');

  const stats = copy.commitStats();
  if (stats.count !== head.cursor || stats.max !== head.cursor || (stats.count > 0 && stats.min !== 1))
    add('provider_protocol_violation', 'commits');
  if (stats.count > MAX_RETAINED_TRANSACTIONS) {
    add(
      'work_history_capacity_exceeded',
      'commits',
      `split the Goal's work; at most ${MAX_RETAINED_TRANSACTIONS} transactions are supported`,
    );
  }

  const chain = options.sealHeader === undefined ? undefined : new CopySeal(options.sealHeader);
  const replayed = replayHistory(copy, meta.goal_id, meta.incarnation, out, add, chain);
  if (chain !== undefined) out.export_seal = chain.seal();
  const stored = storedHead(head, meta.goal_id, out, add);
  if (stored !== null && replayed !== null && projectionDigest(replayed) !== projectionDigest(stored))
    add('work_projection_mismatch', 'head');

  const view = stored ?? replayed;
  if (view !== null) {
    out.todos = view.todos;
    out.handoff_mode = view.handoff_mode;
    out.fence_epoch = view.fence?.epoch ?? null;
  }
  return out;
}

/** Every committed transaction of the copy replayed, in pages; `null` once one cannot be applied. */
function replayHistory(
  copy: WorkDbCopy,
  goalId: string,
  incarnation: string,
  out: Out,
  add: Add,
  chain: CopySeal | undefined,
): WorkProjection | null {
  let replayed: WorkProjection | null = initialProjection(goalId);
  let expected = 1;
  let after = 0;
  let gapReported = false;
  const operations = new Set<string>();
  for (;;) {
    const rows = copy.scanRows(after, MAX_SCAN_LIMIT);
    for (const row of rows) {
      const at = `cursor:${row.cursor}`;
      if (row.cursor !== expected && !gapReported) {
        add('provider_protocol_violation', at);
        gapReported = true;
      }
      expected = row.cursor + 1;
      out.history_count++;
      chain?.add(row);
      if (operations.has(row.operation_id)) add('work_operation_duplicate', at);
      operations.add(row.operation_id);
      const rowRev = parseProviderRevision(row.provider_revision);
      if (!rowRev || rowRev.incarnation !== incarnation || rowRev.cursor !== row.cursor)
        add('work_store_foreign_incarnation', at);
      replayed = replayRow(row, at, replayed, add);
    }
    if (rows.length < MAX_SCAN_LIMIT) break;
    after = rows.at(-1)!.cursor;
  }
  return replayed;
}

/** One row's receipt and events checked and, while the replay still holds, applied. */
function replayRow(row: CommitRow, at: string, replayed: WorkProjection | null, add: Add): WorkProjection | null {
  let receipt: unknown;
  let events: unknown;
  try {
    receipt = JSON.parse(row.receipt);
    events = JSON.parse(row.events);
  } catch {
    add('work_receipt_invalid', at);
    return null;
  }
  const rp = receiptProblem(receipt);
  if (rp) add('work_receipt_invalid', at);
  else {
    const r = receipt as WorkReceipt;
    if (r.operation_id !== row.operation_id || r.request_digest !== row.request_digest || r.cursor !== row.cursor)
      add('work_receipt_mismatch', at);
  }
  if (eventsProblem(events)) {
    add('work_event_invalid', at);
    return null;
  }
  if (replayed === null || rp) return replayed;
  try {
    return applyTransaction(replayed, events as WorkEvent[], (receipt as WorkReceipt).committed_at);
  } catch {
    add('work_event_invalid', at);
    return null;
  }
}

/** The head projection as stored, when it is usable (its digest recorded in `out`). */
function storedHead(head: HeadRow, goalId: string, out: Out, add: Add): WorkProjection | null {
  if (head.projection === null) {
    if (head.cursor !== 0) add('work_head_invalid', 'head');
    return null;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(head.projection);
  } catch {
    parsed = undefined;
  }
  if (projectionProblem(parsed, goalId)) {
    add('work_head_invalid', 'head');
    return null;
  }
  const stored = parsed as WorkProjection;
  out.head_projection_sha256 = sha256Hex(canonicalJson(stored));
  return stored;
}
