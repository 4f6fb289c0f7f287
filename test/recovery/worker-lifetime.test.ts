/**
 * A killed verification takes its owner worker with it (issue 10 item 12): the real CLI
 * `backup-state verify --execute` runs on a sizeable backup, the test latches on its worker in
 * /proc (a child of the verify process whose command line names the worker entry), SIGKILLs the
 * verify process and sees the worker gone — exited, not re-parented to run on — within a generous
 * bound. While the worker is fed databases during extraction, after it was told the archive is
 * complete, and while a synchronous step holds its event loop (LOOPX_TEST_WORKER_HANG=1 / blocked
 * hold it at that point and mark it with a file the test latches on).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, plan } from '../../src/backup/index.js';
import { makeRoot, tempBase } from '../backup/support/fixtures.js';
import { CLI, REPO, STATE_HOME } from '../support/cli.js';

const WORKER_ENTRY = /\/recovery\/worker\.[jt]s$/;
let base: string;
let archive: string;
let manifest: string;
let n = 0;
const started: ChildProcess[] = [];

beforeAll(async () => {
  base = tempBase('loopx-verify-kill-');
  // ~9 MiB of regular files, a 5.5 MiB work.db: the worker lives for seconds, not milliseconds.
  await makeRoot(join(base, 'root'), { commitsAlpha: 4000 });
  await create(plan(join(base, 'root'), { outputDir: join(base, 'out'), backupId: 'b' }));
  archive = join(base, 'out', 'b.tar.gz');
  manifest = join(base, 'out', 'b.manifest.json');
}, 120_000);

afterAll(() => {
  for (const c of started) c.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

/** A process's start time (field 22 of /proc/<pid>/stat) and state; undefined once it is gone. */
function stat(pid: number): { state: string; start: string } | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return { state: fields[0]!, start: fields[19]! };
  } catch {
    return undefined;
  }
}

/** The owner worker among `pid`'s children, if it has started. */
function workerOf(pid: number): number | undefined {
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let kids: string[] = [];
    try {
      kids = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean);
    } catch {
      continue;
    }
    for (const kid of kids) {
      try {
        if (
          readFileSync(`/proc/${kid}/cmdline`, 'utf8')
            .split('\0')
            .some((arg) => WORKER_ENTRY.test(arg))
        )
          return Number(kid);
      } catch {
        // gone meanwhile
      }
    }
  }
  return undefined;
}

/** Poll `probe` until it answers (a latch on an observable state, not a sleep); fail after `ms`. */
async function until<T>(what: string, ms: number, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Start a verify, latch on its worker (and on `ready` when given), SIGKILL it, and wait for the worker to end. */
async function killVerifyAndWatchWorker(
  env: Record<string, string>,
  ready?: (destination: string) => boolean,
): Promise<void> {
  const destination = join(base, `d${++n}`);
  const verify = spawn(
    process.execPath,
    [
      ...CLI,
      'backup-state',
      'verify',
      '--archive',
      archive,
      '--manifest',
      manifest,
      '--destination',
      destination,
      '--execute',
      '--json',
    ],
    {
      cwd: REPO,
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME, ...env },
      stdio: 'ignore',
    },
  );
  started.push(verify);
  const exited = new Promise<NodeJS.Signals | null>((r) => verify.on('exit', (_code, signal) => r(signal)));
  const worker = await until('the owner worker to start', 60_000, () => workerOf(verify.pid!));
  const identity = stat(worker)!.start;
  if (ready) await until('the worker to reach the latch', 60_000, () => (ready(destination) ? true : undefined));
  expect(stat(worker)?.state).not.toBe('Z'); // alive when its parent is killed
  verify.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  // Gone, or a zombie waiting for its new parent to reap it — never still running. Same pid and start time: the same process.
  await until('the worker to end', 20_000, () => {
    const s = stat(worker);
    return s === undefined || s.start !== identity || s.state === 'Z' ? true : undefined;
  });
  expect(existsSync(join(destination, 'recovery-audit.json'))).toBe(false);
}

describe('a SIGKILLed verify takes its owner worker with it', () => {
  it('killed while the worker is fed databases during extraction: the worker exits (5 runs)', async () => {
    for (let i = 0; i < 5; i++) await killVerifyAndWatchWorker({});
  }, 300_000);

  it('killed after the worker was told the archive is complete: the worker exits instead of running on (5 runs)', async () => {
    for (let i = 0; i < 5; i++) {
      await killVerifyAndWatchWorker({ LOOPX_TEST_WORKER_HANG: '1' }, (d) =>
        existsSync(join(d, '.scratch', 'worker-hanging')),
      );
    }
  }, 300_000);

  it('killed while the worker is blocked in a synchronous step (its event loop held): the worker is ended all the same (3 runs)', async () => {
    for (let i = 0; i < 3; i++) {
      await killVerifyAndWatchWorker({ LOOPX_TEST_WORKER_HANG: 'blocked' }, (d) =>
        existsSync(join(d, '.scratch', 'worker-hanging')),
      );
    }
  }, 300_000);
});
