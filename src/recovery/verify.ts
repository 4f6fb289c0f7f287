/**
 * `backup-state verify`: the ordered verification of RFC §5 ("Verification is ordered").
 *
 *   1 inputs      bindInputs: regular files, manifest schema, archive digest (before any decoding)
 *   2 destination preflightDestination + the manifest's declared inventory against §12
 *   3 members     planMembers: the planned list through the member checker (nothing written)
 *   4 extract     create D (0700) and D/.staging; one streaming, witnessed, confined pass
 *   5 owners      the disposable worker: SQLite integrity, checkpoint, readHistorical()
 *   6 graph       buildAudit: components, dependency links, findings, counts
 *   7 publish     D/.staging → D/workspace, then D/recovery-audit.json (exclusive, 0600, fsynced)
 *
 * Without `execute` it stops after step 3 and returns the plan: nothing is created. With it, a
 * refusal at any step removes what this run created (D and everything under it) — D is never
 * published half-made, and no other path is touched. It never loads plugins, runs restored code,
 * imports credentials, registers the workspace, takes a lease or opens a socket.
 */
import {
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
  constants,
} from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fsyncDir, hasCode, internal, isLoopxError, rejected, type LoopxError } from '../core/index.js';
import { isOutOfSpace } from '../store/index.js';
import { CAPACITY_CODES, OWNER_CODES } from './codes.js';
import {
  AUDIT_FILE,
  WORKSPACE_DIR,
  buildAudit,
  publishableAuditBytes,
  type BackupRepository,
  type RecoveryAudit,
} from './audit.js';
import { publicSummary, type PublicAuditSummary } from './audit-summary.js';
import {
  checkDeclared,
  declaredInventory,
  destinationExists,
  outOfSpace,
  preflightDestination,
  type ProtectedPlaces,
} from './destination.js';
import { extractArchive, interrupted, planMembers } from './extract.js';
import { bindInputs } from './inputs.js';
import type { ArchiveSource } from './archive-source.js';
import { RECOVERY_LIMITS } from './limits.js';
import { capacityRefusal } from './members.js';
import { WorkerSession } from './worker-client.js';
import { checkpointOf, goalsOf, workOf, type WorkerReport } from './owner-verify.js';
import { componentRoutes, crashRefs } from './recovery-set.js';

export interface VerifyInputs {
  /** The archive: a local file's path, or a source read twice (a repository's object: archive-source.ts). */
  readonly archive: string | ArchiveSource;
  /** The external manifest: a local file's path, or its bytes (read from a repository). */
  readonly manifest: string | Uint8Array;
  /** The repository the pair was read from: the audit says which, and whether the backup was encrypted there. */
  readonly repository?: BackupRepository;
  readonly destination: string;
  /** Where the destination must never be (besides any runtime root and recovery workspace, always refused). */
  readonly protect?: ProtectedPlaces;
}

export interface VerifyProgress {
  readonly step: 'inputs' | 'destination' | 'members' | 'extract' | 'owners' | 'audit';
  readonly done: number;
  readonly total: number;
}

export interface VerifyOptions {
  readonly onProgress?: (p: VerifyProgress) => void;
  /** Aborting stops the run at the next chunk or step; what it created is removed, as on any refusal. */
  readonly signal?: AbortSignal;
}

export interface VerifyPlan {
  readonly ok: true;
  readonly dry_run: true;
  readonly backup_id: string;
  readonly archive_sha256: string;
  readonly external_manifest_sha256: string;
  readonly members: number;
  readonly regular_file_bytes: number;
  readonly expanded_bytes: number;
  readonly archive_bytes: number;
  readonly goals: number;
  readonly sqlite_files: number;
  readonly free_bytes: number;
  readonly required_free_bytes: number;
  readonly would_create: readonly string[];
  readonly execution_authority_granted: false;
}

export interface VerifyOutcome {
  readonly audit: RecoveryAudit;
  readonly audit_bytes: Buffer;
  readonly summary: PublicAuditSummary;
}

const STAGING = '.staging';

function sameDirectory(path: string, id: { dev: number; ino: number }): boolean {
  try {
    const st = lstatSync(path);
    return st.isDirectory() && st.dev === id.dev && st.ino === id.ino;
  } catch {
    return false;
  }
}
const SCRATCH = '.scratch';

/** Verification stopped on an error that is not a typed refusal (a bug, or a failure of the machine): see the log. */
export const verifyFailed = (): LoopxError =>
  internal('verify_failed', 'Verification stopped on an unexpected error.', {
    nextAction: 'see the log of the process that ran the verification',
  });

async function prepare(inputs: VerifyInputs, progress?: (p: VerifyProgress) => void) {
  progress?.({ step: 'inputs', done: 0, total: 1 });
  const bound = await bindInputs(inputs.archive, inputs.manifest);
  try {
    progress?.({ step: 'destination', done: 0, total: 1 });
    const declared = declaredInventory(bound.manifest);
    checkDeclared(declared, bound.archiveSize);
    const dest = preflightDestination(inputs.destination, declared, inputs.protect);
    progress?.({ step: 'members', done: 0, total: 1 });
    const planned = planMembers(bound.manifest);
    return { bound, declared, dest, planned };
  } catch (e) {
    bound.archive.close();
    throw e;
  }
}

/** Steps 1–3: nothing is created. */
export async function planVerify(inputs: VerifyInputs): Promise<VerifyPlan> {
  const { bound, declared, dest } = await prepare(inputs);
  bound.archive.close();
  return {
    ok: true,
    dry_run: true,
    backup_id: bound.manifest.backup_id,
    archive_sha256: bound.archiveSha256,
    external_manifest_sha256: bound.manifestSha256,
    members: declared.members,
    regular_file_bytes: declared.regularBytes,
    expanded_bytes: declared.expandedBytes,
    archive_bytes: bound.archiveSize,
    goals: declared.goals,
    sqlite_files: declared.sqliteFiles,
    free_bytes: dest.freeBytes,
    required_free_bytes: dest.requiredBytes,
    would_create: [WORKSPACE_DIR, AUDIT_FILE],
    execution_authority_granted: false,
  };
}

/** Step 5's end: the worker's owner readback. An abort while the worker reads owners kills it at once, and the run ends as interrupted. */
async function ownerReport(session: WorkerSession, signal: AbortSignal | undefined): Promise<WorkerReport> {
  const stopWorker = (): void => void session.kill();
  signal?.addEventListener('abort', stopWorker, { once: true });
  let report: WorkerReport;
  try {
    report = await session.finish();
  } catch (e) {
    if (signal?.aborted) throw interrupted();
    throw e;
  } finally {
    signal?.removeEventListener('abort', stopWorker);
  }
  if (signal?.aborted) throw interrupted();
  return report;
}

/** Refusals the readback decides before any audit: a corrupt database, a checkpoint that did not verify, too many Goals or too much history. */
function checkReport(report: WorkerReport): void {
  const broken = report.sqlite.find((s) => s.integrity !== 'ok');
  if (broken) {
    throw rejected(OWNER_CODES.sqliteIntegrity, 'A SQLite database in the backup failed its integrity check.', {
      nextAction: 'use another backup of this root; keep this one for inspection',
      details: { owner: broken.owner },
    });
  }
  const checkpoint = checkpointOf(report);
  if (!checkpoint.ok) {
    throw rejected(OWNER_CODES.configurationCheckpoint, 'The configuration checkpoint did not verify.', {
      nextAction: 'use another backup of this root; keep this one for inspection',
      details: { codes: checkpoint.codes },
    });
  }
  // The manifest declared at most 128 Goals; the owner's own count is what the audit will list.
  const goalCount = goalsOf(report).length;
  if (goalCount > RECOVERY_LIMITS.goals) throw capacityRefusal('goals', goalCount, RECOVERY_LIMITS.goals);
  const overflow = report.sqlite.find(
    (s) => (workOf(s)?.history_count ?? 0) > RECOVERY_LIMITS.goalCommittedTransactions,
  );
  if (overflow)
    throw capacityRefusal('goalHistory', workOf(overflow)!.history_count, RECOVERY_LIMITS.goalCommittedTransactions);
}

/** Step 7: the workspace first, the audit last (its presence is what marks D complete), each made durable. */
function publish(dest: { readonly path: string; readonly parent: string }, staging: string, bytes: Buffer): void {
  renameSync(staging, join(dest.path, WORKSPACE_DIR));
  const fd = openSync(
    join(dest.path, AUDIT_FILE),
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  fsyncDir(dest.path);
  fsyncDir(dest.parent);
}

/** Step 4's start: D created (0700) by this run, and its identity — what a refusal may later remove. */
function makeDestination(path: string): { dev: number; ino: number } {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (e) {
    // Created by someone else since the preflight: the same conflict, and it is not ours to remove.
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
      throw destinationExists();
    }
    throw e;
  }
  const made = lstatSync(path);
  return { dev: made.dev, ino: made.ino };
}

/** What a failed run throws: out of space as the capacity refusal, a typed refusal as it is, any other error by its code only. */
function refusalOf(e: unknown): unknown {
  // Out of space anywhere (extraction, its fsyncs, the audit) is the capacity refusal, whatever wrapped it.
  if (isOutOfSpace(e) && !hasCode(e, CAPACITY_CODES.freeSpace)) return outOfSpace();
  if (isLoopxError(e)) return e;
  const errno = (e as NodeJS.ErrnoException).code;
  // A system error's message names paths (archive members are private data): keep only its code.
  return internal(
    'verify_io_failed',
    `Verification stopped on a file-system error (${typeof errno === 'string' ? errno : 'unknown'}); nothing was published.`,
    {
      nextAction: 'check the destination file system and run verify again',
    },
  );
}

/** Steps 1–7 (see the header): the backup verified into D and its audit published, or D removed on any refusal. */
export async function executeVerify(inputs: VerifyInputs, options: VerifyOptions = {}): Promise<VerifyOutcome> {
  const t0 = performance.now();
  const progress = options.onProgress;
  const { bound, dest, planned } = await prepare(inputs, progress);
  let created = false;
  let identity: { dev: number; ino: number } | undefined;
  let worker: WorkerSession | undefined;
  try {
    identity = makeDestination(dest.path);
    created = true;
    const staging = join(dest.path, STAGING);
    const scratch = join(dest.path, SCRATCH);
    mkdirSync(staging, { mode: 0o700 });
    mkdirSync(scratch, { mode: 0o700 });

    // The worker starts now and checks each database as soon as it is extracted (step 5
    // overlapping step 4); it reads the root-level owners once the archive is fully verified.
    worker = new WorkerSession({ workspace: staging, scratch });
    const routes = componentRoutes(bound.manifest);
    let databases = 0;
    const extraction = await extractArchive(
      bound.archive,
      bound,
      planned,
      staging,
      (p) => progress?.({ step: 'extract', done: p.compressed_done, total: p.compressed_total }),
      (path) => {
        if (++databases > RECOVERY_LIMITS.sqliteFiles)
          throw capacityRefusal('sqliteFiles', databases, RECOVERY_LIMITS.sqliteFiles);
        worker!.add(path, routes.sqlite.get(path));
      },
      options.signal,
    );
    if (options.signal?.aborted) throw interrupted();
    const t1 = performance.now();
    progress?.({ step: 'owners', done: 0, total: databases });
    const session = worker;
    worker = undefined;
    for (const d of routes.documents) session.component(d);
    for (const c of crashRefs(bound.manifest)) session.crash(c);
    const report = await ownerReport(session, options.signal);
    checkReport(report);

    // The worker's scratch goes before the audit step starts: what is left then is only what is published.
    rmSync(scratch, { recursive: true, force: true });
    progress?.({ step: 'audit', done: 0, total: 1 });
    const audit = buildAudit({
      manifest: bound.manifest,
      ...(inputs.repository !== undefined ? { repository: inputs.repository } : {}),
      archiveSha256: bound.archiveSha256,
      archiveSize: bound.archiveSize,
      manifestSha256: bound.manifestSha256,
      extraction,
      report,
      durations: {
        archive_processing: Math.round(t1 - t0),
        owner_read: report.busy_ms ?? Math.round(performance.now() - t1),
        total: Math.round(performance.now() - t0),
      },
    });
    const bytes = publishableAuditBytes(audit);

    publish(dest, staging, bytes);
    return { audit, audit_bytes: bytes, summary: publicSummary(audit) };
  } catch (e) {
    await worker?.kill();
    // Remove only what this run created; D never existed before it (step 2 proved that), and it
    // is still the directory this run made (same device and inode) — never something put there.
    if (created && identity !== undefined && sameDirectory(dest.path, identity))
      rmSync(dest.path, { recursive: true, force: true });
    throw refusalOf(e);
  } finally {
    bound.archive.close();
  }
}
