/**
 * How the drill runs loopx: every step is the real CLI in its own child process (the same entry
 * and loader this process was started with), as the drill's own synthetic user — a private run
 * authority and state directory inside the drill's temporary directory, never the operator's.
 * A fault is injected into one child only, through that child's environment. The commands the
 * operator issues to recover go through `operator(user)`, which records each as it is issued:
 * the drill's human actions are those records, never a number the drill's script asserts.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { internal, type LoopxError } from '../../core/index.js';
import { DRILL_DEFECT_ENV } from './defects.js';

/** A command's JSON document, read field by field by the drill. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Doc = any;

export interface CliOutcome {
  readonly args: readonly string[];
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The `--json` document on stdout (a refusal's is `{ error }`), when there is one. */
  readonly doc: Doc;
  /** A refusal's stable code. */
  readonly code: string | undefined;
  /** stdout as printed (JSON lines for a streaming command). */
  readonly stdout: string;
  readonly elapsed_ms: number;
}

/** No child of the drill takes longer; one that does is killed and reported as failed. */
const CHILD_TIMEOUT_MS = 180_000;

export class DrillCli {
  /**
   * @param command node's arguments that start this CLI (`[...execArgv, entry]`)
   * @param stateHome the drill's private XDG_STATE_HOME
   */
  constructor(
    private readonly command: readonly string[],
    private readonly stateHome: string,
  ) {}

  /**
   * `loopx <args> --authority-dir <user> --json` as `user`; `fault` SIGKILLs the child at that
   * point; `home` makes it another host's process: its own HOME and XDG state, data and config.
   */
  run(user: string, args: readonly string[], options: { fault?: string; home?: string } = {}): Promise<CliOutcome> {
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_STATE_HOME: this.stateHome };
    if (options.home !== undefined)
      Object.assign(env, {
        HOME: options.home,
        XDG_STATE_HOME: join(options.home, 'state'),
        XDG_DATA_HOME: join(options.home, 'data'),
        XDG_CONFIG_HOME: join(options.home, 'config'),
      });
    delete env['LOOPX_REPOSITORY'];
    delete env['LOOPX_TEST_FAULT'];
    delete env[DRILL_DEFECT_ENV];
    delete env['LOOPX_HOME'];
    if (options.fault !== undefined) env['LOOPX_TEST_FAULT'] = options.fault;
    const full = [...args, '--authority-dir', user, '--json'];
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [...this.command, ...full], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.resume();
      const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_TIMEOUT_MS);
      child.on('error', reject);
      child.on('close', (status, signal) => {
        clearTimeout(timer);
        let doc: Doc;
        try {
          doc = stdout.trim() === '' ? undefined : JSON.parse(stdout);
        } catch {
          doc = undefined;
        }
        const code = typeof doc?.error?.code === 'string' ? (doc.error.code as string) : undefined;
        resolve({ args, status, signal, doc, code, stdout, elapsed_ms: performance.now() - started });
      });
    });
  }

  /** The operator `user`, whose every command is recorded as issued. */
  operator(user: string): Operator {
    const issued: string[] = [];
    return {
      user,
      issued,
      run: (args, options) => {
        issued.push(commandName(args));
        return this.run(user, args, options);
      },
    };
  }
}

/** An operator of the drill: each command it runs is one human action. */
export interface Operator {
  readonly user: string;
  /** Each command as issued, `loopx <command> <subcommand>` (no argument: nothing private). */
  readonly issued: readonly string[];
  run(args: readonly string[], options?: { fault?: string }): Promise<CliOutcome>;
}

/** `loopx recover plan` of `['recover', 'plan', '--from', …]`: the command and subcommand, before any option or argument. */
export const commandName = (args: readonly string[]): string => {
  const at = args.findIndex((a) => a.startsWith('-'));
  return ['loopx', ...args.slice(0, Math.min(at === -1 ? args.length : at, 2))].join(' ');
};

/** The drill could not run one of its own steps (its synthetic state, not the operator's, is affected). */
export const drillStepFailed = (step: string, why: string): LoopxError =>
  internal('recover_drill_step_failed', `The recovery drill could not run its step "${step}": ${why}.`, {
    nextAction: 'run the drill again with its temporary state kept for inspection: loopx recover drill --keep',
  });

/** A step that must succeed; anything else ends the drill with what happened. */
export function expectOk(o: CliOutcome): Doc {
  if (o.status !== 0)
    throw drillStepFailed(
      `loopx ${o.args.slice(0, 2).join(' ')}`,
      o.code ?? (o.signal ? `killed by ${o.signal}` : `exit ${o.status}`),
    );
  return o.doc;
}
