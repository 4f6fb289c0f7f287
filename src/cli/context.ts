/**
 * What every command shares: resolving the runtime root, opening the engine, printing a result
 * as human text or one `--json` document, and turning errors into exit codes.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { exitCodeOf, isLoopxError } from '../core/errors.js';
import { refuseRecoveryWorkspaceRoot } from '../core/recovery-workspace.js';
import { withAuthority as withRootAuthority, withRootEngine, type Engine } from '../engine/index.js';
import type { LocalRunAuthority } from '../run-authority/index.js';

export interface GlobalOptions {
  root?: string;
  json?: boolean;
  authorityDir?: string;
}

/** `--root`, else `LOOPX_HOME`, else `~/.loopx`; never a path inside a recovery workspace. */
export const resolveRoot = (opts: GlobalOptions): string => {
  const root = resolve(opts.root ?? process.env.LOOPX_HOME ?? join(homedir(), '.loopx'));
  refuseRecoveryWorkspaceRoot(root);
  return root;
};

const accessOf = (opts: GlobalOptions) => ({ root: resolveRoot(opts), ...(opts.authorityDir !== undefined ? { authorityDir: resolve(opts.authorityDir) } : {}) });

/** The user's run authority: --authority-dir, else $XDG_STATE_HOME/loopx/run-authority, else ~/.local/state/loopx/run-authority. */
export const withAuthority = <T>(opts: GlobalOptions, fn: (authority: LocalRunAuthority) => Promise<T> | T, options: { create?: boolean } = {}): Promise<T> =>
  withRootAuthority(accessOf(opts), fn, options);

/**
 * The engine of the root, with the user's run authority (created on first use). `readOnly`
 * commands (list, show, events) open neither the authority nor — when it does not exist yet — the
 * root: they create nothing.
 */
export const withEngine = <T>(opts: GlobalOptions, fn: (engine: Engine) => Promise<T> | T, options: { readOnly?: boolean } = {}): Promise<T> =>
  withRootEngine(accessOf(opts), fn, options);

export interface Output {
  json(doc: unknown): void;
  line(text?: string): void;
}

export const stdoutOutput: Output = {
  json: (doc) => process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`),
  line: (text = '') => process.stdout.write(`${text}\n`),
};

/** Print `doc` as JSON with --json, else through `human`. */
export function emit<T>(opts: GlobalOptions, doc: T, human: (doc: T, out: Output) => void): void {
  if (opts.json) stdoutOutput.json(doc);
  else human(doc, stdoutOutput);
}

/** Report an error (human on stderr; with --json also one JSON document on stdout) and return the exit code. */
export function reportError(e: unknown, json: boolean): number {
  if (isLoopxError(e)) {
    process.stderr.write(`loopx: ${e.message} [${e.code}]\n`);
    if (e.nextAction) process.stderr.write(`try: ${e.nextAction}\n`);
    if (json) stdoutOutput.json({ error: e.toJSON() });
  } else {
    // Internal errors come from below loopx (the OS, a driver): keep their gist, never their paths.
    const message = (e instanceof Error ? e.message : String(e)).replace(/(?:\/[^\s'",:]+)+/g, '<path>');
    process.stderr.write(`loopx: internal error: ${message}\n`);
    if (process.env.LOOPX_DEBUG && e instanceof Error && e.stack) process.stderr.write(`${e.stack}\n`);
    if (json) stdoutOutput.json({ error: { code: 'internal_error', message } });
  }
  return exitCodeOf(e);
}
