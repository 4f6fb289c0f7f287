/**
 * Recovery drills started from the daemon (`POST /api/drills`): the short drill of `loopx recover
 * drill --short` on disposable synthetic state — never this root —, one at a time, as a job whose
 * stages are events, and its receipt (`loopx_recovery_drill_v0`) kept in
 * `<root>/daemon/drills/<drill_id>.json` (0600; the newest MAX_KEPT_DRILLS are kept).
 *
 * How it runs, and why this way: through the drill library (runtime/drill), not by parsing
 * `loopx recover drill --short --json` — the library reports each stage as it starts (the command
 * prints its stages to a terminal only) and hands over the receipt as a value — but in a disposable
 * process of its own (drill-child.ts), not in the daemon: a drill starts dozens of CLI children, a
 * receiver and a writer loop of its own and cannot be stopped half-way. In its own process group,
 * with HOME, TMPDIR and XDG_STATE_HOME inside one private temporary directory and no other
 * environment of the daemon's but PATH, a daemon that stops (or a drill over DRILL_TIMEOUT_MS)
 * kills the group and removes that directory: nothing of the drill outlives it, and nothing of
 * the operator's is in its reach. Its steps run the installed CLI (`bin/loopx.js`).
 *
 * Receipts are published path-free: the drill's private directory is replaced by `<drill>` in
 * the child's answer, and an answer that still names this root, the home directory or the
 * temporary directory is not kept (the job fails with `daemon_drill_receipt_not_path_free`).
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { existsSync, lstatSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  conflict,
  ensurePrivateDir,
  notFound,
  PACKAGE_ROOT,
  readRegularFileOnce,
  writeFileDurable,
} from '../core/index.js';
import { DRILL_SCHEMA, type DrillReceipt } from '../runtime/index.js';
import { runChild, siblingChild } from './child-process.js';
import { daemonError } from './security.js';

/** Receipts kept in `<root>/daemon/drills/`; the oldest beyond are removed when a new one is kept. */
export const MAX_KEPT_DRILLS = 20;
/** A drill still running after this long is stopped (its group killed) and fails `daemon_drill_timed_out`. */
export const DRILL_TIMEOUT_MS = 15 * 60 * 1000;
/** Finished jobs remembered in memory (the receipts themselves are on disk). */
const MAX_JOBS = 8;
/** Longest answer line taken from the drill process (a receipt is a few tens of KiB). */
const MAX_LINE = 4 * 1024 * 1024;
/** Stages remembered per job (a short drill has about a dozen). */
const MAX_STAGES = 64;
const DRILL_ID = /^drill_[0-9a-f]{16}$/;
const JOB_ID = /^djob_[0-9a-f]{32}$/;

export interface DrillJobError {
  readonly code: string;
  readonly message: string;
  readonly next_action: string | null;
}

/** A drill started from this daemon (docs/schemas/daemon-drill-job.schema.json). */
export interface DrillJob {
  readonly job_id: string;
  readonly mode: 'short';
  state: 'running' | 'done' | 'failed';
  readonly started_at: string;
  finished_at: string | null;
  /** The drill's stages as each started, in order (the last one is running while the job runs). */
  stages: string[];
  drill_id: string | null;
  result: DrillReceipt['result'] | null;
  missed: string[];
  error: DrillJobError | null;
}

/** One kept receipt, as GET /api/drills lists it. */
export interface DrillSummary {
  readonly drill_id: string;
  readonly mode: string;
  readonly started_at: string;
  readonly finished_at: string;
  readonly result: DrillReceipt['result'];
  readonly missed: readonly string[];
  readonly rto: DrillReceipt['rto'];
  readonly rpo: { readonly claimed_beyond_checkpoint: number; readonly met: boolean };
}

type Answer = { receipt: unknown } | { error: DrillJobError } | { failed: true };

const drillRunning = (jobId: string) =>
  conflict('daemon_drill_running', 'A recovery drill is already running in this daemon; one runs at a time.', {
    nextAction: `wait for it to end: GET /api/drills/jobs/${jobId}`,
  });
const drillNotFound = () =>
  notFound('daemon_drill_not_found', 'No kept drill receipt with that id.', {
    nextAction: 'list the drills: GET /api/drills',
  });
const jobNotFound = () =>
  notFound('daemon_drill_job_not_found', 'No such drill job.', {
    nextAction: 'list the drills instead; jobs live as long as the daemon: GET /api/drills',
  });
const drillStopping = () =>
  daemonError(
    503,
    'daemon_drill_stopping',
    'The daemon is stopping; no new drill starts.',
    'start the daemon again: loopx daemon',
  );
const drillUnavailable = () =>
  daemonError(
    500,
    'daemon_drill_unavailable',
    'The recovery drill needs the built CLI, which this installation does not have.',
    'build loopx (npm run build), then start the daemon again',
  );

/** Failures the job reports as data (never raised): the drill process's own refusals pass through as they are. */
const FAILED = {
  failed: {
    code: 'daemon_drill_failed',
    message: 'The drill stopped without a receipt (its process ended unexpectedly); nothing was kept.',
    next_action: 'run the drill again',
  },
  timedOut: {
    code: 'daemon_drill_timed_out',
    message: `The drill ran longer than ${DRILL_TIMEOUT_MS / 60_000} minutes and was stopped; nothing was kept.`,
    next_action: 'see where it stops: loopx recover drill --short --keep',
  },
  stopped: {
    code: 'daemon_drill_interrupted',
    message: 'The daemon stopped while the drill ran; nothing was kept.',
    next_action: 'start the daemon again and run the drill again',
  },
  notKept: {
    code: 'daemon_drill_receipt_not_kept',
    message: 'The drill ended, but its receipt could not be read or written into the daemon’s state; nothing was kept.',
    next_action: 'check the daemon log and the space left for the root, then run the drill again',
  },
  notPathFree: {
    code: 'daemon_drill_receipt_not_path_free',
    message: 'The drill’s receipt named a private path; it was not kept.',
    next_action: 'run it on the command line and report its receipt: loopx recover drill --short',
  },
} as const satisfies Record<string, DrillJobError>;

/** Node's arguments that start the installed CLI, which every step of the drill runs as. */
function cliCommand(): string[] {
  const bin = PACKAGE_ROOT ? join(PACKAGE_ROOT, 'bin', 'loopx.js') : undefined;
  if (bin === undefined || !existsSync(join(PACKAGE_ROOT!, 'dist', 'src', 'cli', 'main.js'))) throw drillUnavailable();
  return [bin];
}

/**
 * Run the drill process in `work` until it answers and ends; `stop` kills its group. Resolves with
 * its answer (undefined when it gave none) once the process is reaped and its group is gone.
 */
async function runDrillProcess(
  work: string,
  command: string[],
  onStage: (stage: string) => void,
  stop: AbortSignal,
): Promise<Answer | undefined> {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'C',
    HOME: work,
    TMPDIR: work,
    XDG_STATE_HOME: join(work, 'state'),
  };
  return (await runChild({
    entry: siblingChild(import.meta.url, 'drill-child'),
    cwd: work,
    env,
    request: { command },
    maxLine: MAX_LINE,
    isAnswer: (d) => 'receipt' in d || 'error' in d || d['failed'] === true,
    onProgress: (p) => {
      if (typeof p === 'string') onStage(p);
    },
    stop,
  })) as Answer | undefined;
}

/** `text` with the drill's private directory (as given and as resolved) named `<drill>`. */
function withoutDrillDir(text: string, work: string): string {
  let out = text;
  for (const p of new Set([realpathSync(work), work])) out = out.split(p).join('<drill>');
  return out;
}

export class DrillService {
  private readonly dir: string;
  private readonly jobs = new Map<
    string,
    { job: DrillJob; events: EventEmitter; done: Promise<void>; stop: AbortController }
  >();
  private running: string | undefined;
  private closing = false;

  constructor(private readonly root: string) {
    ensurePrivateDir(join(root, 'daemon'));
    this.dir = join(root, 'daemon', 'drills');
    ensurePrivateDir(this.dir);
  }

  /** Start the short drill in the background; one at a time (`daemon_drill_running`, 409). */
  start(): DrillJob {
    if (this.closing) throw drillStopping();
    if (this.running !== undefined) throw drillRunning(this.running);
    const command = cliCommand();
    const job: DrillJob = {
      job_id: `djob_${randomBytes(16).toString('hex')}`,
      mode: 'short',
      state: 'running',
      started_at: new Date().toISOString(),
      finished_at: null,
      stages: [],
      drill_id: null,
      result: null,
      missed: [],
      error: null,
    };
    const events = new EventEmitter();
    const stop = new AbortController();
    const work = mkdtempSync(join(tmpdir(), 'loopx-daemon-drill-'));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      stop.abort();
    }, DRILL_TIMEOUT_MS);
    const onStage = (stage: string) => {
      if (job.stages.length >= MAX_STAGES) return;
      job.stages.push(stage);
      events.emit('stage', stage);
    };
    const done = runDrillProcess(work, command, onStage, stop.signal)
      .then(
        (answer) =>
          this.settle(
            job,
            answer,
            work,
            stop.signal.aborted ? (timedOut ? FAILED.timedOut : FAILED.stopped) : FAILED.failed,
          ),
        () => this.fail(job, FAILED.failed),
      )
      // Kept or not, the job ends: a receipt that cannot be read or written is reported, never lost silently.
      .catch(() => this.fail(job, FAILED.notKept))
      .finally(() => {
        clearTimeout(timer);
        rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
        this.running = undefined;
        events.emit('result', job);
      });
    this.running = job.job_id;
    this.jobs.set(job.job_id, { job, events, done, stop });
    this.forgetOldJobs();
    return job;
  }

  /** The job's end: its receipt kept (path-free), or its failure recorded. */
  private settle(job: DrillJob, answer: Answer | undefined, work: string, otherwise: DrillJobError): void {
    if (answer === undefined || 'failed' in answer) return this.fail(job, otherwise);
    const text = withoutDrillDir(JSON.stringify('receipt' in answer ? answer.receipt : answer.error), work);
    const privatePlaces = [this.root, `${homedir()}/`, `${tmpdir()}/`];
    if (privatePlaces.some((p) => text.includes(p))) return this.fail(job, FAILED.notPathFree);
    if ('error' in answer) {
      const e = JSON.parse(text) as Partial<DrillJobError>;
      return this.fail(job, {
        code: String(e.code),
        message: String(e.message),
        next_action: typeof e.next_action === 'string' ? e.next_action : null,
      });
    }
    const receipt = JSON.parse(text) as DrillReceipt;
    if (receipt.schema_version !== DRILL_SCHEMA || !DRILL_ID.test(receipt.drill_id))
      return this.fail(job, FAILED.failed);
    writeFileDurable(join(this.dir, `${receipt.drill_id}.json`), `${JSON.stringify(receipt, null, 2)}\n`, {
      mode: 0o600,
      exclusive: true,
    });
    this.prune();
    Object.assign(job, {
      state: 'done',
      finished_at: new Date().toISOString(),
      drill_id: receipt.drill_id,
      result: receipt.result,
      missed: [...receipt.missed],
    });
  }

  private fail(job: DrillJob, error: DrillJobError): void {
    Object.assign(job, { state: 'failed', finished_at: new Date().toISOString(), error });
  }

  /** The newest MAX_KEPT_DRILLS receipts stay (by when they were kept). */
  private prune(): void {
    const kept = this.receiptFiles()
      .map((name) => ({ name, at: lstatSync(join(this.dir, name)).mtimeMs }))
      .sort((a, b) => b.at - a.at);
    for (const old of kept.slice(MAX_KEPT_DRILLS)) rmSync(join(this.dir, old.name), { force: true });
  }

  private forgetOldJobs(): void {
    const finished = [...this.jobs.values()].filter((j) => j.job.state !== 'running');
    for (const j of finished.slice(0, Math.max(0, this.jobs.size - MAX_JOBS))) this.jobs.delete(j.job.job_id);
  }

  private receiptFiles(): string[] {
    return readdirSync(this.dir).filter((n) => n.endsWith('.json') && DRILL_ID.test(n.slice(0, -5)));
  }

  job(jobId: string): { job: DrillJob; events: EventEmitter } {
    const j = JOB_ID.test(jobId) ? this.jobs.get(jobId) : undefined;
    if (!j) throw jobNotFound();
    return j;
  }

  /** A kept receipt's bytes, exactly as kept. */
  receipt(drillId: string): Buffer {
    const bytes = DRILL_ID.test(drillId) ? readRegularFileOnce(join(this.dir, `${drillId}.json`), MAX_LINE) : null;
    if (bytes === null) throw drillNotFound();
    return Buffer.from(bytes);
  }

  /** The running drill's job (or null) and every kept receipt, newest first; one that does not read back as a receipt is left out. */
  list(): { running: DrillJob | null; drills: DrillSummary[] } {
    const drills: DrillSummary[] = [];
    for (const name of this.receiptFiles()) {
      try {
        const r = JSON.parse(this.receipt(name.slice(0, -5)).toString('utf8')) as DrillReceipt;
        if (r.schema_version !== DRILL_SCHEMA || `${r.drill_id}.json` !== name) continue;
        drills.push({
          drill_id: r.drill_id,
          mode: r.mode,
          started_at: r.started_at,
          finished_at: r.finished_at,
          result: r.result,
          missed: r.missed,
          rto: r.rto,
          rpo: { claimed_beyond_checkpoint: r.rpo.claimed_beyond_checkpoint, met: r.rpo.met },
        });
      } catch {
        // not a receipt (or removed meanwhile): not listed
      }
    }
    drills.sort((a, b) => (a.started_at < b.started_at ? 1 : a.started_at > b.started_at ? -1 : 0));
    return { running: this.running !== undefined ? (this.jobs.get(this.running)?.job ?? null) : null, drills };
  }

  /** Stop a running drill (its group killed, its directory removed) and wait for it. */
  async close(): Promise<void> {
    this.closing = true;
    for (const j of this.jobs.values()) j.stop.abort();
    await Promise.allSettled([...this.jobs.values()].map((j) => j.done));
  }
}
