/** `loopx run cancel <id> [--cluster env:NAME]` */
import type { Command } from 'commander';
import { emit, runtime, withEngine, type GlobalOptions } from '../context.js';
import { operatorKeys, optionalClusterAccess, withOptionalCluster, type OptionalClusterFlags } from './cluster.js';
import { printRun, runSummary } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  withOptionalCluster(run.command('cancel <id>').description('cancel an active or suspended run (terminal)')).action(
    async (id: string, o: OptionalClusterFlags) => {
      const g = globals();
      const cluster = optionalClusterAccess(o, 'run cancel');
      const { cancelClusterRun } = await runtime();
      // On a cluster the daemon driving it lets go at its next turn boundary first; no daemon takes it again.
      const view = cluster
        ? await cancelClusterRun(cluster, id, operatorKeys(g))
        : await withEngine(g, (engine) => engine.cancel(id));
      emit(g, await runSummary(view), (_, out) => printRun(view, out));
    },
  );
}
