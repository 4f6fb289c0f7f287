/**
 * Backup uploads and verify jobs of the daemon. An upload is a private staging directory under
 * `<root>/daemon/uploads/<upload_id>/` (0700) holding at most one archive and one manifest, each
 * streamed to a new 0600 file under the verifier's own size limits (over the limit: 413 and the
 * whole upload is removed). A verify job runs `executeVerifyIsolated` — `backup-state verify
 * --execute`'s library call in a disposable process of its own (the hostile archive is decoded
 * there, never in the daemon), which starts the owner worker as the command line does — into a new
 * destination `<root>/daemon/recoveries/<job_id>/`; its progress and result are events, and the
 * upload is removed once its job ends (audited, held or refused). A verification of a backup
 * repository's backup (repositories.ts) reserves its destination here too, its source recorded the
 * same way. Audits are read back from those destinations through `showAudit` (content address re-checked).
 */
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  RECOVERY_AUDIT_FILE,
  conflict,
  isLoopxError,
  notFound,
  rejected,
  ensurePrivateDir,
  writeFileDurable,
} from '../core/index.js';
import {
  BACKUP_ID,
  RECOVERY_LIMITS,
  executeVerifyIsolated,
  publicSummary,
  readWorkspaceContents,
  showAudit,
  userBackupsDir,
  verifyFailed,
  type RecoveryAudit,
  type VerifyProgress,
} from '../runtime/index.js';
import { auditContents, type AuditContents } from './audit-contents.js';
import { bodyTooLarge, daemonStopping } from './errors.js';

export type UploadPart = 'archive' | 'manifest';
/** Where a backup the daemon lists lies: `<root>/backups` (the CLI's default) or the user's backups folder (outside any root). */
export type BackupLocation = 'root' | 'user';
export const BACKUP_LOCATIONS: readonly BackupLocation[] = ['root', 'user'];
const LIMIT: Record<UploadPart, number> = {
  archive: RECOVERY_LIMITS.archiveBytes,
  manifest: RECOVERY_LIMITS.manifestBytes,
};
const FILE: Record<UploadPart, string> = { archive: 'backup.tar.gz', manifest: 'backup.manifest.json' };
const UPLOAD_ID = /^up_[0-9a-f]{32}$/;
/** Uploads waiting for verification at once: bounds what a client can leave staged on disk. */
export const MAX_PENDING_UPLOADS = 4;
/** A waiting upload not written to for this long is discarded when room is needed for a new one. */
export const STALE_UPLOAD_MS = 60 * 60 * 1000;
const JOB_ID = /^job_[0-9a-f]{32}$/;

export interface JobError {
  readonly code: string;
  readonly message: string;
  readonly next_action: string | null;
}

export interface Job {
  readonly job_id: string;
  /** The upload verified, or null when it is a backup of this root (`backup_id`). */
  readonly upload_id: string | null;
  readonly backup_id: string | null;
  /** Where the verified backup lies: the root's `backups/`, the user's backups folder, or null for an upload. */
  readonly location: BackupLocation | null;
  /** `verifying` while it runs (the operator state of a verification in progress), then its outcome. */
  state: 'verifying' | 'audited' | 'held' | 'refused';
  progress: VerifyProgress | null;
  recovery_id: string | null;
  error: JobError | null;
}

export interface PendingUpload {
  readonly upload_id: string;
  readonly archive_bytes: number | null;
  readonly manifest_bytes: number | null;
  /** Last write to the upload (ISO 8601). */
  readonly updated_at: string;
}

/** Where an audited backup came from: a backup of this root verified in place, an upload, a repository's backup, or (verified before sources were recorded) unknown. */
export interface AuditSource {
  readonly kind: 'root_backup' | 'user_backup' | 'upload' | 'repository' | 'unknown';
  readonly backup_id: string;
  /** When the backup itself was made (its manifest's created_at). */
  readonly backup_created_at: string;
  /** kind `repository`: the repository's id (its URL is kept privately, never served). */
  readonly repository_id?: string;
  /** kind `repository`, as its audit says: whether the backup was stored encrypted there. */
  readonly encrypted?: boolean;
}

/** What the daemon records of a verification of a repository's backup (repositories.ts), 0600 beside its other sources. */
export interface RepositorySource {
  readonly kind: 'repository';
  /** The URL as the operator typed it: a reference at most, never a credential. */
  readonly repository: string;
  readonly repository_id: string;
}

export interface AuditListItem {
  readonly recovery_id: string;
  readonly backup_id: string;
  readonly phase: string;
  readonly operator_state: string;
  /** The backup's creation time (as `source.backup_created_at`). */
  readonly created_at: string;
  /** When the verification wrote this audit (the audit file is written once, never replaced). */
  readonly verified_at: string;
  readonly source: AuditSource;
  /** Goals the audit names (its goal components). */
  readonly goals: number;
  readonly assets: RecoveryAudit['counts']['assets'];
  readonly execution_authority_granted: false;
}

const auditNotFound = () =>
  notFound('audit_not_found', 'No audit with that recovery id.', { nextAction: 'list audits: GET /api/audits' });
const uploadNotFound = () =>
  notFound('daemon_upload_not_found', 'No such upload.', { nextAction: 'start a new upload' });

/** An upload receiving a part or being verified takes no other request until that ends (a verified one is removed then). */
const uploadInUse = (what: 'receiving a part' | 'being verified') =>
  conflict('daemon_upload_in_use', `The upload is ${what}.`, {
    nextAction: 'wait for that to end (a verified upload is removed when its job ends), or start a new upload',
  });

export class BackupService {
  private readonly uploads: string;
  private readonly recoveries: string;
  /** The folders whose backup pairs are listed and verified in place. */
  private readonly folders: Readonly<Record<BackupLocation, string>>;
  /** `<job_id>.json`: which source each verify job read (the audit itself does not say). */
  private readonly sources: string;
  private readonly jobs = new Map<
    string,
    { job: Job; events: EventEmitter; done: Promise<void>; abort: AbortController }
  >();
  /** Uploads with a part being streamed in now (upload id → parts in flight). */
  private readonly receiving = new Map<string, number>();
  private closing = false;

  constructor(root: string, userBackups: string = userBackupsDir()) {
    const daemonDir = join(root, 'daemon');
    this.uploads = join(daemonDir, 'uploads');
    this.recoveries = join(daemonDir, 'recoveries');
    this.folders = { root: join(root, 'backups'), user: userBackups };
    this.sources = join(daemonDir, 'audit-sources');
    for (const d of [daemonDir, this.uploads, this.recoveries, this.sources]) ensurePrivateDir(d);
  }

  /**
   * A new upload. At most MAX_PENDING_UPLOADS wait at once: when they are all taken, those not
   * written to for STALE_UPLOAD_MS (and not being verified) are discarded first; if none is,
   * `daemon_uploads_full` (409).
   */
  createUpload(now = Date.now()): string {
    let pending = this.listUploads();
    if (pending.length >= MAX_PENDING_UPLOADS) {
      for (const u of pending) {
        if (now - Date.parse(u.updated_at) >= STALE_UPLOAD_MS && !this.inUse(u.upload_id))
          rmSync(join(this.uploads, u.upload_id), { recursive: true, force: true });
      }
      pending = this.listUploads();
    }
    if (pending.length >= MAX_PENDING_UPLOADS) {
      throw conflict('daemon_uploads_full', `${MAX_PENDING_UPLOADS} uploads are already waiting for verification.`, {
        nextAction:
          'verify or discard a waiting upload (GET /api/backups/uploads, DELETE /api/backups/uploads/<upload_id>)',
      });
    }
    const id = `up_${randomBytes(16).toString('hex')}`;
    ensurePrivateDir(join(this.uploads, id));
    return id;
  }

  /** The uploads waiting for verification (newest write first), with the parts they hold. */
  listUploads(): PendingUpload[] {
    const out: PendingUpload[] = [];
    for (const id of readdirSync(this.uploads)) {
      if (!UPLOAD_ID.test(id)) continue;
      const dir = join(this.uploads, id);
      try {
        let updated = lstatSync(dir).mtimeMs;
        const size = (part: UploadPart): number | null => {
          try {
            const st = lstatSync(join(dir, FILE[part]));
            updated = Math.max(updated, st.mtimeMs);
            return st.isFile() ? st.size : null;
          } catch {
            return null;
          }
        };
        out.push({
          upload_id: id,
          archive_bytes: size('archive'),
          manifest_bytes: size('manifest'),
          updated_at: new Date(updated).toISOString(),
        });
      } catch {
        // removed meanwhile
      }
    }
    return out.sort((a, b) => (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0));
  }

  /** Discard a waiting upload; one whose verify job is running is refused (409). */
  discardUpload(id: string): void {
    const dir = this.uploadDir(id);
    if (this.receiving.has(id)) throw uploadInUse('receiving a part');
    if (this.inUse(id)) throw uploadInUse('being verified');
    rmSync(dir, { recursive: true, force: true });
  }

  /** Being verified, or receiving a part right now. */
  private inUse(uploadId: string): boolean {
    if (this.receiving.has(uploadId)) return true;
    for (const j of this.jobs.values()) if (j.job.upload_id === uploadId && j.job.state === 'verifying') return true;
    return false;
  }

  private uploadDir(id: string): string {
    if (!UPLOAD_ID.test(id) || !existsSync(join(this.uploads, id))) throw uploadNotFound();
    return join(this.uploads, id);
  }

  /**
   * Stream one part into its new private file. The part is kept only when `chunks` ended normally
   * (requestBody: every declared byte arrived); a body cut short, reset or idle leaves no file, so
   * the PUT may be sent again. Over the limit the whole upload is removed (413).
   */
  async receive(
    id: string,
    part: UploadPart,
    body: Readable,
    chunks: AsyncIterable<Buffer>,
    declaredLength: number | undefined,
  ): Promise<{ bytes: number; sha256: string }> {
    const dir = this.uploadDir(id);
    const tooLarge = () => {
      rmSync(dir, { recursive: true, force: true });
      return bodyTooLarge(`${part} (${LIMIT[part]} bytes at most)`);
    };
    if (declaredLength !== undefined && declaredLength > LIMIT[part]) {
      body.resume();
      throw tooLarge();
    }
    if (this.inUse(id) && !this.receiving.has(id)) {
      body.resume();
      throw uploadInUse('being verified');
    }
    const file = join(dir, FILE[part]);
    let fd: number;
    try {
      fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch {
      body.resume();
      throw rejected('daemon_upload_part_exists', `This upload already has its ${part}.`, {
        nextAction: 'start a new upload',
      });
    }
    const hash = createHash('sha256');
    let bytes = 0;
    let kept = false;
    this.receiving.set(id, (this.receiving.get(id) ?? 0) + 1);
    try {
      for await (const chunk of chunks) {
        bytes += chunk.length;
        if (bytes > LIMIT[part]) {
          body.destroy();
          throw tooLarge();
        }
        hash.update(chunk);
        for (let off = 0; off < chunk.length;) off += writeSync(fd, chunk, off, chunk.length - off);
      }
      kept = true;
    } finally {
      closeSync(fd);
      // A part that did not arrive whole is no part: the same PUT may come again.
      if (!kept) rmSync(file, { force: true });
      const left = (this.receiving.get(id) ?? 1) - 1;
      if (left > 0) this.receiving.set(id, left);
      else this.receiving.delete(id);
    }
    return { bytes, sha256: hash.digest('hex') };
  }

  startVerify(uploadId: string): Job {
    const dir = this.uploadDir(uploadId);
    if (this.receiving.has(uploadId)) throw uploadInUse('receiving a part');
    if (this.inUse(uploadId)) throw uploadInUse('being verified');
    for (const part of ['archive', 'manifest'] as const) {
      if (!existsSync(join(dir, FILE[part])))
        throw rejected('daemon_upload_incomplete', `The upload has no ${part} yet.`, {
          nextAction: `upload the ${part}, then verify`,
        });
    }
    return this.verifyFiles(join(dir, FILE.archive), join(dir, FILE.manifest), {
      upload_id: uploadId,
      backup_id: null,
      location: null,
    });
  }

  /** The backup pairs published in `<root>/backups` and in the user's backups folder (names, sizes and where; never a path). */
  listBackups(): { backup_id: string; archive_bytes: number; location: BackupLocation }[] {
    return BACKUP_LOCATIONS.flatMap((location) => pairsIn(this.folders[location]).map((b) => ({ ...b, location })));
  }

  /** Verify a listed pair in place (the verifier only reads it). */
  startBackupVerify(backupId: string, location: BackupLocation): Job {
    if (!BACKUP_ID.test(backupId) || !pairsIn(this.folders[location]).some((b) => b.backup_id === backupId)) {
      throw notFound('daemon_backup_not_found', 'No such backup there.', {
        nextAction: 'list backups: GET /api/backups',
      });
    }
    const dir = this.folders[location];
    return this.verifyFiles(join(dir, `${backupId}.tar.gz`), join(dir, `${backupId}.manifest.json`), {
      upload_id: null,
      backup_id: backupId,
      location,
    });
  }

  /**
   * A new destination for a verification run elsewhere (a repository's backup, repositories.ts),
   * its source recorded before the audit can exist, as for the daemon's own jobs; its audit is
   * then listed with theirs.
   */
  reserveDestination(source: RepositorySource): { id: string; destination: string } {
    if (this.closing) throw daemonStopping('verification');
    const id = `job_${randomBytes(16).toString('hex')}`;
    writeFileDurable(join(this.sources, `${id}.json`), JSON.stringify(source), { mode: 0o600 });
    return { id, destination: join(this.recoveries, id) };
  }

  /** A reserved destination whose verification wrote no audit: its source record, and whatever it left, removed. */
  releaseDestination(id: string): void {
    if (!JOB_ID.test(id) || existsSync(join(this.recoveries, id, RECOVERY_AUDIT_FILE))) return;
    rmSync(join(this.recoveries, id), { recursive: true, force: true });
    rmSync(join(this.sources, `${id}.json`), { force: true });
  }

  /** The repository the audit `id`'s backup was verified from, as recorded; undefined for any other source. */
  repositoryOf(id: string): RepositorySource | undefined {
    const record = this.sourceRecord(this.locate(id).dir);
    if (record?.kind !== 'repository' || typeof record.repository !== 'string') return undefined;
    return { kind: 'repository', repository: record.repository, repository_id: String(record.repository_id) };
  }

  private sourceRecord(dir: string): Record<string, unknown> | undefined {
    try {
      return JSON.parse(readFileSync(join(this.sources, `${basename(dir)}.json`), 'utf8')) as Record<string, unknown>;
    } catch {
      return undefined; // verified before sources were recorded (or the record is gone): unknown, never guessed
    }
  }

  /** The folder backups made here go to (`user`: the Capability Center's default). */
  folder(location: BackupLocation): string {
    return this.folders[location];
  }

  private verifyFiles(
    archive: string,
    manifest: string,
    source: { upload_id: string | null; backup_id: string | null; location: BackupLocation | null },
  ): Job {
    if (this.closing) throw daemonStopping('verification');
    const jobId = `job_${randomBytes(16).toString('hex')}`;
    const job: Job = { job_id: jobId, ...source, state: 'verifying', progress: null, recovery_id: null, error: null };
    const events = new EventEmitter();
    const abort = new AbortController();
    // Recorded before the audit can exist, so every audit of this daemon names its source.
    const sourceFile = join(this.sources, `${jobId}.json`);
    const kind: AuditSource['kind'] =
      source.location === 'root' ? 'root_backup' : source.location === 'user' ? 'user_backup' : 'upload';
    writeFileDurable(sourceFile, JSON.stringify({ kind }), { mode: 0o600 });
    const done = executeVerifyIsolated(
      { archive, manifest, destination: join(this.recoveries, jobId) },
      {
        signal: abort.signal,
        onProgress: (p) => {
          job.progress = p;
          events.emit('progress', p);
        },
      },
    )
      .then(
        (outcome) => {
          job.state = outcome.audit.phase === 'held' ? 'held' : 'audited';
          job.recovery_id = outcome.audit.recovery_id;
        },
        (e: unknown) => {
          job.state = 'refused';
          rmSync(sourceFile, { force: true });
          const refusal = isLoopxError(e) ? e : verifyFailed();
          job.error = { code: refusal.code, message: refusal.message, next_action: refusal.nextAction ?? null };
        },
      )
      .finally(() => {
        // The upload has served its purpose: the workspace holds its bytes, the audit its digests.
        if (source.upload_id !== null) rmSync(join(this.uploads, source.upload_id), { recursive: true, force: true });
        events.emit('result', job);
      });
    this.jobs.set(jobId, { job, events, done, abort });
    return job;
  }

  job(jobId: string): { job: Job; events: EventEmitter } {
    const j = JOB_ID.test(jobId) ? this.jobs.get(jobId) : undefined;
    if (!j)
      throw notFound('daemon_job_not_found', 'No such verify job.', {
        nextAction: 'list audits instead; jobs live as long as the daemon',
      });
    return j;
  }

  /** recovery_id → destination, for the audits seen so far (each destination is read once for it). */
  private readonly byRecoveryId = new Map<string, string>();
  private readonly indexed = new Set<string>();

  private auditDirs(): string[] {
    return readdirSync(this.recoveries)
      .filter((n) => JOB_ID.test(n))
      .map((n) => join(this.recoveries, n))
      .filter((d) => existsSync(join(d, RECOVERY_AUDIT_FILE)));
  }

  /** Where the audit in `dir` came from, and when it was written. */
  private provenance(dir: string, audit: RecoveryAudit): { verified_at: string; source: AuditSource } {
    const record = this.sourceRecord(dir);
    const recorded = record?.kind;
    const kind: AuditSource['kind'] =
      recorded === 'root_backup' || recorded === 'user_backup' || recorded === 'upload' || recorded === 'repository'
        ? recorded
        : 'unknown';
    const repositoryId =
      kind === 'repository' && typeof record?.repository_id === 'string' ? record.repository_id : null;
    return {
      verified_at: lstatSync(join(dir, RECOVERY_AUDIT_FILE)).mtime.toISOString(),
      source: {
        kind,
        backup_id: audit.backup.backup_id,
        backup_created_at: audit.backup.created_at,
        ...(repositoryId !== null ? { repository_id: repositoryId } : {}),
        ...(kind === 'repository' && audit.backup.repository !== undefined
          ? { encrypted: audit.backup.repository.encrypted }
          : {}),
      },
    };
  }

  /** The audits, newest verification first, each with its source. */
  listAudits(): AuditListItem[] {
    const out: AuditListItem[] = [];
    for (const d of this.auditDirs()) {
      try {
        // Re-read (and the address re-checked) on every listing, so a changed audit drops out; the
        // same read indexes it for `audit(id)`.
        const { audit } = showAudit(d);
        this.byRecoveryId.set(audit.recovery_id, d);
        this.indexed.add(d);
        out.push({
          recovery_id: audit.recovery_id,
          backup_id: audit.backup.backup_id,
          phase: audit.phase,
          operator_state: audit.operator_state,
          created_at: audit.backup.created_at,
          ...this.provenance(d, audit),
          // One logical scope per Goal besides the whole root's (`machine`): the Goals the backup holds.
          goals: new Set(audit.components.map((c) => c.logical_scope).filter((s) => s !== 'machine')).size,
          assets: audit.counts.assets,
          execution_authority_granted: false,
        });
      } catch {
        // An audit whose bytes no longer match its address is not listed; `raw` of it refuses.
      }
    }
    return out.sort((a, b) => (a.verified_at < b.verified_at ? 1 : a.verified_at > b.verified_at ? -1 : 0));
  }

  /**
   * What the audit's backup holds, per Goal, in the operator's terms (audit-contents.ts): read from
   * its private audit and its workspace's historical readers; the workspace named relative to the root.
   */
  contents(id: string): AuditContents & { verified_at: string; source: AuditSource } {
    const { dir } = this.locate(id);
    const read = readWorkspaceContents(dir);
    // The workspace reader re-read the audit: it must still be the one asked for.
    if (read.audit.recovery_id !== id) throw auditNotFound();
    return { ...auditContents(read, basename(dir)), ...this.provenance(dir, read.audit) };
  }

  /** The stored audit (exact bytes, address re-checked on every read) whose recovery_id is `id`. */
  audit(id: string): { bytes: Buffer; audit: RecoveryAudit } {
    return this.locate(id).found;
  }

  /** The destination directory of the audit `id` (its address re-checked), to read its workspace back; never shown. */
  destination(id: string): string {
    return this.locate(id).dir;
  }

  private locate(id: string): { dir: string; found: { bytes: Buffer; audit: RecoveryAudit } } {
    if (/^[0-9a-f]{64}$/.test(id)) {
      if (!this.byRecoveryId.has(id)) {
        for (const d of this.auditDirs()) {
          if (this.indexed.has(d)) continue;
          try {
            this.byRecoveryId.set(showAudit(d).audit.recovery_id, d);
            this.indexed.add(d);
          } catch {
            // not readable now: looked at again next time
          }
        }
      }
      const dir = this.byRecoveryId.get(id);
      if (dir !== undefined) {
        const found = showAudit(dir);
        if (found.audit.recovery_id === id) return { dir, found };
      }
    }
    throw auditNotFound();
  }

  /**
   * Delete an audit and its inert workspace: only with `confirm` equal to its recovery id (the
   * content address the operator saw), and only while no recovery planned from it is live
   * (`inUse`: planned, applying, held or complete — an abandoned one does not count).
   */
  deleteAudit(id: string, confirm: string, inUse: boolean): void {
    const { dir } = this.locate(id);
    if (confirm !== id)
      throw rejected('daemon_audit_confirm_mismatch', 'The confirmation is not this audit’s recovery id.', {
        nextAction: 'confirm with the recovery id the audit page shows',
      });
    if (inUse)
      throw conflict(
        'daemon_audit_in_use',
        'A recovery was planned from this audit’s workspace; it is kept while that recovery is live.',
        {
          nextAction: 'abandon that recovery first, or keep the audit as its evidence',
        },
      );
    rmSync(dir, { recursive: true, force: true });
    rmSync(join(this.sources, `${basename(dir)}.json`), { force: true });
    this.byRecoveryId.delete(id);
    this.indexed.delete(dir);
  }

  summary(id: string) {
    return publicSummary(this.audit(id).audit);
  }

  /** Stop running jobs (their destinations are removed by the verifier) and wait for them. */
  async close(): Promise<void> {
    this.closing = true;
    for (const j of this.jobs.values()) j.abort.abort();
    await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
  }
}

/** The pairs in `dir`: a manifest named for a valid backup id beside its archive (a regular file). */
function pairsIn(dir: string): { backup_id: string; archive_bytes: number }[] {
  if (!existsSync(dir)) return [];
  const out: { backup_id: string; archive_bytes: number }[] = [];
  for (const name of readdirSync(dir).sort()) {
    const id = name.endsWith('.manifest.json') ? name.slice(0, -'.manifest.json'.length) : undefined;
    if (id === undefined || !BACKUP_ID.test(id)) continue;
    try {
      const st = lstatSync(join(dir, `${id}.tar.gz`));
      if (st.isFile()) out.push({ backup_id: id, archive_bytes: st.size });
    } catch {
      // a manifest without its archive is not a backup to pick
    }
  }
  return out;
}
