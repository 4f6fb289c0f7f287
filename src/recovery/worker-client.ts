/**
 * Runs the owner verification in its disposable worker process and bounds it: a fresh Node with
 * `--max-old-space-size=512`, a minimal environment (no credentials, TMPDIR inside the
 * destination), stdio pipes only (no IPC channel), SIGKILL at 90 s, at most 2 Mi characters of
 * answer. The worker is always reaped before this returns — no process is left behind.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rejected } from '../core/errors.js';
import { OWNER_CODES } from './codes.js';
import { RECOVERY_LIMITS } from './limits.js';
import type { WorkerReport, WorkerRequest } from './owner-verify.js';

function workerEntry(): { path: string; loader: string[] } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) {
    // Running from sources (tests, tsx): the worker needs the TypeScript loader, resolved here
    // because the worker's cwd is the scratch directory.
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    return { path: here.replace(/worker-client\.ts$/, 'worker.ts'), loader: ['--import', tsx] };
  }
  return { path: here.replace(/worker-client\.js$/, 'worker.js'), loader: [] };
}

const timeoutMs = (): number => {
  const forced = process.env.LOOPX_TEST_WORKER_TIMEOUT_MS;
  return forced !== undefined && /^\d+$/.test(forced) ? Number(forced) : RECOVERY_LIMITS.workerTimeoutMs;
};

export async function runWorker(req: WorkerRequest): Promise<WorkerReport> {
  const { path, loader } = workerEntry();
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: req.scratch, LANG: 'C' };
  if (process.env.LOOPX_TEST_WORKER_HANG) env.LOOPX_TEST_WORKER_HANG = process.env.LOOPX_TEST_WORKER_HANG;
  const child = spawn(process.execPath, [...loader, `--max-old-space-size=${RECOVERY_LIMITS.workerOldSpaceMib}`, path], {
    cwd: req.scratch,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let overflow = false;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (s: string) => {
    if (out.length + s.length > RECOVERY_LIMITS.workerOutputChars) {
      overflow = true;
      child.kill('SIGKILL');
      return;
    }
    out += s;
  });
  child.stderr.resume();
  child.stdin.on('error', () => undefined);
  child.stdin.end(JSON.stringify(req));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs());
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal }));
    child.on('error', () => resolve({ code: null, signal: null }));
  });
  clearTimeout(timer);
  if (timedOut) {
    throw rejected(OWNER_CODES.workerTimeout, 'Owner verification did not finish within its time limit.', {
      nextAction: 'verify on a less loaded machine; the limit is fixed for this profile',
      details: { limit_ms: timeoutMs() },
    });
  }
  if (overflow || exit.code !== 0) {
    throw rejected(OWNER_CODES.workerFailed, 'Owner verification stopped without a report (a damaged or oversized owner store).', {
      nextAction: 'use another backup of this root; keep this one for inspection',
      details: { exit_code: exit.code, signal: exit.signal },
    });
  }
  try {
    return JSON.parse(out) as WorkerReport;
  } catch {
    throw rejected(OWNER_CODES.workerFailed, 'Owner verification returned an unreadable report.', { nextAction: 'use another backup of this root; keep this one for inspection' });
  }
}
