/**
 * Backup repositories in the Capability Center: a repository's backups listed (in the daemon: a
 * listing reads only the repository's small records), a backup of this root made into one, one of
 * its backups verified, and a recovery planned from a verified one. A backup and a verification
 * run as jobs in a disposable process of their own (repository-child.ts) — the same runtime calls
 * as `backup-state --execute --repo R [--encrypt --recipient …]` and `backup-state verify --repo R
 * --backup-id B --execute [--key K]` — so neither a capture nor the decoding of a fetched archive
 * ever happens in the daemon. A verification writes its audit where the daemon's own verify jobs
 * do, with its source (the repository's id and, privately, its URL) recorded by BackupService: the
 * audit is listed with the others, and a recovery planned from it pins the backup in the repository
 * (adoptions.ts). One backup at a time.
 *
 * What it must never do: answer or log a key or credential value (it only ever holds references,
 * checked by repository-input.ts), or a directory repository's path beyond the URL the operator
 * typed (answers name the repository by its id).
 */
import { randomBytes } from 'node:crypto';
import { conflict, notFound, refusalFromJson, type LoopxError } from '../core/index.js';
import {
  defaultAuthorityDir,
  listRepository,
  placementWarning,
  RECOVERY_LIMITS,
  type BackupEntry,
  type BackupPlacement,
  type CaptureProfile,
  type VerifyProgress,
} from '../runtime/index.js';
import type { AdoptionService } from './adoptions.js';
import { runChild, siblingChild } from './child-process.js';
import { backupRunning } from './backup-create.js';
import type { AuditListItem, BackupService, JobError } from './backups.js';
import { daemonStopping } from './errors.js';
import type { RepositoryRequest } from './repository-child.js';
import { isS3, publicRefusal } from './repository-input.js';

export interface RepositoryDescription {
  readonly id: string;
  readonly kind: 'dir' | 's3';
  readonly format: string;
  readonly encryption: 'required' | 'optional';
}

/** One backup of a repository as the Capability Center lists it. */
export interface RepositoryBackupItem {
  readonly backup_id: string;
  readonly created_at: string;
  readonly published_at: string;
  readonly root_id: string | null;
  readonly capture_profile: string | null;
  readonly encrypted: boolean;
  readonly archive_bytes: number;
  /** When it was last verified from this repository (by any host), or null. */
  readonly verified_at: string | null;
  /** This daemon's newest audit of it (a verification from this repository), or null: a recovery starts there. */
  readonly audit_id: string | null;
}

export interface RepositoryBackups {
  readonly repository: RepositoryDescription;
  /** Newest capture first. */
  readonly backups: readonly RepositoryBackupItem[];
  readonly incomplete: readonly string[];
  readonly unreadable: readonly string[];
}

export interface RepositoryJob {
  readonly job_id: string;
  readonly kind: 'backup' | 'verify';
  readonly repository_id: string;
  /** The backup verified, or (a backup job) the one made once it is known. */
  backup_id: string | null;
  state: 'running' | 'done' | 'refused';
  readonly started_at: string;
  finished_at: string | null;
  /** A verification's step while it runs. */
  progress: VerifyProgress | null;
  backup: {
    readonly backup_id: string;
    readonly archive_bytes: number;
    readonly achieved_profile: string;
    readonly goals: number;
    readonly encrypted: boolean;
    readonly placement: BackupPlacement;
    readonly warning: string | null;
  } | null;
  audit: { readonly recovery_id: string; readonly phase: string; readonly operator_state: string } | null;
  error: JobError | null;
}

const JOB_ID = /^rjob_[0-9a-f]{32}$/;
/** The newest finished jobs kept for GET (their backups and audits are kept elsewhere). */
const KEEP = 20;
/** Longest answer line accepted from the process (progress and answers are small). */
const MAX_LINE = 256 * 1024;
/** How long a stopped verification may take to remove what it made before its group is killed. */
const STOP_GRACE_MS = 15_000;

const processFailed: JobError = {
  code: 'daemon_repository_job_failed',
  message: 'The repository process ended without an answer; nothing was published and no audit was written.',
  next_action: 'check the daemon log, then start it again',
};

const notVerifiedHere = (backupId: string) =>
  conflict(
    'daemon_repository_backup_not_verified',
    `This daemon has no audit of backup ${backupId} from this repository: a recovery starts from a verified backup.`,
    {
      nextAction: `verify it first: POST /api/repositories/backups/${encodeURIComponent(backupId)}/verify`,
      details: { backup_id: backupId },
    },
  );

type Answer =
  | { readonly result: Record<string, unknown> }
  | { readonly error: { kind?: unknown; code?: unknown; message?: unknown; next_action?: unknown; details?: unknown } }
  | { readonly failed: true };

/**
 * Run the repository process on `request` until it answers and ends; `stop` asks it to stop
 * (SIGTERM, then its group killed after a grace period). Resolves with its answer (undefined when
 * it gave none) once it is reaped and its group — a verification's owner worker — is gone.
 */
async function runRepositoryProcess(
  request: RepositoryRequest,
  onProgress: (p: VerifyProgress) => void,
  stop: AbortSignal,
): Promise<Answer | undefined> {
  return (await runChild({
    entry: siblingChild(import.meta.url, 'repository-child'),
    nodeArgs: request.op === 'verify' ? [`--max-old-space-size=${RECOVERY_LIMITS.workerOldSpaceMib}`] : [],
    // The daemon's environment: the references it was given name its variables. cwd `/`.
    cwd: '/',
    env: process.env,
    request,
    maxLine: MAX_LINE,
    isAnswer: (d) => 'result' in d || 'error' in d || d['failed'] === true,
    onProgress: (p) => {
      if (typeof p === 'object' && p !== null) onProgress(p as VerifyProgress);
    },
    stop,
    graceMs: STOP_GRACE_MS,
  })) as Answer | undefined;
}

const archiveBytes = (b: BackupEntry): number => b.objects.find((o) => o.role === 'archive')?.size_bytes ?? 0;

export class RepositoryService {
  private readonly jobs = new Map<string, { job: RepositoryJob; done: Promise<void>; stop: AbortController }>();
  private closing = false;

  constructor(
    private readonly root: string,
    private readonly authorityDir: string | undefined,
    private readonly backups: BackupService,
    private readonly adoptions: AdoptionService,
  ) {}

  /** The repository at `url` opened and listed (its refusals as the browser may read them). */
  private async open(url: string) {
    try {
      return await listRepository(url);
    } catch (e) {
      throw publicRefusal(e, url);
    }
  }

  /** This daemon's audits of `repositoryId`'s backups, newest verification first. */
  private auditsOf(repositoryId: string): AuditListItem[] {
    return this.backups
      .listAudits()
      .filter((a) => a.source.kind === 'repository' && a.source.repository_id === repositoryId);
  }

  /** The repository's backups, newest capture first, each with its size, encryption, last verification and this daemon's audit of it. */
  async list(url: string): Promise<RepositoryBackups> {
    const l = await this.open(url);
    const audits = this.auditsOf(l.repository.id);
    return {
      repository: {
        id: l.repository.id,
        kind: isS3(url) ? 's3' : 'dir',
        format: l.repository.format,
        encryption: l.repository.encryption,
      },
      backups: [...l.backups].reverse().map((b) => ({
        backup_id: b.backup_id,
        created_at: b.created_at,
        published_at: b.published_at,
        root_id: b.root_id,
        capture_profile: b.capture_profile,
        encrypted: b.encrypted,
        archive_bytes: archiveBytes(b),
        verified_at: l.verified[b.backup_id] ?? null,
        audit_id: audits.find((a) => a.backup_id === b.backup_id)?.recovery_id ?? null,
      })),
      incomplete: l.incomplete,
      unreadable: l.unreadable,
    };
  }

  /** Back this root up into the repository at `url` (sealed for `recipients` when given); one backup at a time. */
  async startBackup(url: string, profile: CaptureProfile, recipients: readonly string[] | undefined) {
    const { repository } = await this.open(url);
    // Checked once the repository answered, right before the job starts: two requests never both pass.
    if (this.closing) throw daemonStopping('backup');
    const running = [...this.jobs.values()].find((j) => j.job.kind === 'backup' && j.job.state === 'running');
    if (running) throw backupRunning(`GET /api/repositories/jobs/${running.job.job_id}`);
    const request: RepositoryRequest = {
      op: 'backup',
      root: this.root,
      ...(this.authorityDir !== undefined ? { authorityDir: this.authorityDir } : {}),
      url,
      profile,
      ...(recipients !== undefined ? { recipients } : {}),
    };
    return this.run('backup', repository.id, null, request, (job, r) => {
      const placement = r['placement'] as BackupPlacement;
      job.backup_id = r['backup_id'] as string;
      job.backup = {
        backup_id: r['backup_id'] as string,
        archive_bytes: r['archive_bytes'] as number,
        achieved_profile: r['achieved_profile'] as string,
        goals: r['goals'] as number,
        encrypted: r['encrypted'] as boolean,
        placement,
        warning: placementWarning(placement) ?? null,
      };
    });
  }

  /** Verify the repository's backup `backupId` into a new inert workspace with its audit (`key`: its key, by reference). */
  async startVerify(url: string, backupId: string, key: string | undefined) {
    const { repository } = await this.open(url);
    if (this.closing) throw daemonStopping('verification');
    const reserved = this.backups.reserveDestination({
      kind: 'repository',
      repository: url,
      repository_id: repository.id,
    });
    const request: RepositoryRequest = {
      op: 'verify',
      root: this.root,
      authorityDir: this.authorityDir ?? defaultAuthorityDir(),
      url,
      backupId,
      destination: reserved.destination,
      ...(key !== undefined ? { key } : {}),
    };
    return this.run(
      'verify',
      repository.id,
      backupId,
      request,
      (job, r) => {
        job.audit = {
          recovery_id: r['recovery_id'] as string,
          phase: r['phase'] as string,
          operator_state: r['operator_state'] as string,
        };
      },
      () => this.backups.releaseDestination(reserved.id),
    );
  }

  /** A job: its process started now, `settle` reading its result, `release` run when it ends without one. */
  private run(
    kind: RepositoryJob['kind'],
    repositoryId: string,
    backupId: string | null,
    request: RepositoryRequest,
    settle: (job: RepositoryJob, result: Record<string, unknown>) => void,
    release: () => void = () => undefined,
  ): RepositoryJob {
    const job: RepositoryJob = {
      job_id: `rjob_${randomBytes(16).toString('hex')}`,
      kind,
      repository_id: repositoryId,
      backup_id: backupId,
      state: 'running',
      started_at: new Date().toISOString(),
      finished_at: null,
      progress: null,
      backup: null,
      audit: null,
      error: null,
    };
    const stop = new AbortController();
    const done = runRepositoryProcess(request, (p) => (job.progress = p), stop.signal)
      .then((answer) => {
        if (answer === undefined || !('result' in answer)) {
          const refusal =
            answer !== undefined && 'error' in answer
              ? refusalFromJson(answer.error, 'The repository refused.')
              : undefined;
          // Named as the process named it: from its working directory, `/`.
          const e = refusal === undefined ? undefined : (publicRefusal(refusal, request.url, '/') as LoopxError);
          job.error = e ? { code: e.code, message: e.message, next_action: e.nextAction ?? null } : processFailed;
        } else settle(job, answer.result);
      })
      .catch(() => {
        job.error = processFailed;
      })
      .finally(() => {
        job.state = job.error === null ? 'done' : 'refused';
        try {
          if (job.error !== null) release();
        } catch {
          // what is left without an audit is never listed; the next daemon start leaves it as it is
        }
        job.finished_at = new Date().toISOString();
      });
    this.jobs.set(job.job_id, { job, done, stop });
    for (const [id, j] of [...this.jobs].slice(0, Math.max(0, this.jobs.size - KEEP)))
      if (j.job.state !== 'running') this.jobs.delete(id);
    return job;
  }

  job(id: string): RepositoryJob {
    const j = JOB_ID.test(id) ? this.jobs.get(id) : undefined;
    if (!j)
      throw notFound('daemon_repository_job_not_found', 'No such repository job.', {
        // Jobs live as long as the daemon; the backups and audits they made outlive them.
        nextAction:
          'list the repository’s backups again: GET /api/repositories/backups?repository=<the repository URL>',
      });
    return j.job;
  }

  /**
   * Plan the recovery of Goal `goalId` from the repository's backup `backupId`: from this daemon's
   * newest audit of it (verified from this repository), exactly as from that audit — the plan pins
   * the backup in the repository until the recovery ends.
   */
  async planRecovery(url: string, backupId: string, goalId: string, name: string | undefined) {
    const { repository } = await this.open(url);
    const audit = this.auditsOf(repository.id).find((a) => a.backup_id === backupId);
    if (audit === undefined) throw notVerifiedHere(backupId);
    return this.adoptions.plan(audit.recovery_id, goalId, name);
  }

  /** Stop running verifications (each removes what it made), and wait for every job. */
  async close(): Promise<void> {
    this.closing = true;
    for (const j of this.jobs.values()) if (j.job.kind === 'verify') j.stop.abort();
    await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
  }
}
