/**
 * Step 5 of verification (RFC §5), the part that runs inside the disposable worker process
 * (worker.ts): SQLite integrity on private copies, the configuration checkpoint verifier, and
 * readback of configuration, registry, Goals, Todos and committed history through each owner's
 * `readHistorical()`. It reads the staged workspace and writes only private scratch copies under
 * the scratch directory it is given; it loads no restored code, opens no socket, takes no lock or
 * lease. Its report carries counts, ids, statuses and finding codes — never payloads.
 */
import { constants, copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isOutOfSpace, recoverSqliteCopy } from '../store/index.js';
import { canonicalJson, readRegularFileOnce, sha256Hex } from '../core/index.js';
import {
  DOCUMENT_OWNERS,
  MACHINE,
  OWNERS,
  OWNER_LIST,
  goalScope,
  integrityOnly,
  ownerOfMember,
  type ExportItems,
  type OfflineVerification,
  type OwnerRecovery,
} from '../owners/index.js';

export interface WorkspaceRef {
  /** The staged workspace (the archive's top). */
  readonly workspace: string;
  /** Private scratch directory for SQLite copies. */
  readonly scratch: string;
}

/**
 * The worker's input, one JSON document per line on stdin: first the WorkspaceRef, then one
 * `{"sqlite": "<workspace-relative path>"}` per database as soon as extraction has written it and
 * checked its digest, then `{"end": true}` once the whole archive is verified. The caller keeps
 * stdin open until the worker exits: its end means the caller died, and the worker exits at once.
 */
export type WorkerMessage =
  | {
      readonly sqlite: string;
      readonly export?: string;
      readonly export_items?: ExportItems;
      readonly component_id?: string;
    }
  | { readonly component: DocumentComponentRef }
  | { readonly crash: CrashRecoveryRef }
  | { readonly end: true };

/** A crash-consistent component: its owner's crash recovery replayed from the observed bytes. */
export interface CrashRecoveryRef {
  readonly component_id: string;
  readonly owner: string;
  readonly goal_id: string | null;
  /** Each observed file: its workspace-relative archive member and its root-relative place. */
  readonly files: readonly { readonly member: string; readonly path: string }[];
}

/** What the owner recovered from a component's observed bytes (null revision: it could not read them). */
export interface CrashRecoveryReport {
  readonly component_id: string;
  readonly revision: string | null;
  readonly cursor: number | null;
  readonly files: number;
}

/** A v1 component of a document owner (registry, configuration, a Goal): verified with its export once the whole copy is in place. */
export interface DocumentComponentRef {
  readonly component_id: string;
  readonly owner: string;
  readonly goal_id: string | null;
  /** Workspace-relative path of its export, or null when the component holds nothing. */
  readonly export: string | null;
  /** Where the export's records are (the manifest's `export_items`). */
  readonly export_items: ExportItems | null;
  /** The database service the component was read from (the manifest's `provider`): its export is verified alone. */
  readonly provider?: string;
}

/** What the worker found of one v1 component: the owner's offline verification with its export, and the export's digest. */
export interface ComponentReport {
  readonly component_id: string;
  readonly owner: string;
  readonly ok: boolean;
  readonly revision: string | null;
  readonly cursor: number | null;
  readonly source_identity: string | null;
  /** SHA-256 of the export's seal as read from the copy (null: no export, or it did not parse). */
  readonly export_digest: string | null;
  readonly counts: Readonly<Record<string, number>>;
  /** A document or service component's owner facts (a database's are on its SqliteReport). */
  readonly facts?: Readonly<Record<string, unknown>>;
  readonly findings: readonly WorkerFinding[];
}

/**
 * The worker's exit codes besides 0 (report printed): `noSpace` — the scratch file system filled
 * or hit its quota (the caller answers with the capacity refusal, never a verdict on the backup);
 * `parentGone` — its stdin closed, i.e. the verification that started it is gone; `failed` — anything else.
 */
export const WORKER_EXIT = { noSpace: 75, parentGone: 76, failed: 70 } as const;

export interface WorkerFinding {
  readonly code: string;
  readonly severity: string;
  readonly subject: string;
  readonly next_action: string;
}

/** An owner's name from the OWNERS table, an unowned store's name (`engine`), or `unknown`. */
export type OwnerKind = string;

export interface SqliteReport {
  readonly path: string;
  readonly owner: OwnerKind;
  readonly goal_id: string | null;
  readonly integrity: 'ok' | 'failed' | 'unreadable';
  readonly wal_header: boolean;
  /** Owner readback, when the owner has a reader for this file. */
  readonly readback: {
    readonly ok: boolean;
    readonly counts: Readonly<Record<string, number>>;
    readonly findings: readonly WorkerFinding[];
  } | null;
  /** Owner-specific facts kept in the audit's private readback (e.g. `work`). */
  readonly facts: Readonly<Record<string, unknown>>;
  /** v1: the owner's readback position and its export's digest, when the database was verified with an export. */
  readonly component?: ComponentReport;
}

export interface WorkerReport {
  readonly sqlite_heap_limit: number;
  /** Time the worker spent reading owners (set by worker.ts; owner checks overlap extraction). */
  readonly busy_ms?: number;
  /** The document owners' offline verifications (OWNERS order). */
  readonly owners: readonly OfflineVerification[];
  readonly sqlite: readonly SqliteReport[];
  /** v1: the document owners' components. */
  readonly components?: readonly ComponentReport[];
  /** v1 crash-consistent: each component's crash recovery replayed from the observed bytes. */
  readonly crash?: readonly CrashRecoveryReport[];
}

const ROOT = 'runtime-root';

/** The owner of a workspace file by its place in the root's layout (the OWNERS table). */
export function ownerOfSqlite(path: string): { owner: OwnerKind; goal_id: string | null } {
  const found = path.startsWith(`${ROOT}/`) ? ownerOfMember(path.slice(ROOT.length + 1)) : null;
  return found === null ? { owner: 'unknown', goal_id: null } : { owner: found.store, goal_id: found.scope.goal_id };
}

/** Most bytes of one owner export the worker reads. */
export const EXPORT_MAX_BYTES = 128 * 1024 * 1024;

/** An export member (JSON lines) as records; null when it is unreadable or not JSON lines. */
export function readExport(req: WorkspaceRef, path: string): unknown[] | null {
  try {
    const bytes = readRegularFileOnce(join(req.workspace, path), EXPORT_MAX_BYTES);
    if (bytes === null) return null;
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
    return text
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => JSON.parse(l) as unknown);
  } catch {
    return null;
  }
}

/**
 * The export's digest: with its records in the copy, the SHA-256 of the seal the owner rebuilt from
 * the copy; otherwise of the export's last record (the seal, which chains every record).
 */
const exportDigest = (records: readonly unknown[] | null, v: OfflineVerification): string | null =>
  v.export_sha256 !== undefined
    ? v.export_sha256
    : records && records.length > 0
      ? sha256Hex(canonicalJson(records.at(-1)))
      : null;

const EXPORT_UNREADABLE: WorkerFinding = {
  code: 'component_export_unreadable',
  severity: 'error',
  subject: 'export',
  next_action: 'use another backup of this root; this export could not be read',
};

function componentReport(
  component_id: string,
  v: OfflineVerification,
  records: readonly unknown[] | null,
  exportExpected: boolean,
): ComponentReport {
  const findings = exportExpected && records === null ? [...v.findings, EXPORT_UNREADABLE] : v.findings;
  return {
    component_id,
    owner: v.owner,
    ok: v.ok && !(exportExpected && records === null),
    revision: v.revision,
    cursor: v.cursor,
    source_identity: v.source_identity,
    export_digest: exportDigest(records, v),
    counts: v.readback?.counts ?? {},
    findings,
  };
}

/** A document owner's v1 component, verified on the whole copy with its export. */
export function verifyDocumentComponent(req: WorkspaceRef, c: DocumentComponentRef): ComponentReport {
  const owner = OWNER_LIST.find((o) => o.name === c.owner);
  const empty = { ok: false, revision: null, cursor: null, source_identity: null, export_digest: null, counts: {} };
  if (owner === undefined)
    return {
      component_id: c.component_id,
      owner: c.owner,
      ...empty,
      findings: [
        {
          code: 'component_owner_unknown',
          severity: 'error',
          subject: 'component',
          next_action: 'use a newer loopx to read this backup',
        },
      ],
    };
  const records = c.export === null ? null : readExport(req, c.export);
  const copy = { root: join(req.workspace, ROOT), scratchDir: req.scratch, beside: req.workspace };
  const scope = c.goal_id === null ? MACHINE : goalScope(c.goal_id);
  const served = c.provider === undefined ? {} : { provider: c.provider };
  const v = owner.verifyOffline(
    copy,
    scope,
    records === null ? served : { export: records, exportItems: c.export_items ?? 'in_export', ...served },
  );
  const report = componentReport(c.component_id, v, records, c.export !== null);
  return c.provider === undefined ? report : { ...report, facts: v.facts };
}

/** One SQLite file of the workspace: its owner's offline verification (integrity on a private copy, then readback). */
export function verifySqliteFile(
  req: WorkspaceRef,
  path: string,
  exportPath?: string,
  componentId?: string,
  exportItems: ExportItems = 'in_export',
): SqliteReport {
  const copy = { root: join(req.workspace, ROOT), scratchDir: req.scratch };
  const found = path.startsWith(`${ROOT}/`) ? ownerOfMember(path.slice(ROOT.length + 1)) : null;
  if (found === null || found.owner === null) {
    const m = integrityOnly(join(req.workspace, path), path, req.scratch);
    return {
      path,
      owner: found?.store ?? 'unknown',
      goal_id: null,
      integrity: m.integrity,
      wal_header: m.wal_header,
      readback: null,
      facts: {},
    };
  }
  const records = exportPath === undefined ? null : readExport(req, exportPath);
  const v = found.owner.verifyOffline(copy, found.scope, {
    integrity: 'full',
    ...(records === null ? {} : { export: records, exportItems }),
  });
  const m = v.members[0]!;
  return {
    ...(componentId === undefined
      ? {}
      : { component: componentReport(componentId, v, records, exportPath !== undefined) }),
    path,
    owner: v.owner,
    goal_id: v.scope.goal_id,
    integrity: m.integrity,
    wal_header: m.wal_header,
    readback: v.readback === null ? null : { ...v.readback, findings: v.findings },
    facts: v.facts,
  };
}

/**
 * A component's crash recovery, replayed: its observed files are copied, under their root-relative
 * names (a database with its journal beside it), into a private root under the scratch directory,
 * and its owner reads that root back — SQLite replays the journal there, on the copy only.
 */
export function replayCrashRecovery(req: WorkspaceRef, ref: CrashRecoveryRef, index: number): CrashRecoveryReport {
  const owner = OWNER_LIST.find((o) => o.name === ref.owner);
  const root = join(req.scratch, `crash-${index}`);
  try {
    for (const f of ref.files) {
      const to = join(root, f.path);
      if (!to.startsWith(`${root}/`))
        return { component_id: ref.component_id, revision: null, cursor: null, files: ref.files.length };
      mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
      copyFileSync(join(req.workspace, f.member), to, constants.COPYFILE_EXCL);
    }
    // SQLite's crash recovery, on the private copies: each database beside its observed journal.
    for (const f of ref.files)
      if (ref.files.some((j) => j.path === `${f.path}-wal` || j.path === `${f.path}-journal`))
        recoverSqliteCopy(join(root, f.path));
    const h = owner?.readHistorical(
      { root, scratchDir: req.scratch },
      ref.goal_id === null ? MACHINE : goalScope(ref.goal_id),
    );
    return {
      component_id: ref.component_id,
      revision: h?.readable ? h.revision : null,
      cursor: h?.readable ? h.cursor : null,
      files: ref.files.length,
    };
  } catch (e) {
    if (isOutOfSpace(e)) throw e;
    return { component_id: ref.component_id, revision: null, cursor: null, files: ref.files.length };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The document owners (OWNERS order), with the SQLite reports already made. */
export function verifyOwners(
  req: WorkspaceRef,
  sqlite: readonly SqliteReport[],
  heapLimit: number,
  components: readonly DocumentComponentRef[] = [],
  crash: readonly CrashRecoveryRef[] = [],
): WorkerReport {
  const copy = { root: join(req.workspace, ROOT), scratchDir: req.scratch, beside: req.workspace };
  return {
    sqlite_heap_limit: heapLimit,
    owners: DOCUMENT_OWNERS.map((o) => o.verifyOffline(copy, MACHINE)),
    sqlite,
    ...(components.length > 0 ? { components: components.map((c) => verifyDocumentComponent(req, c)) } : {}),
    ...(crash.length > 0 ? { crash: crash.map((c, i) => replayCrashRecovery(req, c, i)) } : {}),
  };
}

/** Typed views of the facts the document owners and the work owner report (see each owner's recovery.ts). */
export interface CheckpointFacts {
  readonly ok: boolean;
  readonly sha256: string | null;
  readonly goal_count: number;
  readonly machine_configuration_present: boolean;
  readonly codes: readonly string[];
}
export type RegistryGoalFacts = { goal_id: string; goal_instance_id: string; status: string; route: string };
export type GoalFacts = { goal_id: string; goal_instance_id: string; lifecycle: string; docs: number };
export interface WorkFacts {
  readonly goal_id: string | null;
  readonly readable: boolean;
  readonly store_identity: string | null;
  readonly head_cursor: number | null;
  readonly history_count: number;
  readonly todo_count: number;
  readonly todos_by_status: Record<string, number>;
}

export function documentOwner(r: WorkerReport, o: OwnerRecovery): OfflineVerification {
  const v = r.owners.find((x) => x.owner === o.name);
  if (v === undefined) throw new Error(`the worker report has no ${o.name} verification`);
  return v;
}
export const checkpointOf = (r: WorkerReport): CheckpointFacts =>
  documentOwner(r, OWNERS.config).facts.checkpoint as CheckpointFacts;
export const registryGoalsOf = (r: WorkerReport): readonly RegistryGoalFacts[] =>
  documentOwner(r, OWNERS.registry).facts.goals as RegistryGoalFacts[];
export const goalsOf = (r: WorkerReport): readonly GoalFacts[] =>
  documentOwner(r, OWNERS.goal).facts.goals as GoalFacts[];
export const workOf = (s: SqliteReport): WorkFacts | undefined => s.facts[OWNERS.work.name] as WorkFacts | undefined;
