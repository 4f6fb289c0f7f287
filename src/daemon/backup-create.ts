/**
 * "Back up now" in the Capability Center: `loopx backup-state --execute` run by the daemon as a
 * process of its own (the same command an operator runs, so a quiescent capture closes admission to
 * this root exactly as the CLI's does, and the daemon's event loop never captures), publishing into
 * the user's backups folder (outside any root; the default) or the root's own `backups/`. One backup
 * at a time (`daemon_backup_running`). Its result names the pair, the capture profile achieved and
 * where the pair lies against the root it protects — never a path.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { conflict, ensurePrivateDir, isLoopxError, notFound, PACKAGE_ROOT } from '../core/index.js';
import { ELSEWHERE_ACTION, placementWarning, type BackupPlacement, type CaptureProfile } from '../runtime/index.js';
import type { BackupLocation, BackupService, JobError } from './backups.js';
import { daemonStopping } from './errors.js';

/** The profiles offered: crash-consistent needs the root stopped, which a serving daemon never is. */
export const OFFERED_PROFILES: readonly CaptureProfile[] = ['online', 'quiescent'];

export interface BackupRun {
  readonly job_id: string;
  readonly location: BackupLocation;
  readonly requested_profile: CaptureProfile;
  state: 'capturing' | 'created' | 'refused';
  result: {
    readonly backup_id: string;
    readonly archive_bytes: number;
    readonly achieved_profile: string;
    readonly goals: number;
    readonly placement: BackupPlacement;
    /** The placement said plainly (null: another file system), and how to put the next one elsewhere. */
    readonly warning: string | null;
    readonly elsewhere: string | null;
  } | null;
  error: JobError | null;
}

/** A backup of this root is being made (here, or into a repository: repositories.ts); `route` reads how it goes. */
export const backupRunning = (route: string) =>
  conflict('daemon_backup_running', 'A backup of this root is being made.', {
    nextAction: `wait for it to end: ${route}`,
  });

const RUN_ID = /^bk_[0-9a-f]{32}$/;
/** The newest runs kept for GET (the backups themselves are files; these are only their receipts). */
const KEEP = 20;

export class BackupCreator {
  private readonly runs = new Map<string, { run: BackupRun; done: Promise<void> }>();
  private closing = false;

  constructor(
    private readonly root: string,
    private readonly backups: BackupService,
    private readonly authorityDir: string | undefined,
  ) {}

  start(location: BackupLocation, profile: CaptureProfile): BackupRun {
    if (this.closing) throw daemonStopping('backup');
    if ([...this.runs.values()].some((r) => r.run.state === 'capturing')) throw backupRunning('GET /api/backups/runs');
    const outputDir = this.backups.folder(location);
    ensurePrivateDir(outputDir);
    const run: BackupRun = {
      job_id: `bk_${randomBytes(16).toString('hex')}`,
      location,
      requested_profile: profile,
      state: 'capturing',
      result: null,
      error: null,
    };
    const done = this.capture(run, outputDir).catch((e: unknown) => {
      run.state = 'refused';
      run.error = isLoopxError(e)
        ? { code: e.code, message: e.message, next_action: e.nextAction ?? null }
        : {
            code: 'daemon_backup_failed',
            message: 'The backup process ended without an answer; nothing was published.',
            next_action: null,
          };
    });
    this.runs.set(run.job_id, { run, done });
    for (const id of [...this.runs.keys()].slice(0, Math.max(0, this.runs.size - KEEP)))
      if (this.runs.get(id)!.run.state !== 'capturing') this.runs.delete(id);
    return run;
  }

  get(id: string): BackupRun {
    const r = RUN_ID.test(id) ? this.runs.get(id) : undefined;
    if (!r)
      throw notFound('daemon_backup_run_not_found', 'No such backup run.', {
        nextAction: 'list them: GET /api/backups/runs',
      });
    return r.run;
  }

  list(): BackupRun[] {
    return [...this.runs.values()].map((r) => r.run).reverse();
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.allSettled([...this.runs.values()].map((r) => r.done));
  }

  private async capture(run: BackupRun, outputDir: string): Promise<void> {
    const bin = PACKAGE_ROOT ? join(PACKAGE_ROOT, 'bin', 'loopx.js') : undefined;
    if (bin === undefined || !existsSync(join(PACKAGE_ROOT!, 'dist', 'src', 'cli', 'main.js')))
      throw conflict(
        'daemon_backup_unavailable',
        'This installation has no built command line to make a backup with.',
        { nextAction: 'build it: npm run build' },
      );
    const args = [
      bin,
      'backup-state',
      '--execute',
      '--json',
      '--root',
      this.root,
      '--output-dir',
      outputDir,
      '--profile',
      run.requested_profile,
    ];
    if (this.authorityDir !== undefined) args.push('--authority-dir', this.authorityDir);
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolveRun, reject) => {
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
      child.on('error', reject);
      child.on('close', (c) => resolveRun({ code: c, stdout: out }));
    });
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(stdout) as Record<string, unknown>;
    } catch {
      throw new Error(`backup-state exited ${code} without a JSON answer`);
    }
    if (code !== 0 || doc['ok'] !== true) {
      const e = (doc['error'] ?? {}) as { code?: string; message?: string; next_action?: string };
      run.state = 'refused';
      run.error = {
        code: e.code ?? 'daemon_backup_failed',
        message: e.message ?? 'The backup was refused.',
        next_action: e.next_action ?? null,
      };
      return;
    }
    const archive = doc['archive'] as { size_bytes: number };
    const components = doc['components'] as { achieved_profile?: string } | undefined;
    const capture = doc['capture'] as { profile?: string };
    const placement = doc['placement'] as BackupPlacement;
    const warning = placementWarning(placement) ?? null;
    run.result = {
      backup_id: doc['backup_id'] as string,
      archive_bytes: archive.size_bytes,
      achieved_profile: components?.achieved_profile ?? capture.profile ?? 'unknown',
      goals: (doc['counts'] as { goals: number }).goals,
      placement,
      warning,
      elsewhere: warning === null ? null : ELSEWHERE_ACTION,
    };
    run.state = 'created';
  }
}
