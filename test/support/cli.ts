/**
 * Runs the real `loopx` CLI in a child process and captures its outcome: the built CLI as installed
 * (test/support/cli-build.ts keeps it up to date), or the sources via tsx with LOOPX_TEST_CLI=source.
 */
import { spawn, spawnSync } from 'node:child_process';
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
const baseEnv = (): NodeJS.ProcessEnv => ({ ...process.env, XDG_STATE_HOME: STATE_HOME, XDG_DATA_HOME: DATA_HOME, LOOPX_DEV_RECEIVER_PORT: '0' });
export const ENTRY = join(REPO, 'test/support/loopx-entry.ts');
/** Node's arguments before the CLI's own: `[...CLI, 'goal', 'list']`. */
const SOURCE_CLI: readonly string[] = ['--import', 'tsx', ENTRY];
export const CLI: readonly string[] = process.env['LOOPX_TEST_CLI'] === 'source' ? SOURCE_CLI : [join(REPO, 'bin/loopx.js')];
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

/** A fresh private runtime root. */
export function tempRoot(prefix = 'loopx-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o700);
  return join(dir, 'root');
}

/** The launch Goal's three Todos (t1 Draft the outline, t2 Review the draft, t3 Publish), added through the CLI at `at`. */
export function addLaunchTodos(at: readonly string[], env: Record<string, string> = {}): void {
  for (const [id, title] of [
    ['t1', 'Draft the outline'],
    ['t2', 'Review the draft'],
    ['t3', 'Publish'],
  ] as const) {
    const added = loopx(['todo', 'add', '--goal', 'launch', '--title', title, '--id', id, ...at], env);
    if (added.status !== 0) throw new Error(`todo add ${id}: ${added.stderr}`);
  }
}

/** A Goal's Todos as `[todo_id, status]`, in order, as `loopx todo list` reads them at `at`. */
export function todoStatuses(goal: string, at: readonly string[], env: Record<string, string> = {}): [string, string][] {
  const listed = loopx(['todo', 'list', '--goal', goal, ...at, '--json'], env).json() as { todos: { todo_id: string; status: string }[] };
  return listed.todos.map((t) => [t.todo_id, t.status]);
}

/** A path as a next action prints it: relative to the working directory (the children's and this process's), quoted when it must be. */
export const rel = (path: string): string => operatorPath(resolve(path));
