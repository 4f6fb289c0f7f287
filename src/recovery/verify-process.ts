/**
 * `executeVerify` in a disposable child process (verify-child.ts), for callers that live long and
 * hold secrets — the daemon: the untrusted archive is decompressed, tokenized and extracted there,
 * so a failure or a memory spike on a hostile input ends that process, not the caller. The child
 * gets a minimal environment (no credentials), `--max-old-space-size` of the §12 worker bound and
 * stdio pipes only; it starts the owner worker itself. Its progress reaches `onProgress`; an abort
 * sends it SIGTERM (it removes what it created and answers `verify_interrupted`). The child is
 * always reaped before this settles.
 *
 * When the child ends without an answer (killed, crashed): its process group — the owner worker
 * with it — is killed; a published audit in the destination still counts (it is read back and its
 * address re-checked); otherwise the destination — which did not exist before — is removed and
 * `verify_process_failed` is thrown. The child runs as the same user: this isolates failures,
 * memory and the environment, it is not a sandbox.
 */
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { refusalFromJson, rejected, type LoopxError } from '../core/index.js';
import { showAudit, type RecoveryAudit } from './audit.js';
import { interrupted } from './extract.js';
import { RECOVERY_LIMITS } from './limits.js';
import { verifyFailed, type VerifyInputs, type VerifyOptions, type VerifyProgress } from './verify.js';
import { childEnv, siblingEntry } from './worker-client.js';

/** Longest answer line accepted from the child (progress and error documents are small). */
const MAX_LINE = 256 * 1024;
/** How long an aborted child may take to remove what it made before its group is killed. */
const STOP_GRACE_MS = 15_000;

export interface IsolatedVerifyOutcome {
  readonly audit: RecoveryAudit;
  readonly audit_bytes: Buffer;
}

type ChildAnswer =
  | { progress: VerifyProgress }
  | { done: true }
  | { error: { kind?: unknown; code?: unknown; message?: unknown; next_action?: unknown; details?: unknown } };

/** The child's last word: it finished, or it refused (never a progress line). */
type FinalAnswer = Extract<ChildAnswer, { done: true } | { error: unknown }>;

function errorOf(e: Extract<ChildAnswer, { error: unknown }>['error']): LoopxError {
  return refusalFromJson(e, 'Verification refused the backup.') ?? verifyFailed();
}

/** `executeVerify` run in a disposable child process (see the header); settles only once the child is reaped. */
export async function executeVerifyIsolated(
  /** Local files only: the child is handed their paths. */
  inputs: VerifyInputs & { readonly archive: string; readonly manifest: string },
  options: VerifyOptions = {},
): Promise<IsolatedVerifyOutcome> {
  if (options.signal?.aborted) throw interrupted();
  const destination = resolve(inputs.destination);
  const existedBefore = existsSync(destination);
  const { path, loader } = siblingEntry('verify-child');
  // Its own process group: the owner worker it starts joins it, so a child that dies abnormally
  // takes its worker along (killGroup) instead of leaving it to run out its own time.
  const child = spawn(
    process.execPath,
    [...loader, `--max-old-space-size=${RECOVERY_LIMITS.workerOldSpaceMib}`, path],
    {
      cwd: '/',
      env: childEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const killGroup = (): void => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.on('close', (code, signal) => done({ code, signal }));
    child.on('error', () => done({ code: null, signal: null }));
  });
  child.stderr.resume();
  child.stdin.on('error', () => undefined);
  child.stdin.end(
    `${JSON.stringify({ archive: resolve(inputs.archive), manifest: resolve(inputs.manifest), destination })}\n`,
  );
  // An abort asks the child to stop (it removes what it made); one that has not ended after a
  // grace period is killed with its group.
  let escalate: NodeJS.Timeout | undefined;
  const stop = (): void => {
    child.kill('SIGTERM');
    escalate = setTimeout(killGroup, STOP_GRACE_MS);
  };
  options.signal?.addEventListener('abort', stop, { once: true });

  let answer: FinalAnswer | undefined;
  try {
    answer = await readAnswer(child.stdout, options.onProgress, killGroup);
  } finally {
    await exited;
    clearTimeout(escalate);
    options.signal?.removeEventListener('abort', stop);
  }
  if (answer === undefined) killGroup(); // its worker, if the child died without reaping it

  if (answer !== undefined && 'error' in answer) throw errorOf(answer.error);
  return publishedAudit(destination, answer !== undefined, existedBefore, options.signal);
}

/**
 * The child's answer lines: progress handed to `onProgress` as it comes, the last `done` or `error`
 * document returned (undefined when it sent none). An over-long line kills the group and ends the reading.
 */
async function readAnswer(
  stdout: NodeJS.ReadableStream,
  onProgress: VerifyOptions['onProgress'],
  killGroup: () => void,
): Promise<FinalAnswer | undefined> {
  let answer: FinalAnswer | undefined;
  for await (const line of createInterface({ input: stdout, crlfDelay: Infinity })) {
    if (line.length > MAX_LINE) {
      killGroup();
      break;
    }
    let doc: ChildAnswer;
    try {
      doc = JSON.parse(line) as ChildAnswer;
    } catch {
      continue;
    }
    if ('progress' in doc) onProgress?.(doc.progress);
    else if (
      ('done' in doc && doc.done === true) ||
      ('error' in doc && typeof doc.error === 'object' && doc.error !== null)
    )
      answer = doc;
  }
  return answer;
}

/**
 * After a child that sent no error: the audit it published, read back (a `done` child's audit that
 * does not read back throws as it is); with no answer and no audit, the destination it made removed
 * and `verify_interrupted` or `verify_process_failed` thrown.
 */
function publishedAudit(
  destination: string,
  answered: boolean,
  existedBefore: boolean,
  signal: AbortSignal | undefined,
): IsolatedVerifyOutcome {
  try {
    const { audit, bytes } = showAudit(destination);
    return { audit, audit_bytes: bytes };
  } catch (e) {
    if (answered) throw e; // done, yet its audit does not read back: say so as it is
  }
  // Its owner worker may still be finishing in the destination's scratch (it exits once its input
  // closes): retry a removal that races with its last files.
  if (!existedBefore) rmSync(destination, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  // Stopped before its own handlers were in place (a SIGTERM at start-up): still an interruption.
  if (signal?.aborted) throw interrupted();
  throw rejected(
    'verify_process_failed',
    'Verification stopped without an answer (its process ended unexpectedly); nothing was published.',
    {
      nextAction:
        'run the verification again; to see where it stops, run loopx backup-state verify on the command line',
    },
  );
}
