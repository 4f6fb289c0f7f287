/**
 * The owners' canonical export (the body of `capture()`): a header, one record per item, a seal.
 * Each item record names the SHA-256 of the record before it; the seal names the last one and the
 * item count, so the seal's SHA-256 binds every byte (the component's content digest). Records are
 * RFC 8785 JSON; items come sorted from the owner. The work owner's retained-prefix export
 * (`loopx_work_retained_prefix_v0`) is the same shape with its own header and transaction records.
 *
 * `verifyExport` checks a chain offline and returns every finding (schema, owner, chain, count,
 * capacity, trailing records); it trusts nothing in the export it has not re-computed.
 */
import { canonicalJson } from '../core/index.js';
import { sha256Hex } from '../core/index.js';
import { rejected } from '../core/index.js';
import type { OwnerFinding, OwnerScope } from './contract.js';

export interface ExportHeader {
  readonly record: 'header';
  readonly schema_version: string;
  readonly owner: string;
  readonly goal_id: string | null;
  readonly source_identity: string | null;
  readonly revision: string;
  readonly cursor: number;
  readonly captured_at_start: string;
  readonly captured_at_end: string;
}

export interface ExportItem {
  readonly record: 'item';
  readonly prev_sha256: string;
  readonly value: unknown;
}

export interface ExportSeal {
  readonly record: 'seal';
  readonly record_count: number;
  readonly chain_sha256: string;
}

export const recordSha256 = (record: unknown): string => sha256Hex(canonicalJson(record));

/** The content-addressed revision of an owner without a commit counter: SHA-256 of its canonical items. */
export const contentRevision = (items: readonly unknown[]): string => `sha256:${sha256Hex(canonicalJson(items))}`;

export interface BuiltExport {
  readonly records: readonly unknown[];
  /** Each record's canonical JSON, as hashed into the chain. */
  readonly lines: readonly string[];
  readonly sha256: string;
  readonly record_count: number;
}

export function buildExport(
  header: Omit<ExportHeader, 'record'>,
  items: readonly unknown[],
  maxItems: number,
): BuiltExport {
  if (items.length > maxItems) {
    throw rejected(
      'owner_export_capacity_exceeded',
      `The ${header.owner} export would hold ${items.length} records; at most ${maxItems} are exported.`,
      {
        nextAction: 'split the state across roots, or archive old records before backing up',
        details: { owner: header.owner, records: items.length, limit: maxItems },
      },
    );
  }
  const head: ExportHeader = { record: 'header', ...header };
  const records: unknown[] = [head];
  const lines: string[] = [canonicalJson(head)];
  let prev = sha256Hex(lines[0]!);
  for (const value of items) {
    const rec: ExportItem = { record: 'item', prev_sha256: prev, value };
    records.push(rec);
    lines.push(canonicalJson(rec));
    prev = sha256Hex(lines.at(-1)!);
  }
  const seal: ExportSeal = { record: 'seal', record_count: items.length, chain_sha256: prev };
  records.push(seal);
  lines.push(canonicalJson(seal));
  return { records, lines, sha256: sha256Hex(lines.at(-1)!), record_count: items.length };
}

export interface ExportCheck {
  readonly header: ExportHeader | null;
  readonly items: readonly unknown[];
  readonly sha256: string | null;
  readonly findings: readonly OwnerFinding[];
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const REEXPORT = 'capture this owner again; do not trust this export';

/** Checks an export's chain and header against the schema, owner and scope expected. */
export function verifyExport(
  records: readonly unknown[],
  expect: { schema: string; owner: string; scope: OwnerScope; maxItems: number },
): ExportCheck {
  const findings: OwnerFinding[] = [];
  const add = (code: string, subject: string): void =>
    void findings.push({ code, severity: 'error', subject, next_action: REEXPORT });
  const first = records[0];
  if (!isObj(first) || first.record !== 'header') {
    add('owner_export_header_missing', 'header');
    return { header: null, items: [], sha256: null, findings };
  }
  const header = first as unknown as ExportHeader;
  if (header.schema_version !== expect.schema) add('owner_export_schema_unknown', 'header');
  if (header.owner !== expect.owner || header.goal_id !== expect.scope.goal_id)
    add('owner_export_scope_mismatch', 'header');
  const items: unknown[] = [];
  let prev = recordSha256(header);
  let i = 1;
  for (; i < records.length; i++) {
    const r = records[i];
    if (!isObj(r) || r.record !== 'item') break;
    if (r.prev_sha256 !== prev) {
      add('owner_export_chain_broken', `record:${i}`);
      return { header, items, sha256: null, findings };
    }
    items.push(r.value);
    prev = recordSha256(r);
  }
  if (items.length > expect.maxItems) add('owner_export_capacity_exceeded', 'header');
  const seal = records[i];
  if (!isObj(seal) || seal.record !== 'seal') {
    add('owner_export_seal_missing', 'seal');
    return { header, items, sha256: null, findings };
  }
  if (seal.chain_sha256 !== prev || seal.record_count !== items.length) add('owner_export_seal_mismatch', 'seal');
  if (i + 1 !== records.length) add('owner_export_trailing_records', `record:${i + 1}`);
  if (header.cursor !== items.length) add('owner_export_cursor_mismatch', 'header');
  return { header, items, sha256: recordSha256(seal), findings };
}

/** Most items one owner export holds (the §12 capacity figures are far below it). */
export const OWNER_EXPORT_MAX_ITEMS = 1_000_000;

/** A copy of `items` sorted by a string key (code-unit order, as canonical JSON sorts keys). */
export const byKey = <T>(items: readonly T[], key: (t: T) => string): T[] =>
  [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

/** An export checked and compared with the revision of the copy it was captured with. */
export function exportFindings(
  records: readonly unknown[],
  expect: { schema: string; owner: string; scope: OwnerScope; maxItems: number },
  copyRevision: string | null,
): OwnerFinding[] {
  const check = verifyExport(records, expect);
  const findings = [...check.findings];
  if (check.header !== null && check.header.revision !== copyRevision) {
    findings.push({
      code: 'owner_export_revision_mismatch',
      severity: 'error',
      subject: 'header',
      next_action: 'capture this owner again; the export and the copied store differ',
    });
  }
  return findings;
}

/** The header and the seal of a built export: what is archived when its records are rebuilt from the copy (`from_copy`). */
export const exportFrame = (built: BuiltExport): { records: unknown[]; lines: string[] } => ({
  records: [built.records[0], built.records.at(-1)],
  lines: [built.lines[0]!, built.lines.at(-1)!],
});

/**
 * A `from_copy` export checked: its header and seal (`frame`) against the records rebuilt from the
 * copy (`items`, read by the owner from its copied members) and the copy's revision. Returns every
 * finding and the rebuilt seal's SHA-256 (null when no chain could be rebuilt).
 */
export function rebuiltExportFindings(
  frame: readonly unknown[],
  items: readonly unknown[],
  expect: { schema: string; owner: string; scope: OwnerScope; maxItems: number },
  copyRevision: string | null,
): { findings: OwnerFinding[]; sha256: string | null } {
  const findings: OwnerFinding[] = [];
  const add = (code: string, subject: string): void =>
    void findings.push({ code, severity: 'error', subject, next_action: REEXPORT });
  const [header, seal, ...rest] = frame;
  if (!isObj(header) || header.record !== 'header') add('owner_export_header_missing', 'header');
  else if (!isObj(seal) || seal.record !== 'seal') add('owner_export_seal_missing', 'seal');
  if (findings.length > 0 || !isObj(header) || !isObj(seal)) return { findings, sha256: null };
  if (rest.length > 0) add('owner_export_trailing_records', 'record:2');
  if (header.schema_version !== expect.schema) add('owner_export_schema_unknown', 'header');
  if (header.owner !== expect.owner || header.goal_id !== expect.scope.goal_id)
    add('owner_export_scope_mismatch', 'header');
  if (items.length > expect.maxItems) {
    add('owner_export_capacity_exceeded', 'header');
    return { findings, sha256: null };
  }
  const { record: _record, ...fields } = header;
  const built = buildExport(fields as unknown as Omit<ExportHeader, 'record'>, items, expect.maxItems);
  if (built.lines.at(-1) !== canonicalJson(seal)) add('owner_export_seal_mismatch', 'seal');
  if (header.cursor !== items.length) add('owner_export_cursor_mismatch', 'header');
  if (header.revision !== copyRevision) {
    findings.push({
      code: 'owner_export_revision_mismatch',
      severity: 'error',
      subject: 'header',
      next_action: 'capture this owner again; the export and the copied store differ',
    });
  }
  return { findings, sha256: built.sha256 };
}
