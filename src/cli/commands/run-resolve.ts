/** `loopx run resolve <id> <call-id> (--committed RESULT | --absent | --abandon) [--cluster env:NAME]` */
import type { Command } from 'commander';
import { usageError } from '../../core/index.js';
import type { Resolution } from '../../runtime/index.js';
import { emit, runtime, withEngine, type GlobalOptions } from '../context.js';
import { operatorKeys, optionalClusterAccess, withOptionalCluster, type OptionalClusterFlags } from './cluster.js';
import { printRun, runSummary } from './run-view.js';

interface ResolveFlags extends OptionalClusterFlags {
  committed?: string;
  absent?: boolean;
  abandon?: boolean;
}

export function register(run: Command, globals: () => GlobalOptions): void {
  withOptionalCluster(
    run
      .command('resolve <id> <call-id>')
      .description('settle an uncertain mutating call under its original id (it is never re-run)')
      .option('--committed <result>', 'the operation took effect; RESULT (JSON) is its result')
      .option('--absent', 'the operation did not take effect')
      .option('--abandon', 'give up on knowing; the outcome stays unknown'),
  ).action(async (id: string, callId: string, o: ResolveFlags) => {
    const g = globals();
    const chosen = [o.committed !== undefined, !!o.absent, !!o.abandon].filter(Boolean).length;
    if (chosen !== 1)
      throw usageError(
        'resolution_required',
        'Give exactly one of --committed RESULT, --absent or --abandon.',
        'see its options: loopx run resolve --help',
      );
    const resolution: Resolution =
      o.committed !== undefined
        ? { kind: 'committed', resultJson: o.committed }
        : o.absent
          ? { kind: 'absent' }
          : { kind: 'abandon' };
    const cluster = optionalClusterAccess(o, 'run resolve');
    const { resolveClusterRun } = await runtime();
    // On a cluster the run is settled and handed back: one of its daemons continues it.
    const view = cluster
      ? await resolveClusterRun(cluster, id, callId, resolution, operatorKeys(g))
      : await withEngine(g, (engine) => engine.resolve(id, callId, resolution));
    emit(g, await runSummary(view), (_, out) => {
      printRun(view, out);
      if (cluster && view.status === 'active' && view.waiting_for === null)
        out.line("  handed back: the cluster's daemons continue it");
    });
  });
}
