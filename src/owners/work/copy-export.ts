/**
 * The retained-prefix export (`loopx_work_retained_prefix_v0`) of a COPIED work database, with its
 * transaction records left in the copy. A backup archives the copy and only the export's header and
 * seal; the verifier rebuilds every transaction record from the copy's rows in the one pass that
 * replays them (historical.ts), so the chain — and the content digest, the seal's SHA-256 — binds
 * every committed row without the history being archived twice.
 *
 * `transactionLine` writes a record's canonical JSON by hand instead of `canonicalJson(record)`:
 * providers store events and receipts as canonical JSON text (encoding.ts), so the record is built
 * around that stored text rather than parsed and re-encoded (about 4× faster on a 20,000-transaction
 * history, which a backup and a verify each walk once). Keys are in RFC 8785 order and every other
 * string goes through `JSON.stringify` (RFC 8785's string form), so for any row a provider wrote the
 * line equals `canonicalJson` of the record (test/owners/work-copy-export.test.ts checks it). A row
 * whose stored text was altered is still chained byte for byte: the seal then differs.
 */
import { hash } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../core/index.js';
import { MAX_SCAN_LIMIT, WORK_RETENTION, parseProviderRevision } from './contract.js';
import { protocolViolation } from './errors.js';
import { initialProjection, projectionDigest } from './model.js';
import { RETAINED_PREFIX_SCHEMA, type RetainedPrefixHeader, type RetainedPrefixSeal } from './retained-prefix.js';
import { openWorkDbCopy, type RawCommitRow } from './sqlite.js';

/** The stored columns a transaction record is built from. */
export type StoredCommit = Pick<RawCommitRow, 'cursor' | 'provider_revision' | 'operation_id' | 'request_digest' | 'events' | 'receipt'>;

/** One transaction record's canonical JSON (keys: cursor, events, operation_id, prev_sha256, provider_revision, receipt, record, request_digest). */
export const transactionLine = (row: StoredCommit, prev: string): string =>
  `{"cursor":${row.cursor},"events":${row.events},"operation_id":${JSON.stringify(row.operation_id)},"prev_sha256":${JSON.stringify(prev)},` +
  `"provider_revision":${JSON.stringify(row.provider_revision)},"receipt":${row.receipt},"record":"transaction","request_digest":${JSON.stringify(row.request_digest)}}`;

/** The hash chain over a header and the transaction records after it, fed one stored row at a time. */
export class TransactionChain {
  private prev: string;
  private count = 0;

  constructor(headerLine: string) {
    this.prev = sha256Hex(headerLine);
  }

  add(row: StoredCommit): void {
    // One-shot hashing: no Hash object per record (a 20,000-record chain is hashed on every verify).
    this.prev = hash('sha256', transactionLine(row, this.prev), 'hex');
    this.count++;
  }

  /** The seal over every record added, its canonical JSON and its SHA-256 (the export's digest). */
  seal(): { readonly record: RetainedPrefixSeal; readonly line: string; readonly sha256: string } {
    const record: RetainedPrefixSeal = { record: 'seal', record_count: this.count, chain_sha256: this.prev };
    const line = canonicalJson(record);
    return { record, line, sha256: sha256Hex(line) };
  }
}

/** The export of a copy, with only its header and seal (the records are the copy's rows). */
export interface CopyExport {
  readonly header: RetainedPrefixHeader;
  readonly seal: RetainedPrefixSeal;
  /** The header's and the seal's canonical JSON: what the backup archives. */
  readonly lines: readonly [string, string];
  readonly archive_sha256: string;
  readonly store_identity: string;
  readonly head_cursor: number;
  readonly provider_revision: string;
  readonly record_count: number;
}

const gap = (cursor: number) => protocolViolation(`the history has a gap at cursor ${cursor}`, { cursor });

/**
 * The export of a private copy of a work database (a backup's own online snapshot): its head and
 * every committed row, chained. Throws a typed error for a copy that is not a sound work store (the
 * capture then reports the component unreadable); it never writes to the copy.
 */
export function exportWorkCopy(copyPath: string, goalId: string, interval: { readonly start: string; readonly end: string }): CopyExport {
  const copy = openWorkDbCopy(copyPath);
  try {
    const meta = copy.metadata();
    const head = copy.head();
    if (!meta || !head || meta.goal_id !== goalId) throw protocolViolation('the copy is not the work store of this Goal', {});
    const rev = parseProviderRevision(head.provider_revision);
    if (!rev || rev.incarnation !== meta.incarnation || rev.cursor !== head.cursor)
      throw protocolViolation('the head revision does not name its cursor', { head_cursor: head.cursor });
    const projection = head.projection === null ? projectionDigest(initialProjection(goalId)) : projectionDigest(JSON.parse(head.projection) as Record<string, never>);
    const header: RetainedPrefixHeader = {
      record: 'header',
      schema_version: RETAINED_PREFIX_SCHEMA,
      goal_id: goalId,
      store_identity: meta.store_identity,
      incarnation: meta.incarnation,
      retention: WORK_RETENTION,
      head_cursor: head.cursor,
      provider_revision: head.provider_revision,
      head_projection_sha256: projection,
      captured_at_start: interval.start,
      captured_at_end: interval.end,
    };
    const headerLine = canonicalJson(header);
    const chain = new TransactionChain(headerLine);
    let last: StoredCommit | undefined;
    for (let after = 0; after < head.cursor;) {
      const rows = copy.scanRows(after, Math.min(MAX_SCAN_LIMIT, head.cursor - after));
      if (rows.length === 0) throw gap(after + 1);
      for (const row of rows) {
        if (row.cursor !== after + 1) throw gap(after + 1);
        chain.add(row);
        last = row;
        after = row.cursor;
      }
    }
    if (last !== undefined && last.provider_revision !== head.provider_revision) {
      throw protocolViolation('the head revision is not the revision of its cursor', { head_cursor: head.cursor });
    }
    const seal = chain.seal();
    return {
      header,
      seal: seal.record,
      lines: [headerLine, seal.line],
      archive_sha256: seal.sha256,
      store_identity: meta.store_identity,
      head_cursor: head.cursor,
      provider_revision: head.provider_revision,
      record_count: seal.record.record_count,
    };
  } finally {
    copy.close();
  }
}
