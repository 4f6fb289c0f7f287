/** `loopx run show <id> [--cluster env:NAME]` */
import type { Command } from 'commander';
import { accessOf, emit, readRuntime, resolveRoot, runtime, type GlobalOptions } from '../context.js';
import { optionalClusterAccess, withOptionalCluster, type OptionalClusterFlags } from './cluster.js';
import { printRun } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  withOptionalCluster(run.command('show <id>').description('show one run: status, turns, what it waits for')).action(
    async (id: string, o: OptionalClusterFlags) => {
      const g = globals();
      const cluster = optionalClusterAccess(o, 'run show');
      const view = cluster ? await (await runtime()).showClusterRun(cluster, id) : await showHere(g, id);
      emit(g, view, printRun);
    },
  );
}

/** The run in this root, through the runtime's read entry: the root must exist (`root_not_found`), nothing is created. */
async function showHere(g: GlobalOptions, id: string) {
  const read = await readRuntime();
  read.assertRuntimeRoot(resolveRoot(g));
  return read.withRunReader(accessOf(g), (reader) => reader.show(id));
}
