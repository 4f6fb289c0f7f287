/**
 * What every command shares: resolving the runtime root, opening the engine, printing a result
 * as human text or one `--json` document, and turning errors into exit codes.
 *
 * A next action or printed hint names a command when it reads `what to do: loopx …` — the
 * command is the rest of the text. Such a command carries the invocation's `--root` and
 * `--authority-dir`, exactly as the operator typed them, so it acts on the same state when run as
 * printed (test/cli/next-actions.test.ts holds every such text in src/ to that rule).
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  exitCodeOf,
  isLoopxError,
  operatorPath,
  ROOT_IS_RECOVERY_WORKSPACE,
  refuseRecoveryWorkspaceRoot,
} from '../core/index.js';
import type * as RuntimeModule from '../runtime/index.js';
import type { Engine, GoalWriterGuard, LocalRunAuthority } from '../runtime/index.js';

/** The runtime's public API (src/runtime/index.ts), as `runtime()` gives it. */
export type Runtime = typeof RuntimeModule;
let loaded: Runtime | undefined;

/**
 * The runtime, loaded by the first action that needs it (src/cli/main.ts): a command module imports
 * it for its types only, so `--help`, `--version` and a usage error never load it.
 */
export const runtime = async (): Promise<Runtime> => (loaded ??= await import('../runtime/index.js'));
/** The runtime's read entry (runtime/read.ts): a command that only reads a run loads that much and no more. */
export const readRuntime = () => import('../runtime/read.js');

export interface GlobalOptions {
  root?: string;
  json?: boolean;
  authorityDir?: string;
  /** The cluster a command acts on (`--cluster env:NAME`, `--cluster-schema`): carried into the next actions it prints. */
  cluster?: string;
  clusterSchema?: string;
  /** The repository a command acts on (`--repo`): carried into the next actions it prints. */
  repo?: string;
}

/** What an invocation carries into a command it names in a next action or hint. */
type Carried = Pick<GlobalOptions, 'root' | 'authorityDir' | 'cluster' | 'clusterSchema' | 'repo'>;

/** `--root`, else `LOOPX_HOME`, else `~/.loopx`; never a path inside a recovery workspace. */
export const resolveRoot = (opts: GlobalOptions): string => {
  const root = resolve(opts.root ?? process.env.LOOPX_HOME ?? join(homedir(), '.loopx'));
  refuseRecoveryWorkspaceRoot(root);
  return root;
};

export const accessOf = (opts: GlobalOptions) => ({
  root: resolveRoot(opts),
  ...(opts.authorityDir !== undefined ? { authorityDir: resolve(opts.authorityDir) } : {}),
});

/** The user's run authority: --authority-dir, else $XDG_STATE_HOME/loopx/run-authority, else ~/.local/state/loopx/run-authority. */
export const withAuthority = async <T>(
  opts: GlobalOptions,
  fn: (authority: LocalRunAuthority) => Promise<T> | T,
  options: { create?: boolean } = {},
): Promise<T> => (await runtime()).withAuthority(accessOf(opts), fn, options);

/** A writer of the root's Goals: the run authority as its guard, the root proven not to be a byte copy (`root_is_copy`). */
export const withGoalWriter = async <T>(
  opts: GlobalOptions,
  fn: (guard: GoalWriterGuard) => Promise<T> | T,
): Promise<T> => (await runtime()).withGoalWriter(accessOf(opts), fn);

/**
 * The engine of the root, with the user's run authority (created on first use). `readOnly`
 * commands (list, show, events) create nothing: they refuse a root that does not exist
 * (`root_not_found`), open no authority, and read a root without `engine.db` as one without runs.
 */
export const withEngine = async <T>(
  opts: GlobalOptions,
  fn: (engine: Engine) => Promise<T> | T,
  options: { readOnly?: boolean } = {},
): Promise<T> => {
  if (options.readOnly) await existingRoot(opts);
  return (await runtime()).withRootEngine(accessOf(opts), fn, options);
};

/** An engine with the user's existing run authority and no root, for checking claims: it creates nothing. */
export const withClaimChecker = async <T>(opts: GlobalOptions, fn: (engine: Engine) => Promise<T> | T): Promise<T> =>
  (await runtime()).withVerifyingEngine(accessOf(opts), fn);

/**
 * The root of a command that reads or changes what a root already holds: `root_not_found` when it
 * is not an existing directory, so a mistyped --root is refused instead of reading as empty.
 */
export const existingRoot = async (opts: GlobalOptions): Promise<string> => {
  const root = resolveRoot(opts);
  (await runtime()).assertRuntimeRoot(root);
  return root;
};

/** The marker of a command in a next action or hint: the command is the rest of the text. */
export const COMMAND_MARK = ': loopx ';

// Characters a POSIX shell takes literally; anything else is single-quoted.
const shellWord = (s: string): string => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);

/** The commands that act on a repository: they take `--repo`. */
export const REPO_CARRYING =
  /^loopx (repo (init|ls|check|forget|prune|key (add|remove|rotate))|backup-state( verify)? )/;

/** The commands that act on a cluster's runs as well as a root's: they take `--cluster`. */
export const CLUSTER_CARRYING = /^loopx (run (show|events|resolve|cancel)|cluster) /;

/**
 * Refusals of the `--root` itself (not of something in it). `root_is_copy` is the runtime's: an
 * error can carry it only once an action has loaded the runtime through `runtime()`.
 */
const isRootRefusal = (code: string): boolean => code === ROOT_IS_RECOVERY_WORKSPACE || code === loaded?.ROOT_IS_COPY;

/**
 * `text` with the invocation's --root/--authority-dir appended to the command it names (if any and
 * not already given) — or, for a command that takes `--cluster` (CLUSTER_CARRYING) of an
 * invocation on a cluster, its --cluster/--cluster-schema instead of --root.
 */
export function carryGlobals(text: string, opts: Carried): string {
  const at = text.indexOf(COMMAND_MARK);
  if (at < 0) return text;
  const command = text.slice(at + 2);
  const has = (flag: string) => command.split(' ').includes(flag);
  let carried = '';
  if (opts.cluster !== undefined && CLUSTER_CARRYING.test(command)) {
    if (!has('--cluster')) carried += ` --cluster ${shellWord(opts.cluster)}`;
    if (opts.clusterSchema !== undefined && !has('--cluster-schema'))
      carried += ` --cluster-schema ${shellWord(opts.clusterSchema)}`;
  } else if (opts.root !== undefined && !has('--root')) carried += ` --root ${operatorPath(resolve(opts.root))}`;
  if (opts.repo !== undefined && REPO_CARRYING.test(command) && !has('--repo'))
    carried += ` --repo ${/^[a-z][a-z0-9+.-]*:/i.test(opts.repo) ? shellWord(opts.repo) : operatorPath(resolve(opts.repo))}`;
  // Paths as the operator types them from here (relative to the working directory): never an absolute path echoed back.
  if (opts.authorityDir !== undefined && !has('--authority-dir'))
    carried += ` --authority-dir ${operatorPath(resolve(opts.authorityDir))}`;
  return text + carried;
}

export interface Output {
  json(doc: unknown): void;
  line(text?: string): void;
  /** A line that suggests a command (`what to do: loopx …`): it carries the invocation's globals. */
  hint(text: string): void;
}

const outputFor = (opts: Carried): Output => ({
  json: (doc) => process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`),
  line: (text = '') => process.stdout.write(`${text}\n`),
  hint: (text) => process.stdout.write(`${carryGlobals(text, opts)}\n`),
});

export const stdoutOutput: Output = outputFor({});

/** Print `doc` as JSON with --json, else through `human`. */
export function emit<T>(opts: GlobalOptions, doc: T, human: (doc: T, out: Output) => void): void {
  if (opts.json) stdoutOutput.json(doc);
  else human(doc, outputFor(opts));
}

let outcomeExit: number | undefined;
/** A command that printed its document but did not succeed (a drill that missed a target) exits with `code`. */
export const exitAfterOutput = (code: number): void => {
  outcomeExit = code;
};
/** The exit code a command left with `exitAfterOutput`, once. */
export const takeOutcomeExit = (): number | undefined => {
  const code = outcomeExit;
  outcomeExit = undefined;
  return code;
};

/**
 * Report an error (human on stderr; with --json also one JSON document on stdout) and return the
 * exit code. `opts` are the invocation's globals, carried into a next action that names a command.
 */
export function reportError(e: unknown, json: boolean, opts: Carried = {}): number {
  if (isLoopxError(e)) {
    // A refusal of the root itself never points its next action back at that root.
    const carried = isRootRefusal(e.code) ? { ...opts, root: undefined } : opts;
    const nextAction = e.nextAction ? carryGlobals(e.nextAction, carried) : undefined;
    process.stderr.write(`loopx: ${e.message} [${e.code}]\n`);
    if (nextAction) process.stderr.write(`try: ${nextAction}\n`);
    if (json) stdoutOutput.json({ error: { ...e.toJSON(), ...(nextAction ? { next_action: nextAction } : {}) } });
  } else {
    // Internal errors come from below loopx (the OS, a driver): keep their gist, never their paths.
    const message = (e instanceof Error ? e.message : String(e)).replace(/(?:\/[^\s'",:]+)+/g, '<path>');
    process.stderr.write(`loopx: internal error: ${message}\n`);
    if (process.env.LOOPX_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    if (json) stdoutOutput.json({ error: { code: 'internal_error', message } });
  }
  return exitCodeOf(e);
}
