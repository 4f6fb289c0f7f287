/** `loopx init` — create the runtime root (0700) and its owners' stores. Idempotent. */
import type { Command } from 'commander';
import { emit, resolveRoot, runtime, withEngine, type GlobalOptions } from '../context.js';
import { parseStoreChoice } from '../parse.js';

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command('init')
    .description('create the runtime root and its owner stores (idempotent)')
    .option('--store <provider>', 'where Goal state lives: sqlite (the default, files in the root) or postgresql')
    .option(
      '--database-url <reference>',
      'with --store postgresql: env:NAME, the environment variable holding the URL (read at run time, never stored)',
    )
    .option('--pg-schema <name>', "with --store postgresql: this installation's schema (default: a new loopx_<hex>)")
    .action(async (o: { store?: string; databaseUrl?: string; pgSchema?: string }) => {
      const g = globals();
      // No --store: the root keeps whatever it has (SQLite for a new one).
      const choice = parseStoreChoice('--store', 'init', o.store, o, true);
      const provider = choice.provider;
      const root = resolveRoot(g);
      const { chooseStore, describeStore, initRoot, isServiceStore, keepsFilesInRoot } = await runtime();
      // A root taking a database service gets no SQLite stores for its Goal state, even before the choice is recorded.
      initRoot(root, { ownerStores: keepsFilesInRoot(provider) });
      // Reading the root id binds it to this directory in the run authority (a later copy owns nothing).
      await withEngine(g, async (engine) => void (await engine.rootId()));
      const store = await chooseStore(root, choice);
      emit(g, { initialized: true, store }, (d, out) =>
        out.hint(
          isServiceStore(d.store)
            ? `runtime root ready (owner-only), its Goal state in ${describeStore(d.store)}; next: loopx db migrate`
            : 'runtime root ready (owner-only); next: loopx goal create ID --title TITLE',
        ),
      );
    });
}
