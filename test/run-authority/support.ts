/**
 * Helpers for the run-authority suite: private temp bases, error codes as values, directory
 * snapshots (to prove nothing was read from or written into a substitute), and real child
 * processes driven by latches (a printed line), never by sleeps.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isLoopxError } from '../../src/core/errors.js';
import {
  openRunAuthority,
  type LifetimeSupersessionRequest,
  type LocalRunAuthority,
  type RunRecord,
} from '../../src/run-authority/index.js';

export const REPO = resolve(import.meta.dirname, '../..');
export const CHILD = join(REPO, 'test/run-authority/fixtures/authority-child.ts');
/** A uid that is not ours and not root (we run as root, so chown to it works). */
export const FOREIGN_UID = 12345;

const bases: string[] = [];
const opened: LocalRunAuthority[] = [];

/** A fresh 0700 directory under os.tmpdir() (itself 1777 root: a sticky ancestor that must be accepted). */
export function tempBase(): string {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-ra-'));
  bases.push(dir);
  return dir;
}

/** Open an authority and close it when the file's tests are done. */
export function open(dir: string, create = true, options: { importWaitMs?: number } = {}): LocalRunAuthority {
  const a = openRunAuthority({ dir, create, ...options });
  opened.push(a);
  return a;
}

export async function cleanup(): Promise<void> {
  for (const a of opened.splice(0)) {
    await Promise.race([a.close(), Promise.resolve()]).catch(() => undefined);
  }
  for (const b of bases.splice(0)) rmSync(b, { recursive: true, force: true });
}

/**
 * A synchronous call's result, refusing a promise: a promise's rejection is no throw, so reading
 * "returned" from it would pass a refusal check silently. Asynchronous calls go to asyncCodeOf /
 * asyncErrorOf.
 */
function callSync(fn: () => unknown): void {
  const out = fn();
  if (out instanceof Promise) {
    out.catch(() => undefined);
    throw new Error('codeOf/errorOf was given an asynchronous call: use asyncCodeOf/asyncErrorOf and await it');
  }
}

/** The LoopxError code a call throws, `undefined` when it returns, or `non-loopx:<errno or text>`. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    callSync(fn);
  } catch (e) {
    if (isLoopxError(e)) return e.code;
    const errno = (e as NodeJS.ErrnoException | undefined)?.code;
    return `non-loopx:${errno ?? String(e)}`;
  }
  return undefined;
}

/** The LoopxError code a promise rejects with, `undefined` when it resolves, or `non-loopx:<text>`. */
export async function asyncCodeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    return isLoopxError(e) ? e.code : `non-loopx:${String(e)}`;
  }
  return undefined;
}

/** The error a call throws (`undefined` when it returns), to match its code, kind and next action. */
export function errorOf(fn: () => unknown): unknown {
  try {
    callSync(fn);
  } catch (e) {
    return e;
  }
  return undefined;
}

/** The error a promise rejects with (`undefined` when it resolves), to match its code, kind and next action. */
export async function asyncErrorOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  return undefined;
}

/** A Goal lifetime id made of one repeated hex digit (`ginst_` + 32 lowercase hex). */
export const ginst = (digit: string): string => `ginst_${digit.repeat(32)}`;

/** A valid supersession of lifetime `ginst('a')` by `ginst('b')` in root `root_new`, with `overrides`. */
export function supersession(overrides: Partial<LifetimeSupersessionRequest> = {}): LifetimeSupersessionRequest {
  return {
    goal_instance_id: ginst('a'),
    goal_id: 'goal-a',
    successor_instance_id: ginst('b'),
    goal_lineage: 'lineage:goal-a.1',
    fence: 7,
    recovery_id: 'd'.repeat(64),
    successor_root: 'root_new',
    ...overrides,
  };
}

export const modeOf = (path: string): number => lstatSync(path).mode & 0o7777;

/** Every entry below `dir` with its type and exact bytes (files) or target (symlinks). */
export function snapshotTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out[r] = `link:${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[r] = `dir:${(st.mode & 0o7777).toString(8)}`;
        walk(p, r);
      } else out[r] = `file:${(st.mode & 0o7777).toString(8)}:${readFileSync(p).toString('hex')}`;
    }
  };
  walk(dir, '');
  return out;
}

export function record(runId: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    runId,
    state: 'ACTIVE',
    transitionGeneration: 1,
    ownerRoot: 'root-a',
    updatedAt: '2025-01-01T00:00:00.000Z',
    ...overrides,
  };
}

/** Let the event loop turn a few times (for "still pending" checks; no timers involved). */
export async function turns(n = 10): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

/** A child process that opens the authority, takes `runId`'s lease, prints "held" and waits. */
export interface Holder {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves at the "held" line (rejects if the child exits first). */
  readonly held: Promise<void>;
  /** Resolves with the signal once the child is gone. */
  readonly exited: Promise<NodeJS.Signals | null>;
}

export function spawnHolder(dir: string, runId: string): Holder {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'hold', dir, runId], {
    cwd: REPO,
    env: { ...process.env, LOOPX_TEST_FAULT: '' },
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<NodeJS.Signals | null>((res) => child.on('exit', (_code, signal) => res(signal)));
  const held = new Promise<void>((res, rej) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
      if (out.split('\n').includes('held')) res();
    });
    child.on('exit', (code, signal) =>
      rej(new Error(`holder exited (${code ?? signal}) before "held": ${out} ${stderr}`)),
    );
  });
  return { child, held, exited };
}

/** Run the child's `write` mode to completion (or to its self-SIGKILL at the fault point). */
export function childWrite(dir: string, rec: RunRecord, fault: string | undefined, faultSwitch: string | undefined) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.LOOPX_TEST_FAULT;
  if (faultSwitch !== undefined) env.LOOPX_TEST_FAULT = faultSwitch;
  const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, 'write', dir, JSON.stringify(rec), fault ?? ''], {
    cwd: REPO,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** A child process that is a competing importer stopped before its consume point (fixture mode `import`). */
export interface Importer {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves once the child holds the run's import lock and lease. */
  readonly held: Promise<void>;
  /** Let it go on: it writes `rec` (its consume — or, given the record unchanged, nothing new) and exits. */
  finish(): void;
  readonly exited: Promise<number | null>;
}

export function spawnImporter(dir: string, rec: RunRecord): Importer {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'import', dir, JSON.stringify(rec)], {
    cwd: REPO,
    env: { ...process.env, LOOPX_TEST_FAULT: '' },
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  const held = new Promise<void>((res, rej) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
      if (out.split('\n').includes('held')) res();
    });
    child.on('exit', (code, signal) =>
      rej(new Error(`importer exited (${code ?? signal}) before "held": ${out} ${stderr}`)),
    );
  });
  return { child, held, exited, finish: () => child.stdin.write('go\n') };
}

/** A child process that is a competing recovery (fixture mode `supersede`), stopped before its write. */
export interface Superseder {
  readonly child: ChildProcessWithoutNullStreams;
  /** Resolves once the child has opened the authority and waits for its go. */
  readonly ready: Promise<void>;
  /** Let it supersede now. */
  go(): void;
  /** Its one JSON answer (`{ replayed, record }` or `{ code }`), once it has exited 0. */
  readonly answer: Promise<Record<string, unknown>>;
}

export function spawnSuperseder(dir: string, request: LifetimeSupersessionRequest): Superseder {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'supersede', dir, JSON.stringify(request)], {
    cwd: REPO,
    env: { ...process.env, LOOPX_TEST_FAULT: '' },
  });
  let out = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += String(d)));
  const ready = new Promise<void>((res, rej) => {
    child.stdout.on('data', (d) => {
      out += String(d);
      if (out.split('\n').includes('ready')) res();
    });
    child.on('exit', (code, signal) =>
      rej(new Error(`superseder exited (${code ?? signal}) before "ready": ${out} ${stderr}`)),
    );
  });
  const answer = new Promise<Record<string, unknown>>((res, rej) =>
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code === 0 && line) res(JSON.parse(line) as Record<string, unknown>);
      else rej(new Error(`superseder exited ${code}: ${out} ${stderr}`));
    }),
  );
  return { child, ready, answer, go: () => child.stdin.write('go\n') };
}

/** A child process's read of a lifetime's supersession (fixture mode `lifetime`): `{ record }` or `{ code }`. */
export function childReadLifetime(
  dir: string,
  goalInstanceId: string,
): { readonly child: ChildProcessWithoutNullStreams; readonly answer: Promise<Record<string, unknown>> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'lifetime', dir, goalInstanceId], {
    cwd: REPO,
    env: { ...process.env, LOOPX_TEST_FAULT: '' },
  });
  let out = '';
  let stderr = '';
  child.stdout.on('data', (d) => (out += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  const answer = new Promise<Record<string, unknown>>((res, rej) =>
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code === 0 && line) res(JSON.parse(line) as Record<string, unknown>);
      else rej(new Error(`lifetime reader exited ${code}: ${out} ${stderr}`));
    }),
  );
  return { child, answer };
}
