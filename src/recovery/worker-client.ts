/**
 * Runs the owner verification in its disposable worker process and bounds it: a fresh Node with
 * `--max-old-space-size=512`, a minimal environment (no credentials, TMPDIR inside the
 * destination), stdio pipes only (no IPC channel), SIGKILL at 90 s, at most 2 Mi characters of
 * answer. The worker is always reaped before this returns — no process is left behind. Its stdin
 * stays open until it has exited: that pipe closing is how a worker learns that this process died
 * (even by SIGKILL), and it exits then (worker.ts). Its exit code WORKER_EXIT.noSpace — the
 * destination filled during owner verification — is answered with the capacity refusal, never with
 * a finding on the backup.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rejected } from '../core/index.js';
import { OWNER_CODES } from './codes.js';
import { outOfSpace } from './destination.js';
import { RECOVERY_LIMITS } from './limits.js';
import {
  WORKER_EXIT,
  type CrashRecoveryRef,
  type DocumentComponentRef,
  type WorkerMessage,
  type WorkerReport,
  type WorkspaceRef,
} from './owner-verify.js';
import type { ExportItems } from '../owners/index.js';

const workerFailed = (why: string, details?: Record<string, unknown>) =>
  rejected(OWNER_CODES.workerFailed, `Owner verification failed: ${why}.`, {
    nextAction: 'use another backup of this root; keep this one for inspection',
    ...(details ? { details } : {}),
  });

/**
 * How to start one of this directory's process entries (`worker`, `verify-child`) with the running
 * Node: from sources (tests, tsx) it needs the TypeScript loader, resolved here because a child's
 * cwd is not the package.
 */
export function siblingEntry(name: 'worker' | 'verify-child'): { path: string; loader: string[] } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    return { path: here.replace(/worker-client\.ts$/, `${name}.ts`), loader: ['--import', tsx] };
  }
  return { path: here.replace(/worker-client\.js$/, `${name}.js`), loader: [] };
}

const workerEntry = () => siblingEntry('worker');

/**
 * The environment of a recovery child process: `PATH`, `LANG=C`, the test suite's `LOOPX_TEST_*`
 * fault hooks and `extra` — nothing else of the caller's (no credentials).
 */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' };
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith('LOOPX_TEST_') && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

const timeoutMs = (): number => {
  const forced = process.env.LOOPX_TEST_WORKER_TIMEOUT_MS;
  return forced !== undefined && /^\d+$/.test(forced) ? Number(forced) : RECOVERY_LIMITS.workerTimeoutMs;
};

/**
 * One disposable worker for one verification: `start()` spawns it, `add()` hands it each database
 * as extraction completes it, `finish()` asks for the report, `kill()` ends it after a refusal.
 * Either way the process is reaped before the promise settles.
 */
export class WorkerSession {
  private readonly child: ChildProcessWithoutNullStreams;
  private out = '';
  private overflow = false;
  private timedOut = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(ref: WorkspaceRef) {
    const { path, loader } = workerEntry();
    const env = childEnv({ TMPDIR: ref.scratch });
    this.child = spawn(
      process.execPath,
      [...loader, `--max-old-space-size=${RECOVERY_LIMITS.workerOldSpaceMib}`, path],
      {
        cwd: ref.scratch,
        env,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (s: string) => {
      if (this.out.length + s.length > RECOVERY_LIMITS.workerOutputChars) {
        this.overflow = true;
        this.child.kill('SIGKILL');
        return;
      }
      this.out += s;
    });
    this.child.stderr.resume();
    this.child.stdin.on('error', () => undefined);
    this.exited = new Promise((resolve) => {
      this.child.on('exit', () => this.child.stdin.destroy());
      this.child.on('close', (code, signal) => resolve({ code, signal }));
      this.child.on('error', () => resolve({ code: null, signal: null }));
    });
    this.send(ref);
  }

  private send(msg: WorkspaceRef | WorkerMessage): void {
    if (!this.child.stdin.destroyed) this.child.stdin.write(`${JSON.stringify(msg)}\n`);
  }

  /** A database extraction completed; with a v1 component, its owner export (already extracted: exports precede the root). */
  add(
    path: string,
    component?: { readonly component_id: string; readonly export: string; readonly export_items: ExportItems },
  ): void {
    this.send(
      component === undefined
        ? { sqlite: path }
        : {
            sqlite: path,
            export: component.export,
            export_items: component.export_items,
            component_id: component.component_id,
          },
    );
  }

  /** A v1 document component, verified once the whole copy is in place. */
  component(ref: DocumentComponentRef): void {
    this.send({ component: ref });
  }

  /** A crash-consistent component whose crash recovery the worker replays from the observed bytes. */
  crash(ref: CrashRecoveryRef): void {
    this.send({ crash: ref });
  }

  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
    clearTimeout(this.timer);
  }

  /**
   * The §12 90 s bound is on owner verification, not on archive processing: it starts once the
   * whole archive is extracted and verified (the worker may already have checked databases).
   */
  async finish(): Promise<WorkerReport> {
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.child.kill('SIGKILL');
    }, timeoutMs());
    // No stdin.end(): the worker takes the end of its input for this process's death.
    this.send({ end: true });
    const exit = await this.exited;
    clearTimeout(this.timer);
    if (exit.code === WORKER_EXIT.noSpace) throw outOfSpace();
    if (this.timedOut) {
      throw rejected(OWNER_CODES.workerTimeout, 'Owner verification did not finish within its time limit.', {
        nextAction: 'verify on a less loaded machine; the limit is fixed for this profile',
        details: { limit_ms: timeoutMs() },
      });
    }
    if (this.overflow || exit.code !== 0) {
      throw workerFailed('it stopped without a report (a damaged or oversized owner store)', {
        exit_code: exit.code,
        signal: exit.signal,
      });
    }
    try {
      return JSON.parse(this.out) as WorkerReport;
    } catch {
      throw workerFailed('it returned an unreadable report');
    }
  }
}
