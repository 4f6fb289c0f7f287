/**
 * The capture run of backup-state create: what one capture accumulates while it streams the planned
 * members into the archive, and the capture of each member — directories, regular files (hashed
 * while copied), SQLite databases (through online snapshots in the private staging directory) and
 * absence witnesses for owner sources read as absent. A §12 bound is refused as soon as it is crossed.
 * An ordinary member that moved is recorded as missing, never silently dropped; an owner source that
 * moved is refused. It never publishes: create.ts does.
 */
import { lstatSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  countSqliteTableRows,
  snapshotSqliteDatabase,
  sqliteRuntimeIdentity,
  type SqliteSnapshotFacts,
} from '../store/index.js';
import type { BackupProgress, CaptureStep, CreateOptions } from './create.js';
import type { MissingEntry } from './discover.js';
import {
  capacityExceeded,
  memberTruncated,
  sourceAppeared,
  sourceChanged,
  sourceRemoved,
  sqliteSnapshotFailed,
} from './errors.js';
import { BACKUP_LIMITS, type BackupLimitName } from './limits.js';
import type { FileMemberRecord, ManifestMember, SourceWitness, SqliteSnapshotRecord } from './manifest.js';
import { workDbGoalOf, type BackupPlan } from './plan.js';
import type { MachineConfigurationRead, RegistryRead } from './sources.js';
import { ArchiveWriter, ShortReadError } from './tar-writer.js';

const errnoOf = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;

/** Refuse a §12 bound as soon as it is crossed. */
export function checkLimit(limit: BackupLimitName, observed: number, subject?: string): void {
  if (observed > BACKUP_LIMITS[limit]) throw capacityExceeded(limit, observed, subject);
}

/** An owner source's exact read from the plan, by root-relative path. */
export interface ExactRead {
  readonly owner: SourceWitness['owner'];
  readonly read: RegistryRead | MachineConfigurationRead;
}
export type ExactReads = Map<string, ExactRead>;

/** What one capture accumulates while it streams the planned members into the archive. */
export interface CaptureRun {
  readonly p: BackupPlan;
  readonly writer: ArchiveWriter;
  readonly staging: string;
  readonly onProgress: CreateOptions['onProgress'];
  readonly members: ManifestMember[];
  readonly fileMembers: FileMemberRecord[];
  readonly snapshots: SqliteSnapshotRecord[];
  readonly missing: MissingEntry[];
  readonly warnings: BackupPlan['warnings'][number][];
  readonly witnesses: Map<string, SourceWitness>;
  readonly copiedWitness: Map<string, { archive_path: string; size_bytes: number; sha256: string }>;
  readonly bytesTotal: number;
  /** v1: root-relative member → the owner's captured copy (archived instead of the live file). */
  readonly copies: Map<string, string>;
  /** v1: captured members that are their owner's databases (archived as SQLite snapshots). */
  readonly databases: Set<string>;
  /** v1: owner-captured databases archived as observed bytes → the owner's copy, read instead of them. */
  readonly reads: Map<string, string>;
  /** v1: members of components whose owner could not capture them: never archived raw. */
  readonly withheld: string[];
  regularBytes: number;
  snapshotSeq: number;
  bytesDone: number;
  membersDone: number;
}

/** A fresh run over the plan, writing into `writer`; missing entries and warnings start from the plan's. */
export function newCaptureRun(
  p: BackupPlan,
  writer: ArchiveWriter,
  staging: string,
  onProgress: CreateOptions['onProgress'],
): CaptureRun {
  return {
    copies: new Map(),
    databases: new Set(),
    reads: new Map(),
    withheld: [],
    p,
    writer,
    staging,
    onProgress,
    members: [],
    fileMembers: [],
    snapshots: [],
    missing: [...p.missing],
    warnings: [...p.warnings],
    witnesses: new Map(),
    copiedWitness: new Map(),
    bytesTotal: p.members.reduce((n, m) => n + m.size_bytes, 0),
    regularBytes: 0,
    snapshotSeq: 0,
    bytesDone: 0,
    membersDone: 0,
  };
}

/** Report the run's progress in `phase`. */
export function progress(run: CaptureRun, phase: BackupProgress['phase']): void {
  run.onProgress?.({
    phase,
    members_done: run.membersDone,
    members_total: run.p.members.length,
    bytes_done: run.bytesDone,
    bytes_total: run.bytesTotal,
  });
}

/** Live bounds while copying: a file that grew since the plan is refused before or while it is copied, never cut short. */
export function watch(
  run: CaptureRun,
  withProgress: boolean,
): { onSize(size: number): void; onChunk(n: number): void } {
  return {
    onSize: (size: number) => checkLimit('regularFileBytes', run.regularBytes + size),
    onChunk: (n: number) => {
      run.regularBytes += n;
      checkLimit('expandedBytes', run.writer.expandedBytes);
      checkLimit('archiveBytes', run.writer.archiveBytes);
      if (withProgress) {
        run.bytesDone += n;
        progress(run, 'capture');
      }
    },
  };
}

/** Record a member that could not be captured as missing, with a warning of the same reason. */
function lost(run: CaptureRun, path: string, reason: string): void {
  run.missing.push({ key: `member:${path}`, source_path: path, reason });
  run.warnings.push({ code: reason, source_path: path });
}

/** Capture one step into the archive: from the owner's copy where there is one, else from the live root. */
export async function captureStep(run: CaptureRun, planned: CaptureStep, exact: ExactRead | undefined): Promise<void> {
  // v1: an owner-captured member is archived from the owner's copy, never re-read from the live root,
  // as a database only where the owner declares one; an unreadable component's members are withheld.
  const copy = run.copies.get(planned.path);
  const step: CaptureStep =
    copy === undefined || planned.kind === 'directory'
      ? planned
      : { ...planned, kind: run.databases.has(planned.path) ? 'sqlite' : 'file' };
  if (
    copy === undefined &&
    planned.kind !== 'directory' &&
    run.withheld.some((w) => planned.path === w || planned.path.startsWith(`${w}/`))
  ) {
    lost(run, planned.path, 'owner_capture_failed');
    return;
  }
  const abs = copy ?? (step.path === '' ? run.p.root : join(run.p.root, step.path));
  if (step.kind === 'absence_witness') return witnessAbsence(run, step, abs, exact!.owner);
  if (step.kind === 'directory') await captureDirectory(run, step, abs);
  else if (step.kind === 'file') await captureFile(run, step, abs, exact !== undefined);
  else await captureSqlite(run, step, abs);
  run.membersDone++;
}

/** An owner source read as absent must still be absent while the capture runs. */
function witnessAbsence(run: CaptureRun, step: CaptureStep, abs: string, owner: SourceWitness['owner']): void {
  let exists = true;
  try {
    lstatSync(abs);
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT' && errnoOf(e) !== 'ENOTDIR') throw e;
    exists = false;
  }
  if (exists) throw sourceAppeared(step.path, 'during capture');
  run.witnesses.set(step.path, {
    owner,
    source: step.path,
    archive_path: step.archive_path,
    present: false,
    revision: null,
    read_sha256: null,
    read_size_bytes: null,
    copied_sha256: null,
  });
}

/** A directory entry; one that vanished or is no longer a directory is recorded as missing. */
async function captureDirectory(run: CaptureRun, step: CaptureStep, abs: string): Promise<void> {
  let st;
  try {
    st = lstatSync(abs);
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') throw e;
  }
  if (!st) lost(run, step.path, 'removed_during_capture');
  else if (!st.isDirectory()) lost(run, step.path, 'type_changed_during_capture');
  else {
    await run.writer.directory(step.archive_path);
    run.members.push({
      path: step.archive_path,
      type: 'directory',
      size_bytes: 0,
      sha256: null,
      origin: 'runtime_root',
    });
  }
}

/** A regular file, hashed while copied. An owner source (`exact`) that moved is refused; any other is recorded as missing. */
async function captureFile(run: CaptureRun, step: CaptureStep, abs: string, exact: boolean): Promise<void> {
  let copied;
  try {
    copied = await run.writer.file(step.archive_path, abs, watch(run, true));
  } catch (e) {
    if (e instanceof ShortReadError) throw memberTruncated(step.archive_path);
    const code = errnoOf(e);
    const gone = code === 'ENOENT' || code === 'ENOTDIR';
    const typeChanged = code === 'ELOOP' || code === 'ENOTREGULAR';
    const unreadable = code === 'EACCES' || code === 'EPERM';
    if (exact && gone) throw sourceRemoved(step.path, 'during capture');
    if (exact && (typeChanged || unreadable)) throw sourceChanged(step.path, 'during capture');
    if (!gone && !typeChanged && !unreadable) throw e;
    // Best-effort traversal: an ordinary file that moved is recorded as missing, never silently dropped.
    lost(run, step.path, gone ? 'removed_during_capture' : typeChanged ? 'type_changed_during_capture' : 'unreadable');
  }
  if (copied) {
    if (exact) run.copiedWitness.set(step.path, { archive_path: step.archive_path, ...copied });
    run.members.push({
      path: step.archive_path,
      type: 'file',
      size_bytes: copied.size_bytes,
      sha256: copied.sha256,
      origin: 'runtime_root',
    });
    run.fileMembers.push({ archive_path: step.archive_path, size_bytes: copied.size_bytes, sha256: copied.sha256 });
  }
}

/** A SQLite database, through an online snapshot in the staging directory; a Goal's work store also has its commits counted. */
async function captureSqlite(run: CaptureRun, step: CaptureStep, abs: string): Promise<void> {
  const planned = run.p.members.find((m) => m.path === step.path)!;
  let gone: 'removed_during_capture' | 'type_changed_during_capture' | undefined;
  try {
    if (!lstatSync(abs).isFile()) gone = 'type_changed_during_capture';
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT' && errnoOf(e) !== 'ENOTDIR') throw e;
    gone = 'removed_during_capture';
  }
  if (gone) {
    lost(run, step.path, gone);
    run.bytesDone += planned.size_bytes;
    return;
  }
  const ownerCopy = run.copies.has(step.path);
  const snapPath = ownerCopy ? abs : join(run.staging, `sqlite-${++run.snapshotSeq}.db`);
  let facts: Pick<SqliteSnapshotFacts, 'integrity' | 'sqliteVersion' | 'sqliteSourceId'>;
  try {
    // The owner's capture already took (and integrity-checked) its online snapshot.
    facts = ownerCopy ? { integrity: 'ok', ...sqliteRuntimeIdentity() } : await snapshotSqliteDatabase(abs, snapPath);
  } catch (e) {
    throw sqliteSnapshotFailed(step.path, e);
  }
  const goalId = workDbGoalOf(run.p, step.path) ?? null;
  let commits: number | null = null;
  if (goalId !== null) {
    commits = countSqliteTableRows(run.reads.get(step.path) ?? snapPath, 'commits') ?? null;
    if (commits !== null) checkLimit('goalCommittedTransactions', commits, goalId);
  }
  const copied = await run.writer.file(step.archive_path, snapPath, watch(run, false));
  if (!ownerCopy) unlinkSync(snapPath);
  run.bytesDone += planned.size_bytes;
  progress(run, 'capture');
  run.snapshots.push({
    source: step.path,
    archive_path: step.archive_path,
    snapshot_sha256: copied.sha256,
    snapshot_size_bytes: copied.size_bytes,
    integrity: facts.integrity,
    goal_id: goalId,
    committed_transactions: commits,
    runtime_identity: {
      node_version: process.version,
      sqlite_version: facts.sqliteVersion,
      sqlite_source_id: facts.sqliteSourceId,
    },
  });
  run.members.push({
    path: step.archive_path,
    type: 'file',
    size_bytes: copied.size_bytes,
    sha256: copied.sha256,
    origin: 'sqlite_snapshot',
  });
  run.fileMembers.push({ archive_path: step.archive_path, size_bytes: copied.size_bytes, sha256: copied.sha256 });
}
