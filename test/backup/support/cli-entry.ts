// Test entry: the real `loopx` program with `backup-state` registered the way main.ts registers a
// command (global --root/--json/--authority-dir on the leaf, exit codes from reportError). Once
// main.ts registers backup-state itself, this entry uses that registration unchanged.
import { CommanderError } from 'commander';
import * as backupState from '../../../src/cli/commands/backup-state.js';
import { reportError, type GlobalOptions } from '../../../src/cli/context.js';
import { buildProgram } from '../../../src/cli/main.js';

const program = buildProgram();
if (!program.commands.some((c) => c.name() === 'backup-state')) {
  backupState.register(program, () => program.opts<GlobalOptions>());
  const sub = program.commands.find((c) => c.name() === 'backup-state')!;
  sub
    .option('--root <dir>', 'runtime root (default: $LOOPX_HOME, else ~/.loopx)')
    .option('--json', 'print one JSON document on stdout')
    .option('--authority-dir <dir>', 'per-user run authority')
    .exitOverride();
  sub.hook('preAction', (_this, action) => {
    const o = action.opts<GlobalOptions>();
    if (o.root !== undefined) program.setOptionValue('root', o.root);
    if (o.json) program.setOptionValue('json', true);
  });
}

const argv = process.argv.slice(2);
try {
  await program.parseAsync(argv, { from: 'user' });
  process.exitCode = 0;
} catch (e) {
  if (e instanceof CommanderError) {
    process.exitCode = e.code === 'commander.helpDisplayed' || e.code === 'commander.help' ? 0 : 2;
  } else {
    process.exitCode = reportError(e, argv.includes('--json'));
  }
}
