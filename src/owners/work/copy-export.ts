/**
 * The copy export (`loopx_work_copy_export_v0`) of a COPIED work database: the retained-prefix
 * header (the copy's store identity, incarnation, head and projection digest) and a seal over every
 * committed row left in the copy. A backup archives the copy and only this header and seal; the
 * verifier rebuilds the seal from the copy's rows in the one pass that replays them (historical.ts),
 * so the content digest — the seal's SHA-256 — binds every committed row without the history being
 * archived twice.
 *
 * The seal's `records_sha256` is one SHA-256 over the header's canonical JSON and a newline, then,
 * for each committed row in cursor order, its stored columns framed so that no two row sequences
 * frame alike: the cursor in decimal, `provider_revision`, `operation_id` and `request_digest` as
 * JSON strings, then `events` and `receipt` as stored (the provider's canonical JSON text), each
 * after its UTF-8 byte length — every field followed by a newline. One running hash instead of a
 * hash per record (the live retained-prefix export's chain): a 20,000-transaction history is sealed
 * at close to SHA-256's own speed, on every backup and every verify. A row whose stored text was
 * altered changes the seal. docs/test-vectors/work-copy-export-v0.json is a worked example.
 */
import { createHash, type Hash } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../core/index.js';
import { MAX_SCAN_LIMIT, WORK_RETENTION, parseProviderRevision } from './contract.js';
import { protocolViolation } from './errors.js';
import { initialProjection, projectionDigest } from './model.js';
import type { RetainedPrefixHeader } from './retained-prefix.js';
import { openWorkDbCopy, type RawCommitRow } from './sqlite.js';

export const COPY_EXPORT_SCHEMA = 'loopx_work_copy_export_v0';

/** The header of a copy export: the retained-prefix header's fields under the copy export's schema. */
export type CopyExportHeader = Omit<RetainedPrefixHeader, 'schema_version'> & {
  readonly schema_version: typeof COPY_EXPORT_SCHEMA;
};

export interface CopyExportSeal {
  readonly record: 'seal';
  readonly record_count: number;
  /** SHA-256 over the header line and every framed row (see above). */
  readonly records_sha256: string;
}

/** The stored columns a row is sealed by. */
export type StoredCommit = Pick<
  RawCommitRow,
  'cursor' | 'provider_revision' | 'operation_id' | 'request_digest' | 'events' | 'receipt'
>;

/** One row as the seal frames it. */
export function framedRow(row: StoredCommit): string {
  const events = String(row.events);
  const receipt = String(row.receipt);
  return (
    `${row.cursor}\n${JSON.stringify(row.provider_revision)}\n${JSON.stringify(row.operation_id)}\n${JSON.stringify(row.request_digest)}\n` +
    `${Buffer.byteLength(events)}\n${events}\n${Buffer.byteLength(receipt)}\n${receipt}\n`
  );
}

/** The copy export's seal over a header and the rows after it, fed one stored row at a time. */
export class CopySeal {
  private readonly hash: Hash;
  private count = 0;

  constructor(headerLine: string) {
    this.hash = createHash('sha256').update(`${headerLine}\n`);
  }

  add(row: StoredCommit): void {
    this.hash.update(framedRow(row));
    this.count++;
  }

  /** The seal over every row added, its canonical JSON and its SHA-256 (the export's digest). */
  seal(): { readonly record: CopyExportSeal; readonly line: string; readonly sha256: string } {
    const record: CopyExportSeal = {
      record: 'seal',
      record_count: this.count,
      records_sha256: this.hash.copy().digest('hex'),
    };
    const line = canonicalJson(record);
    return { record, line, sha256: sha256Hex(line) };
  }
}

/** The export of a copy, with only its header and seal (the records are the copy's rows). */
export interface CopyExport {
  readonly header: CopyExportHeader;
  readonly seal: CopyExportSeal;
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
 * capture then reports the component unreadable); it never writes to the copy. The snapshot is the
 * capture's own file, in rollback-journal mode, so it is read where it lies: copying it again into
 * scratch cost about 6 % of the capture thread's CPU (a WAL-mode file is still copied first).
 */
export function exportWorkCopy(
  copyPath: string,
  goalId: string,
  interval: { readonly start: string; readonly end: string },
): CopyExport {
  const copy = openWorkDbCopy(copyPath, { inPlace: true });
  try {
    const meta = copy.metadata();
    const head = copy.head();
    if (!meta || !head || meta.goal_id !== goalId)
      throw protocolViolation('the copy is not the work store of this Goal', {});
    const rev = parseProviderRevision(head.provider_revision);
    if (!rev || rev.incarnation !== meta.incarnation || rev.cursor !== head.cursor)
      throw protocolViolation('the head revision does not name its cursor', { head_cursor: head.cursor });
    const projection =
      head.projection === null
        ? projectionDigest(initialProjection(goalId))
        : projectionDigest(JSON.parse(head.projection) as Record<string, never>);
    const header: CopyExportHeader = {
      record: 'header',
      schema_version: COPY_EXPORT_SCHEMA,
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
    const sealer = new CopySeal(headerLine);
    let last: StoredCommit | undefined;
    for (let after = 0; after < head.cursor;) {
      const rows = copy.scanRows(after, Math.min(MAX_SCAN_LIMIT, head.cursor - after));
      if (rows.length === 0) throw gap(after + 1);
      for (const row of rows) {
        if (row.cursor !== after + 1) throw gap(after + 1);
        sealer.add(row);
        last = row;
        after = row.cursor;
      }
    }
    if (last !== undefined && last.provider_revision !== head.provider_revision) {
      throw protocolViolation('the head revision is not the revision of its cursor', { head_cursor: head.cursor });
    }
    const seal = sealer.seal();
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
