/**
 * Retained-prefix export of a Goal's committed work history (`loopx_work_retained_prefix_v0`) and
 * its offline verifier. The export pins head cursor, provider revision and store identity, then
 * reads every transaction up to that cursor — commits that land meanwhile are after the prefix and
 * are left out, so writers never wait. Records: one header, one hash-linked record per transaction
 * (each carries the SHA-256 of the previous record's canonical JSON, the first the header's), one
 * seal (record count and chain tip). `archive_sha256` is the SHA-256 of the seal, so it covers the
 * whole chain; it is a digest of records, not of file bytes. The verifier replays the events and
 * checks the result against the header's head projection digest. A valid prefix is history: it
 * never makes a lease valid or grants authority. The export reads through the Promise-based
 * provider; the verifier is synchronous and pure (it reads no store).
 */
import { canonicalJson, sha256Hex } from '../../core/index.js';
import { MAX_SCAN_LIMIT, WORK_RETENTION, type JsonObject, type WorkProvider } from './contract.js';
import { protocolViolation } from './errors.js';
import { finding, hasErrors, type WorkFinding } from './findings.js';
import {
  applyTransaction,
  eventsProblem,
  initialProjection,
  projectionDigest,
  receiptProblem,
  type WorkEvent,
  type WorkProjection,
  type WorkReceipt,
} from './model.js';

export const RETAINED_PREFIX_SCHEMA = 'loopx_work_retained_prefix_v0';
/** §12 capacity: committed transactions per Goal that must be readable completely. */
export const MAX_RETAINED_TRANSACTIONS = 20_000;

export interface RetainedPrefixHeader {
  readonly record: 'header';
  readonly schema_version: typeof RETAINED_PREFIX_SCHEMA;
  readonly goal_id: string;
  readonly store_identity: string;
  readonly incarnation: string;
  readonly retention: typeof WORK_RETENTION;
  readonly head_cursor: number;
  readonly provider_revision: string;
  readonly head_projection_sha256: string;
  readonly captured_at_start: string;
  readonly captured_at_end: string;
}

export interface RetainedPrefixTransaction {
  readonly record: 'transaction';
  readonly prev_sha256: string;
  readonly cursor: number;
  readonly provider_revision: string;
  readonly operation_id: string;
  readonly request_digest: string;
  readonly events: readonly JsonObject[];
  readonly receipt: JsonObject;
}

export interface RetainedPrefixSeal {
  readonly record: 'seal';
  readonly record_count: number;
  /** SHA-256 of the last record before the seal (the header when there are no transactions). */
  readonly chain_sha256: string;
}

export type RetainedPrefixRecord = RetainedPrefixHeader | RetainedPrefixTransaction | RetainedPrefixSeal;

export interface RetainedPrefixExport {
  readonly records: readonly RetainedPrefixRecord[];
  /** Each record's canonical JSON (RFC 8785), as hashed into the chain. */
  readonly lines: readonly string[];
  readonly archive_sha256: string;
  readonly capture_interval: { readonly start: string; readonly end: string };
  readonly goal_id: string;
  readonly store_identity: string;
  readonly head_cursor: number;
  readonly provider_revision: string;
}

const recordSha = (record: unknown): string => sha256Hex(canonicalJson(record));

export async function exportRetainedPrefix(
  provider: Pick<WorkProvider, 'storeIdentity' | 'load' | 'scanCommitted'>,
  clock: () => Date,
): Promise<RetainedPrefixExport> {
  const start = clock().toISOString();
  const identity = await provider.storeIdentity();
  const pin = await provider.load();
  const headProjection: JsonObject | WorkProjection = pin.head ?? initialProjection(identity.goal_id);
  const body: Array<Omit<RetainedPrefixTransaction, 'prev_sha256'>> = [];
  let after = 0;
  while (after < pin.cursor) {
    const page = await provider.scanCommitted(after, Math.min(MAX_SCAN_LIMIT, pin.cursor - after));
    if (page.transactions.length === 0) throw gap(after + 1);
    for (const t of page.transactions) {
      if (t.cursor !== after + 1) throw gap(after + 1);
      body.push({
        record: 'transaction',
        cursor: t.cursor,
        provider_revision: t.provider_revision,
        operation_id: t.operation_id,
        request_digest: t.request_digest,
        events: t.events,
        receipt: t.receipt,
      });
      after = t.cursor;
    }
  }
  const last = body.at(-1);
  if (last !== undefined && last.provider_revision !== pin.provider_revision) {
    throw protocolViolation('the pinned head revision is not the revision of its cursor', { head_cursor: pin.cursor });
  }
  const end = clock().toISOString();
  const header: RetainedPrefixHeader = {
    record: 'header',
    schema_version: RETAINED_PREFIX_SCHEMA,
    goal_id: identity.goal_id,
    store_identity: identity.store_identity,
    incarnation: identity.incarnation,
    retention: WORK_RETENTION,
    head_cursor: pin.cursor,
    provider_revision: pin.provider_revision,
    head_projection_sha256: projectionDigest(headProjection),
    captured_at_start: start,
    captured_at_end: end,
  };
  // Each record is encoded once: the text hashed into the chain is the text a backup stores.
  const records: RetainedPrefixRecord[] = [header];
  const lines: string[] = [canonicalJson(header)];
  let prev = sha256Hex(lines[0]!);
  for (const t of body) {
    const rec: RetainedPrefixTransaction = { ...t, prev_sha256: prev };
    records.push(rec);
    lines.push(canonicalJson(rec));
    prev = sha256Hex(lines.at(-1)!);
  }
  const seal: RetainedPrefixSeal = { record: 'seal', record_count: body.length, chain_sha256: prev };
  records.push(seal);
  lines.push(canonicalJson(seal));
  return {
    records,
    lines,
    archive_sha256: sha256Hex(lines.at(-1)!),
    capture_interval: { start, end },
    goal_id: identity.goal_id,
    store_identity: identity.store_identity,
    head_cursor: pin.cursor,
    provider_revision: pin.provider_revision,
  };
}

const gap = (cursor: number) => protocolViolation(`the history has a gap at cursor ${cursor}`, { cursor });

/** One canonical JSON record per line. */
export const retainedPrefixNdjson = (records: readonly RetainedPrefixRecord[]): string =>
  records.map((r) => `${canonicalJson(r)}\n`).join('');

/** Parses NDJSON into records; a line that is not JSON becomes a finding (and is kept as `null`). */
export function parseRetainedPrefixNdjson(text: string): { records: unknown[]; findings: WorkFinding[] } {
  const findings: WorkFinding[] = [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const records = lines.map((line, i) => {
    try {
      return JSON.parse(line) as unknown;
    } catch {
      findings.push(
        finding(
          'retained_prefix_record_invalid',
          `line:${i + 1}`,
          'the export is damaged; produce a new one from the live store',
        ),
      );
      return null;
    }
  });
  return { records, findings };
}

export interface RetainedPrefixVerification {
  readonly ok: boolean;
  readonly findings: readonly WorkFinding[];
  readonly goal_id: string | null;
  readonly store_identity: string | null;
  readonly head_cursor: number | null;
  readonly record_count: number;
  /** SHA-256 of the seal as found (null without a seal). */
  readonly archive_sha256: string | null;
  /** The replayed head, when every transaction applied. History only — grants no authority. */
  readonly projection: WorkProjection | null;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNat = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isStr = (v: unknown): v is string => typeof v === 'string';
const HEX64 = /^[0-9a-f]{64}$/;

const REEXPORT = 'produce a new export from the live store; do not trust this one';

type Header = RetainedPrefixHeader;

/** The header's own checks: a header the rest can be checked against, or the verification's early answer. */
function checkHeader(
  header: unknown,
  findings: WorkFinding[],
): { header: Header } | { stop: Partial<RetainedPrefixVerification> } {
  if (!isObj(header) || header.record !== 'header') {
    findings.push(finding('retained_prefix_record_invalid', 'header', REEXPORT));
    return { stop: {} };
  }
  if (header.schema_version !== RETAINED_PREFIX_SCHEMA) {
    findings.push(finding('retained_prefix_schema_unknown', 'header', 'read it with the loopx version that wrote it'));
    return { stop: {} };
  }
  if (
    !isStr(header.goal_id) ||
    !isStr(header.store_identity) ||
    !isStr(header.incarnation) ||
    header.retention !== WORK_RETENTION ||
    !isNat(header.head_cursor) ||
    !isStr(header.provider_revision) ||
    !isStr(header.head_projection_sha256) ||
    !HEX64.test(header.head_projection_sha256) ||
    !isStr(header.captured_at_start) ||
    !isStr(header.captured_at_end)
  ) {
    findings.push(finding('retained_prefix_record_invalid', 'header', REEXPORT));
    return { stop: {} };
  }
  if (header.head_cursor > MAX_RETAINED_TRANSACTIONS) {
    findings.push(
      finding(
        'retained_prefix_capacity_exceeded',
        'header',
        `split the Goal's work; at most ${MAX_RETAINED_TRANSACTIONS} transactions are supported`,
      ),
    );
    return {
      stop: { goal_id: header.goal_id, store_identity: header.store_identity, head_cursor: header.head_cursor },
    };
  }
  return { header: header as unknown as Header };
}

/** Where the walk over the transaction records stands. */
interface Walk {
  /** Index of the first record after the transactions (the seal, when there is one). */
  i: number;
  prev: string;
  projection: WorkProjection | null;
  expectedCursor: number;
  count: number;
  lastRevision: string | null;
  lastCursor: number;
  readonly seen: Set<string>;
}

/** One transaction record: chain, contiguity, uniqueness, receipt and replay. */
function checkTransaction(rec: unknown, subject: string, w: Walk, findings: WorkFinding[]): void {
  if (
    !isObj(rec) ||
    rec.record !== 'transaction' ||
    !isStr(rec.prev_sha256) ||
    !isNat(rec.cursor) ||
    !isStr(rec.provider_revision) ||
    !isStr(rec.operation_id) ||
    !isStr(rec.request_digest) ||
    !Array.isArray(rec.events) ||
    !isObj(rec.receipt)
  ) {
    findings.push(finding('retained_prefix_record_invalid', subject, REEXPORT));
    w.projection = null;
    w.prev = recordSha(rec ?? null);
    w.count++;
    return;
  }
  const at = `cursor:${rec.cursor}`;
  if (rec.prev_sha256 !== w.prev) findings.push(finding('retained_prefix_chain_broken', at, REEXPORT));
  if (rec.cursor !== w.expectedCursor) findings.push(finding('retained_prefix_cursor_gap', at, REEXPORT));
  if (w.seen.has(rec.operation_id)) findings.push(finding('work_operation_duplicate', at, REEXPORT));
  w.seen.add(rec.operation_id);
  const rp = receiptProblem(rec.receipt);
  const receipt = rec.receipt as unknown as WorkReceipt;
  if (rp) findings.push(finding('work_receipt_invalid', at, REEXPORT));
  else if (
    receipt.operation_id !== rec.operation_id ||
    receipt.request_digest !== rec.request_digest ||
    receipt.cursor !== rec.cursor
  ) {
    findings.push(finding('work_receipt_mismatch', at, REEXPORT));
  }
  const ep = eventsProblem(rec.events);
  if (ep) {
    findings.push(finding('work_event_invalid', at, REEXPORT));
    w.projection = null;
  } else if (w.projection !== null && !rp) {
    try {
      w.projection = applyTransaction(w.projection, rec.events as unknown as WorkEvent[], receipt.committed_at);
    } catch {
      findings.push(finding('work_event_invalid', at, REEXPORT));
      w.projection = null;
    }
  }
  w.prev = recordSha(rec);
  w.expectedCursor = rec.cursor + 1;
  w.lastCursor = rec.cursor;
  w.lastRevision = rec.provider_revision;
  w.count++;
}

/** Checks a retained prefix offline: schema, capacity, chain, contiguity, seal, receipts and replay. Collects every finding. */
export function verifyRetainedPrefix(
  records: readonly unknown[],
  options: { goal_id?: string } = {},
): RetainedPrefixVerification {
  const findings: WorkFinding[] = [];
  const done = (extra: Partial<RetainedPrefixVerification> = {}): RetainedPrefixVerification => ({
    ok: !hasErrors(findings),
    findings,
    goal_id: null,
    store_identity: null,
    head_cursor: null,
    record_count: 0,
    archive_sha256: null,
    projection: null,
    ...extra,
  });
  const checked = checkHeader(records[0], findings);
  if ('stop' in checked) return done(checked.stop);
  const header = checked.header;
  const base = { goal_id: header.goal_id, store_identity: header.store_identity, head_cursor: header.head_cursor };
  if (options.goal_id !== undefined && header.goal_id !== options.goal_id) {
    findings.push(finding('retained_prefix_goal_mismatch', 'header', 'use the export of the Goal being verified'));
  }
  const startMs = Date.parse(header.captured_at_start);
  const endMs = Date.parse(header.captured_at_end);
  if (Number.isNaN(startMs) || Number.isNaN(endMs) || endMs < startMs) {
    findings.push(finding('retained_prefix_interval_invalid', 'header', REEXPORT));
  }

  const w: Walk = {
    i: 1,
    prev: recordSha(header),
    projection: initialProjection(header.goal_id),
    expectedCursor: 1,
    count: 0,
    lastRevision: null,
    lastCursor: 0,
    seen: new Set(),
  };
  for (; w.i < records.length; w.i++) {
    const rec = records[w.i];
    if (isObj(rec) && rec.record === 'seal') break;
    checkTransaction(rec, `record:${w.i}`, w, findings);
  }

  const seal = records[w.i];
  let archiveSha: string | null = null;
  if (!isObj(seal) || seal.record !== 'seal') {
    findings.push(finding('retained_prefix_seal_missing', 'seal', 'the export is truncated; produce a new one'));
  } else {
    archiveSha = recordSha(seal);
    if (seal.record_count !== w.count || seal.chain_sha256 !== w.prev)
      findings.push(finding('retained_prefix_seal_mismatch', 'seal', REEXPORT));
    if (w.i + 1 < records.length)
      findings.push(finding('retained_prefix_trailing_records', `record:${w.i + 1}`, REEXPORT));
  }
  if (w.lastCursor !== header.head_cursor || (w.count > 0 && w.lastRevision !== header.provider_revision)) {
    findings.push(finding('retained_prefix_head_mismatch', 'header', REEXPORT));
  }
  let projection = w.projection;
  if (projection !== null && projectionDigest(projection) !== header.head_projection_sha256) {
    findings.push(finding('work_projection_mismatch', 'header', REEXPORT));
    projection = null;
  }
  return done({
    ...base,
    record_count: w.count,
    archive_sha256: archiveSha,
    projection: hasErrors(findings) ? null : projection,
  });
}
