/** `loopx init` — create the runtime root (0700) and its owners' stores. Idempotent. */
import type { Command } from 'commander';
import { initRoot } from '../../runtime/index.js';
import { emit, resolveRoot, withEngine, type GlobalOptions } from '../context.js';

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command('init')
    .description('create the runtime root and its owner stores (idempotent)')
    .action(async () => {
      const g = globals();
      const root = resolveRoot(g);
      initRoot(root);
      // Reading the root id binds it to this directory in the run authority (a later copy owns nothing).
      await withEngine(g, (engine) => void engine.rootId);
      emit(g, { initialized: true }, (_, out) => out.hint('runtime root ready (owner-only); next: loopx goal create ID --title TITLE'));
    });
}
