/** `loopx run show <id> [--cluster env:NAME]` */
import type { Command } from 'commander';
import { emit, runtime, withEngine, type GlobalOptions } from '../context.js';
import { optionalClusterAccess, withOptionalCluster, type OptionalClusterFlags } from './cluster.js';
import { printRun } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  withOptionalCluster(run.command('show <id>').description('show one run: status, turns, what it waits for')).action(
    async (id: string, o: OptionalClusterFlags) => {
      const g = globals();
      const cluster = optionalClusterAccess(o, 'run show');
      const { showClusterRun } = await runtime();
      const view = cluster
        ? await showClusterRun(cluster, id)
        : await withEngine(g, (engine) => engine.show(id), { readOnly: true });
      emit(g, view, printRun);
    },
  );
}
