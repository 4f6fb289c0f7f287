/**
 * The recovery contract for an owner whose state is one SQLite database of the root (session,
 * effect, quota, scheduler) — built from the owner's own historical reader, so the contract's
 * rules are kept once here and each owner supplies only what is its own: its file, its reader,
 * its counts and the canonical items of its export.
 *
 * - `capture` takes an online snapshot through SQLite's backup API (one read transaction: a
 *   committed state even while writers continue) into the capture directory, then exports that
 *   snapshot's items. The snapshot is atomic, so its revision is both ends of the interval. This is
 *   the SQLite provider's capture; a PostgreSQL provider captures through its storage port.
 * - `verifyOffline` runs SQLite's integrity check on a private copy, then the owner's reader; an
 *   export, when given, must verify and name the copy's revision.
 * - On a root whose Goal state is in PostgreSQL, `capture` reads the owner's tables in the set's one
 *   snapshot and decodes them with the same reader (table-rows.ts), so the export — header, items,
 *   seal — is the one a SQLite capture of the same state makes; it holds every item (`in_export`)
 *   and there is no member. `verifyOffline` then checks that export alone: chain, seal, counts and
 *   the revision its items hash to. No connection is opened.
 */
import { closeSync, constants, lstatSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { POSTGRESQL_PROVIDER, isOutOfSpace, openSqliteCopy, snapshotSqliteDatabase } from '../store/index.js';
import type {
  CapturePoint,
  CopiedRoot,
  FindingSeverity,
  HistoricalRead,
  LiveService,
  OfflineVerification,
  OwnerCapture,
  OwnerFinding,
  OwnerRecovery,
  OwnerScope,
  ReadableClassification,
  VerifiedMember,
  VerifyOfflineOptions,
} from './contract.js';
import { MACHINE, hasErrors, servedBy } from './contract.js';
import {
  buildExport,
  contentRevision,
  exportFindings,
  exportFrame,
  rebuiltExportFindings,
  verifyExport,
} from './export.js';
import { pgRows, type TableQueries, type TableRows } from './table-rows.js';
import { captureRowsInvalid } from './refusals.js';

/** Whether the file's header says WAL mode (format bytes 2/2); null when it cannot be read. */
export function walHeader(abs: string): boolean | null {
  try {
    const head = Buffer.alloc(20);
    const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return readSync(fd, head, 0, 20, 0) === 20 && head[18] === 2 && head[19] === 2;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

const existsFile = (abs: string): boolean => {
  try {
    return lstatSync(abs).isFile();
  } catch {
    return false;
  }
};

/** SQLite's full `integrity_check` on a private copy; a full scratch disk is thrown, never a verdict. */
export function sqliteIntegrity(abs: string, scratch: string | undefined): VerifiedMember['integrity'] {
  if (walHeader(abs) === null) return 'unreadable';
  let copy;
  try {
    copy = openSqliteCopy(abs, {
      ...(scratch === undefined ? {} : { scratchDir: scratch }),
      scratchPrefix: 'integrity-',
    });
  } catch (e) {
    if (isOutOfSpace(e)) throw e;
    return 'unreadable';
  }
  try {
    const rows = copy.db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    return rows.length === 1 && rows[0]!.integrity_check === 'ok' ? 'ok' : 'failed';
  } catch (e) {
    if (isOutOfSpace(e)) throw e;
    return 'failed';
  } finally {
    copy.close();
  }
}

/** A member checked only for SQLite integrity (a store with no owner reader here, e.g. the run kernel's). */
export function integrityOnly(abs: string, path: string, scratch: string | undefined): VerifiedMember {
  return { path, integrity: sqliteIntegrity(abs, scratch), wal_header: walHeader(abs) === true };
}

/** Findings as the owners' readers emit them (older readers say `info` for a note). */
interface RawFinding {
  readonly code: string;
  readonly severity: string;
  readonly subject: string;
  readonly next_action: string;
}

export const asOwnerFinding = (f: RawFinding): OwnerFinding => ({
  code: f.code,
  severity: (f.severity === 'error' || f.severity === 'hold' ? f.severity : 'warning') as FindingSeverity,
  subject: f.subject,
  next_action: f.next_action,
});

export interface SqliteOwnerSpec<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
> {
  readonly name: string;
  readonly decides: string;
  /** Root-relative path of the database (LAYOUT). */
  readonly file: string;
  readonly requiredForGoal: boolean;
  readonly optionalInV0Audits?: true;
  readonly dependsOn: readonly string[];
  readonly classification: ReadableClassification;
  readonly exportSchema: string;
  /** Most items an export holds. */
  readonly maxItems: number;
  read(abs: string, scratchDir: string | undefined): H;
  counts(h: H): Record<string, number>;
  /** The canonical export items, sorted. */
  items(h: H): readonly unknown[];
  /** Operations begun and not settled in a read state (capture reports it). */
  inFlight?(h: H): number;
  /**
   * Per item kind of the export, the count it adds to (the names `counts` gives), which is also the
   * reader's field that holds those items: an export's counts, and its readback, without its store.
   */
  readonly itemCounts: Readonly<Record<string, string>>;
  /** The owner's tables in a PostgreSQL schema and the reader's decoding of their rows. */
  readonly postgresql?: {
    readonly tables: TableQueries<string>;
    /** The reader over the tables' rows (its findings are the reader's, as on a copy). */
    read(rows: TableRows<string>): H;
  };
}

/** The counts of an export's items, by kind. */
function countItems(
  spec: { readonly itemCounts: Readonly<Record<string, string>> },
  items: readonly unknown[],
): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(Object.values(spec.itemCounts).map((name) => [name, 0]));
  for (const item of items) {
    const name = spec.itemCounts[String((item as { kind?: unknown } | null)?.kind)];
    if (name !== undefined) counts[name]! += 1;
  }
  return counts;
}

/** The live content revision, from an online snapshot in a private scratch directory that is removed at once. */
async function observeSqlite<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(
  spec: SqliteOwnerSpec<H>,
  envelope: (h: H, scope: OwnerScope) => HistoricalRead<H>,
  root: string,
  scope: OwnerScope,
): Promise<CapturePoint | null> {
  const abs = join(root, spec.file);
  if (!existsFile(abs)) return null;
  const scratch = mkdtempSync(join(tmpdir(), 'loopx-observe-'));
  try {
    await snapshotSqliteDatabase(abs, join(scratch, 'observe.db'));
    const at = new Date().toISOString();
    const h = spec.read(join(scratch, 'observe.db'), scratch);
    const items = envelope(h, scope).readable ? spec.items(h) : [];
    return { revision: contentRevision(items), cursor: items.length, at };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** An online snapshot of the owner's database into the capture directory, and its canonical export. */
async function captureSqlite<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(
  spec: SqliteOwnerSpec<H>,
  readHistorical: OwnerRecovery<H>['readHistorical'],
  root: string,
  scope: OwnerScope,
  into: string,
): Promise<OwnerCapture> {
  const dest = join(into, spec.file);
  mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
  const startAt = new Date().toISOString();
  await snapshotSqliteDatabase(join(root, spec.file), dest);
  const endAt = new Date().toISOString();
  const h = readHistorical({ root: into }, scope);
  const items = spec.items(h.value);
  const point = { revision: contentRevision(items), cursor: items.length };
  const built = buildExport(
    {
      schema_version: spec.exportSchema,
      owner: spec.name,
      goal_id: scope.goal_id,
      source_identity: null,
      ...point,
      captured_at_start: startAt,
      captured_at_end: endAt,
    },
    items,
    spec.maxItems,
  );
  const frame = exportFrame(built);
  return {
    owner: spec.name,
    scope,
    export_schema: spec.exportSchema,
    source_identity: null,
    start: { ...point, at: startAt },
    end: { ...point, at: endAt },
    captured: point,
    members: [spec.file],
    // The records are the owner's reading of the snapshot it archives: only header and seal are kept.
    export_items: 'from_copy',
    export: frame.records,
    export_lines: frame.lines,
    export_sha256: built.sha256,
    record_count: built.record_count,
    in_flight: spec.inFlight?.(h.value) ?? 0,
  };
}

type Spec<H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null }> =
  SqliteOwnerSpec<H>;

/** The owner's state in the service: its tables read through `run` (the set's snapshot, or the state now) and decoded. */
async function readService<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(spec: Spec<H>, run: LiveService['snapshot']): Promise<H> {
  const pg = spec.postgresql!;
  return run(async (q) => pg.read(await pgRows(q, pg.tables)));
}

/** A capture from the set's one snapshot of the service: every item in the export, no member. */
async function captureService<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(spec: Spec<H>, service: LiveService, scope: OwnerScope): Promise<OwnerCapture> {
  const startAt = new Date().toISOString();
  const h = await readService(spec, (fn) => service.snapshot(fn));
  const endAt = new Date().toISOString();
  // A row the reader refuses would be left out of the export: not captured at all, rather than without it.
  const refused = h.findings.map(asOwnerFinding).filter((f) => f.severity === 'error');
  if (refused.length > 0)
    throw captureRowsInvalid(
      spec.name,
      refused.map((f) => f.code),
    );
  const items = spec.items(h);
  const point = { revision: contentRevision(items), cursor: items.length };
  const built = buildExport(
    {
      schema_version: spec.exportSchema,
      owner: spec.name,
      goal_id: scope.goal_id,
      source_identity: service.source_identity,
      ...point,
      captured_at_start: startAt,
      captured_at_end: endAt,
    },
    items,
    spec.maxItems,
  );
  return {
    owner: spec.name,
    scope,
    export_schema: spec.exportSchema,
    // The installation the rows belong to: a restored copy of the schema is another one.
    source_identity: service.source_identity,
    // One snapshot: the state read is both ends of the interval.
    start: { ...point, at: startAt },
    end: { ...point, at: endAt },
    captured: point,
    members: [],
    export_items: 'in_export',
    export: built.records,
    export_lines: built.lines,
    export_sha256: built.sha256,
    record_count: built.record_count,
    in_flight: spec.inFlight?.(h) ?? 0,
    provider: service.provider,
  };
}

/** An export captured from a service, checked alone: its chain and seal, its counts, and the revision its items hash to. */
function verifyServiceExport<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(spec: Spec<H>, scope: OwnerScope, records: readonly unknown[]): OfflineVerification {
  const check = verifyExport(records, { schema: spec.exportSchema, owner: spec.name, scope, maxItems: spec.maxItems });
  const findings: OwnerFinding[] = [...check.findings];
  const revision = check.sha256 === null ? null : contentRevision(check.items);
  if (check.header !== null && revision !== null && check.header.revision !== revision) {
    findings.push({
      code: 'owner_export_revision_mismatch',
      severity: 'error',
      subject: 'header',
      next_action: 'capture this owner again; the export and its records differ',
    });
  }
  const ok = !hasErrors(findings);
  const counts = countItems(spec, check.items);
  return {
    owner: spec.name,
    scope,
    members: [],
    ok,
    readback: { ok, counts },
    source_identity: check.header?.source_identity ?? null,
    revision,
    cursor: check.sha256 === null ? null : check.items.length,
    facts: {},
    export_sha256: check.sha256,
    findings,
  };
}

/** A component captured from a service, read back from its export alone: its items as the reader's fields, the export's findings. */
function readServiceExport<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(spec: Spec<H>, scope: OwnerScope, records: readonly unknown[]): HistoricalRead<H> {
  const check = verifyExport(records, { schema: spec.exportSchema, owner: spec.name, scope, maxItems: spec.maxItems });
  const fields: Record<string, unknown[]> = Object.fromEntries(
    Object.values(spec.itemCounts).map((name) => [name, []]),
  );
  for (const item of check.items) {
    const i = item as { kind?: unknown; value?: unknown } | null;
    fields[spec.itemCounts[String(i?.kind)] ?? '']?.push(i?.value);
  }
  const findings = [...check.findings];
  const readable = check.header !== null && check.sha256 !== null;
  return {
    owner: spec.name,
    scope,
    readable,
    ok: readable && !hasErrors(findings),
    schema_version: check.header?.schema_version ?? null,
    source_identity: check.header?.source_identity ?? null,
    revision: readable ? contentRevision(check.items) : null,
    cursor: readable ? check.items.length : null,
    counts: countItems(spec, check.items),
    value: { owner: spec.name, schema_version: null, ...fields, findings } as unknown as H,
    findings,
    execution_authority_granted: false,
  };
}

/**
 * `verifyOffline` of a SQLite owner: a service's export checked alone; else SQLite's integrity
 * check on a private copy, then the owner's reader and, when given, the archived export against it.
 */
function verifySqliteCopy<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(
  spec: SqliteOwnerSpec<H>,
  readHistorical: OwnerRecovery<H>['readHistorical'],
  copy: CopiedRoot,
  scope: OwnerScope,
  options: VerifyOfflineOptions,
): OfflineVerification {
  if (options.provider !== undefined) return verifyServiceExport(spec, scope, options.export ?? []);
  const abs = join(copy.root, spec.file);
  const member = integrityOnly(abs, spec.file, copy.scratchDir);
  const base = { owner: spec.name, scope, members: [member], source_identity: null, facts: {} };
  if (member.integrity !== 'ok') {
    const code = member.integrity === 'failed' ? `${spec.name}_db_integrity_failed` : `${spec.name}_copy_unreadable`;
    const finding: OwnerFinding = {
      code,
      severity: 'error',
      subject: `file:${spec.file}`,
      next_action: 'restore this owner from another backup; this copy could not be read',
    };
    return { ...base, ok: false, readback: null, revision: null, cursor: null, findings: [finding] };
  }
  const h = readHistorical(copy, scope);
  const findings = [...h.findings];
  const expect = { schema: spec.exportSchema, owner: spec.name, scope, maxItems: spec.maxItems };
  let rebuilt: string | null | undefined;
  if (options.export !== undefined && options.exportItems === 'from_copy') {
    const r = rebuiltExportFindings(options.export, spec.items(h.value), expect, h.revision);
    findings.push(...r.findings);
    rebuilt = r.sha256;
  } else if (options.export !== undefined) findings.push(...exportFindings(options.export, expect, h.revision));
  const ok = !hasErrors(findings);
  return {
    ...base,
    ok,
    readback: { ok, counts: h.counts },
    revision: h.revision,
    cursor: h.cursor,
    ...(rebuilt === undefined ? {} : { export_sha256: rebuilt }),
    findings,
  };
}

export function sqliteOwner<
  H extends { readonly findings: readonly RawFinding[]; readonly schema_version: number | null },
>(spec: SqliteOwnerSpec<H>): OwnerRecovery<H> {
  const envelope = (h: H, scope: OwnerScope): HistoricalRead<H> => {
    const findings = h.findings.map(asOwnerFinding);
    const readable = h.schema_version !== null && !findings.some((f) => f.code.endsWith('_schema_unsupported'));
    const items = readable ? spec.items(h) : [];
    return {
      owner: spec.name,
      scope,
      readable,
      ok: readable && !hasErrors(findings),
      schema_version: h.schema_version === null ? null : String(h.schema_version),
      source_identity: null,
      revision: readable ? contentRevision(items) : null,
      cursor: readable ? items.length : null,
      counts: spec.counts(h),
      value: h,
      findings,
      execution_authority_granted: false,
    };
  };
  const served = { providers: spec.postgresql ? [POSTGRESQL_PROVIDER] : [] };
  const readFile: OwnerRecovery<H>['readHistorical'] = (copy, scope) =>
    envelope(spec.read(join(copy.root, spec.file), copy.scratchDir), scope);
  const readHistorical: OwnerRecovery<H>['readHistorical'] = (copy, scope) => {
    const records = copy.exports?.(spec.name, scope);
    return records === undefined ? readFile(copy, scope) : readServiceExport(spec, scope, records);
  };

  return {
    name: spec.name,
    decides: spec.decides,
    scope: 'machine',
    members: () => [{ path: spec.file, kind: 'sqlite' }],
    requiredForGoal: spec.requiredForGoal,
    ...(spec.optionalInV0Audits ? { optionalInV0Audits: true as const } : {}),
    dependsOn: spec.dependsOn,
    classification: spec.classification,
    verificationProfile: `sqlite.integrity_check+${spec.name}.readHistorical/v0`,

    ...(spec.postgresql ? { providers: served.providers } : {}),

    async observe(live, scope) {
      if (!servedBy(served, live)) return observeSqlite(spec, envelope, live.root, scope);
      const h = await readService(spec, (fn) => live.service.current(fn));
      const items = spec.items(h);
      return { revision: contentRevision(items), cursor: items.length, at: new Date().toISOString() };
    },

    capture(live, scope, into) {
      return servedBy(served, live)
        ? captureService(spec, live.service, scope)
        : captureSqlite(spec, readHistorical, live.root, scope, into);
    },

    verifyOffline: (copy, scope = MACHINE, options = {}): OfflineVerification =>
      verifySqliteCopy(spec, readHistorical, copy, scope, options),

    readHistorical,
  };
}
