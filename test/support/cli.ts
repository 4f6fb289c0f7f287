/**
 * Runs the real `loopx` CLI and captures its outcome: the built CLI as installed
 * (test/support/cli-build.ts keeps it up to date), or the sources via tsx with LOOPX_TEST_CLI=source.
 *
 * `loopx` runs it in a child process. `loopxAsync` runs the same built `main` in this process when
 * a separate process is not the point — most of a CLI child's time is Node loading ~400 modules,
 * which one process pays once — and in a child otherwise: while another in-process call is in
 * flight (a race keeps its real processes), with a test-only switch (`LOOPX_TEST_*`: a fault may
 * end the process), for the long-running `daemon` and `dev webhook-sink`, for `recover drill` (it
 * starts this CLI again by its own entry), and everywhere with LOOPX_TEST_CLI=process; `loopxChild`
 * always runs a child. From the sources (`cliFromSources`, LOOPX_TEST_CLI=source) the in-process
 * CLI is the sources' `main`, the same modules as the test's own engine.
 */
import { spawn, spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { mkdtempSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { operatorPath } from '../../src/core/index.js';

export const REPO = resolve(import.meta.dirname, '../..');
/** Every CLI child of this test file shares one private run authority, never the user's real one. */
export const STATE_HOME = mkdtempSync(join(tmpdir(), 'loopx-state-'));
/** The user's data home of every test (in-process daemons too): "Back up now" publishes there by default, never into the developer's own. */
export const DATA_HOME = mkdtempSync(join(tmpdir(), 'loopx-data-'));
process.env.XDG_DATA_HOME = DATA_HOME;
// A free port for the dev receiver `loopx daemon` opens: tests run in parallel, and the fixed default would be shared.
const baseEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  XDG_STATE_HOME: STATE_HOME,
  XDG_DATA_HOME: DATA_HOME,
  LOOPX_DEV_RECEIVER_PORT: '0',
});
export const ENTRY = join(REPO, 'test/support/loopx-entry.ts');
/** Node's arguments before the CLI's own: `[...CLI, 'goal', 'list']`. */
const SOURCE_CLI: readonly string[] = ['--import', 'tsx', ENTRY];
const BUILT_CLI: readonly string[] = [join(REPO, 'bin/loopx.js')];
export const CLI: readonly string[] = process.env['LOOPX_TEST_CLI'] === 'source' ? SOURCE_CLI : BUILT_CLI;
let children: readonly string[] = CLI;
/**
 * For a test file whose in-process engine (a daemon's app, a resumed run) continues what a CLI child
 * started: its children run the same sources, since a run's plan identity hashes the bytes of its
 * tools' modules (built .js and source .ts differ).
 */
export function cliFromSources(): void {
  children = SOURCE_CLI;
}

export interface CliResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  json<T = any>(): T; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const wrap = (status: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string): CliResult => ({
  status,
  signal,
  stdout,
  stderr,
  json: () => JSON.parse(stdout),
});

export function loopx(args: readonly string[], env: Record<string, string> = {}): CliResult {
  const r = spawnSync(process.execPath, [...children, ...args], {
    cwd: REPO,
    env: { ...baseEnv(), ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return wrap(r.status, r.signal, r.stdout, r.stderr);
}

export function loopxAsync(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return inProcess(args, env) ? loopxHere(args, env) : loopxChild(args, env);
}

/** `loopx …args` in a child process, always: where another process is the point (a writer the test reads while it writes). */
export function loopxChild(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [...children, ...args], { cwd: REPO, env: { ...baseEnv(), ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (status, signal) => res(wrap(status, signal, stdout, stderr)));
  });
}

type Main = (argv: readonly string[]) => Promise<number>;
let builtMain: Promise<Main> | undefined;
let sourceMain: Promise<Main> | undefined;
/** The built modules, loaded by Node itself as a child loads them (vitest.config.ts keeps dist/ external to the test transform). */
const nativeImport = (url: string): Promise<{ main: Main }> => import(/* @vite-ignore */ url);
let hereBusy = false;
/** Commands that run until stopped, or start more of this CLI by its own entry (`process.argv[1]`). */
const CHILD_ONLY = (args: readonly string[]): boolean =>
  (args[0] === 'daemon' && args[1] !== 'login-url') ||
  args[0] === 'dev' ||
  (args[0] === 'recover' && args[1] === 'drill');

function inProcess(args: readonly string[], env: Record<string, string>): boolean {
  if (hereBusy || process.env['LOOPX_TEST_CLI'] === 'process') return false;
  if (
    Object.keys(env).some((k) => k.startsWith('LOOPX_TEST_')) ||
    Object.keys(process.env).some((k) => k.startsWith('LOOPX_TEST_') && k !== 'LOOPX_TEST_CLI')
  )
    return false;
  return !CHILD_ONLY(args);
}

/** Text of one `write` call, whatever it was given. */
const textOf = (chunk: unknown, encoding?: unknown): string =>
  typeof chunk === 'string'
    ? chunk
    : Buffer.from(chunk as Uint8Array).toString(typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');

/**
 * The built CLI's `main(args)` in this process, as a child would run it: its environment (this
 * process's, with the children's homes and `env` on top, restored after), no TTY, and what it
 * writes to stdout and stderr captured instead of printed.
 */
async function loopxHere(args: readonly string[], env: Record<string, string>): Promise<CliResult> {
  hereBusy = true;
  const main =
    children === SOURCE_CLI
      ? await (sourceMain ??= import('../../src/cli/main.js').then((m) => m.main))
      : await (builtMain ??= nativeImport(pathToFileURL(join(REPO, 'dist/src/cli/main.js')).href).then((m) => m.main));
  const set: Record<string, string> = {
    XDG_STATE_HOME: STATE_HOME,
    XDG_DATA_HOME: DATA_HOME,
    LOOPX_DEV_RECEIVER_PORT: '0',
    ...env,
  };
  const before = new Map(Object.keys(set).map((k) => [k, process.env[k]]));
  const out = { stdout: '', stderr: '' };
  const streams = [
    [process.stdout, 'stdout'],
    [process.stderr, 'stderr'],
  ] as const;
  const saved = streams.map(([s]) => ({ write: s.write, tty: Object.getOwnPropertyDescriptor(s, 'isTTY') }));
  Object.assign(process.env, set);
  for (const [stream, name] of streams) {
    Object.defineProperty(stream, 'isTTY', { value: false, configurable: true, writable: true });
    stream.write = ((chunk: unknown, encoding?: unknown, cb?: unknown) => {
      out[name] += textOf(chunk, encoding);
      const done = typeof encoding === 'function' ? encoding : cb;
      if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
      return true;
    }) as typeof stream.write;
  }
  let status: number;
  try {
    status = await main(args);
  } catch (e) {
    out.stderr += `${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`;
    status = 1;
  } finally {
    streams.forEach(([stream], i) => {
      stream.write = saved[i]!.write;
      if (saved[i]!.tty) Object.defineProperty(stream, 'isTTY', saved[i]!.tty!);
      else delete (stream as { isTTY?: boolean }).isTTY;
    });
    for (const [k, v] of before) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    hereBusy = false;
  }
  return wrap(status, null, out.stdout, out.stderr);
}

/** A fresh private runtime root. */
export function tempRoot(prefix = 'loopx-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o700);
  return join(dir, 'root');
}

/** The launch Goal's three Todos (t1 Draft the outline, t2 Review the draft, t3 Publish), added through the CLI at `at`. */
export async function addLaunchTodos(at: readonly string[], env: Record<string, string> = {}): Promise<void> {
  for (const [id, title] of [
    ['t1', 'Draft the outline'],
    ['t2', 'Review the draft'],
    ['t3', 'Publish'],
  ] as const) {
    const added = await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--id', id, ...at], env);
    if (added.status !== 0) throw new Error(`todo add ${id}: ${added.stderr}`);
  }
}

/** A Goal's Todos as `[todo_id, status]`, in order, as `loopx todo list` reads them at `at`. */
export async function todoStatuses(
  goal: string,
  at: readonly string[],
  env: Record<string, string> = {},
): Promise<[string, string][]> {
  const listed = (await loopxAsync(['todo', 'list', '--goal', goal, ...at, '--json'], env)).json() as {
    todos: { todo_id: string; status: string }[];
  };
  return listed.todos.map((t) => [t.todo_id, t.status]);
}

/** A path as a next action prints it: relative to the working directory (the children's and this process's), quoted when it must be. */
export const rel = (path: string): string => operatorPath(resolve(path));
