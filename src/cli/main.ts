/**
 * The `loopx` command: thin. It parses flags, calls a library function, and prints human text or
 * one `--json` document. Exit codes (ARCHITECTURE.md): 0 done, 1 internal, 2 usage,
 * 3 rejected / fail-closed refusal, 4 conflict.
 *
 * Commands are loaded on use. The modules imported below are the command table: each one's
 * `register()` names its commands' paths, descriptions, arguments and options as commander needs
 * them for `--help` and parsing, and imports the runtime for its types only; an action loads the
 * runtime (`runtime()` in context.ts) when it runs, and the daemon's server when it serves. So
 * building the program — `--version`, `--help` of any command, a usage error — loads commander,
 * core and the CLI's own modules, never the runtime, a driver or an SDK (test/cli/cold-start.test.ts
 * counts them; `npm run bench -- cold-start` times them). What a help text or an option parser says
 * of the runtime — a default, the values a flag takes — is repeated in runtime-facts.ts, which
 * that test holds equal to the runtime. A command module must not import the runtime (or a
 * package it alone uses) as a value at its top. The rows themselves are imported here, not loaded
 * per command: `buildProgram()` stays synchronous and builds the whole tree, which the tests walk.
 */
import { Command, CommanderError } from 'commander';
import { EXIT_CODES, LOOPX_VERSION } from '../core/index.js';
import { reportError, stdoutOutput, takeOutcomeExit, type GlobalOptions } from './context.js';
import * as demo from './commands/demo.js';
import * as runAnswer from './commands/run-answer.js';
import * as runCancel from './commands/run-cancel.js';
import * as runEvents from './commands/run-events.js';
import * as runExport from './commands/run-export.js';
import * as runInspect from './commands/run-inspect.js';
import * as runList from './commands/run-list.js';
import * as runResolve from './commands/run-resolve.js';
import * as runResume from './commands/run-resume.js';
import * as runShow from './commands/run-show.js';
import * as runStart from './commands/run-start.js';
import * as runSuspend from './commands/run-suspend.js';
import * as runImport from './commands/run-import.js';
import * as authority from './commands/authority.js';
import * as init from './commands/init.js';
import * as goal from './commands/goal.js';
import * as todo from './commands/todo.js';
import * as workRun from './commands/work-run.js';
import * as devWebhookSink from './commands/dev-webhook-sink.js';
import * as backupState from './commands/backup-state.js';
import * as daemon from './commands/daemon.js';
import * as recover from './commands/recover.js';
import * as db from './commands/db.js';
import * as cluster from './commands/cluster.js';
import * as repo from './commands/repo.js';

export function buildProgram(): Command {
  const program = new Command('loopx')
    .description('Suspend, snapshot, verify and recover long-running agent work.')
    .version(LOOPX_VERSION)
    .option('--root <dir>', 'runtime root (default: $LOOPX_HOME, else ~/.loopx)')
    .option('--json', 'print one JSON document on stdout')
    .option('--authority-dir <dir>', 'per-user run authority (default: $XDG_STATE_HOME/loopx/run-authority)')
    .showHelpAfterError('(add --help for usage)')
    .enablePositionalOptions(false);
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();

  const run = program.command('run').description('start, drive, suspend, resume and export agent runs');
  for (const m of [
    runStart,
    runList,
    runShow,
    runEvents,
    runSuspend,
    runResume,
    runAnswer,
    runResolve,
    runCancel,
    runExport,
    runImport,
    runInspect,
  ])
    m.register(run, globals);
  authority.register(program, globals);
  for (const m of [init, goal, todo, workRun, devWebhookSink, backupState, repo, recover, daemon, db, cluster])
    m.register(program, globals);
  demo.register(program, globals);

  // Subcommands accept the global options in any position (`loopx run show ID --json`).
  const addGlobals = (cmd: Command) => {
    for (const sub of cmd.commands) {
      if (sub.commands.length > 0) addGlobals(sub);
      // A command with subcommands of its own that also acts (`backup-state`) takes them too.
      const acts = (sub as unknown as { _actionHandler: unknown })._actionHandler != null;
      if (sub.commands.length === 0 || acts) {
        sub
          .option('--root <dir>', 'runtime root (default: $LOOPX_HOME, else ~/.loopx)')
          .option('--json', 'print one JSON document on stdout')
          .option('--authority-dir <dir>', 'per-user run authority (default: $XDG_STATE_HOME/loopx/run-authority)');
        sub.hook('preAction', (_this, action) => {
          const o = action.opts<GlobalOptions>();
          if (o.root !== undefined) program.setOptionValue('root', o.root);
          if (o.json) program.setOptionValue('json', true);
          if (o.authorityDir !== undefined) program.setOptionValue('authorityDir', o.authorityDir);
          // A command on a cluster carries it into the commands its next actions name.
          if (o.cluster !== undefined) program.setOptionValue('cluster', o.cluster);
          if (o.clusterSchema !== undefined) program.setOptionValue('clusterSchema', o.clusterSchema);
          // A command on a repository carries it into the commands its next actions name.
          // (`backup-state verify --repo R`: the parent command parses its own --repo first.)
          const repoUrl = o.repo ?? action.parent?.opts<GlobalOptions>().repo;
          if (repoUrl !== undefined) program.setOptionValue('repo', repoUrl);
        });
      }
    }
  };
  addGlobals(program);

  const exitOverride = (cmd: Command) => {
    cmd.exitOverride();
    for (const sub of cmd.commands) exitOverride(sub);
  };
  exitOverride(program);
  return program;
}

let pipeWatched = false;

export async function main(argv: readonly string[]): Promise<number> {
  // A closed pipe (`loopx run events … | head`) ends output quietly, like other Unix tools. Once
  // per process: a process that runs main more than once (the tests' in-process CLI) adds one.
  if (!pipeWatched) {
    pipeWatched = true;
    process.stdout.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(EXIT_CODES.ok);
      throw err;
    });
  }
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return takeOutcomeExit() ?? EXIT_CODES.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help')
        return EXIT_CODES.ok;
      // commander has already written the human message (and the --help hint) to stderr.
      if (argv.includes('--json'))
        stdoutOutput.json({
          error: {
            code: 'usage_error',
            message: e.message.replace(/^error: /, ''),
            next_action: 'run the command with --help',
            details: { parser_code: e.code },
          },
        });
      return EXIT_CODES.usage;
    }
    const json = argv.includes('--json');
    return reportError(e, json, program.opts<GlobalOptions>());
  }
}
