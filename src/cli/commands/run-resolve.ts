/** `loopx run resolve <id> <call-id> (--committed RESULT | --absent | --abandon)` */
import type { Command } from 'commander';
import { usageError } from '../../core/index.js';
import type { Resolution } from '../../runtime/index.js';
import { emit, withEngine, type GlobalOptions } from '../context.js';
import { printRun, runSummary } from './run-view.js';

export function register(run: Command, globals: () => GlobalOptions): void {
  run
    .command('resolve <id> <call-id>')
    .description('settle an uncertain mutating call under its original id (it is never re-run)')
    .option('--committed <result>', 'the operation took effect; RESULT (JSON) is its result')
    .option('--absent', 'the operation did not take effect')
    .option('--abandon', 'give up on knowing; the outcome stays unknown')
    .action(async (id: string, callId: string, o: { committed?: string; absent?: boolean; abandon?: boolean }) => {
      const g = globals();
      const chosen = [o.committed !== undefined, !!o.absent, !!o.abandon].filter(Boolean).length;
      if (chosen !== 1) throw usageError('resolution_required', 'Give exactly one of --committed RESULT, --absent or --abandon.', 'see its options: loopx run resolve --help');
      const resolution: Resolution = o.committed !== undefined ? { kind: 'committed', resultJson: o.committed } : o.absent ? { kind: 'absent' } : { kind: 'abandon' };
      const view = await withEngine(g, (engine) => engine.resolve(id, callId, resolution));
      emit(g, runSummary(view), (_, out) => printRun(view, out));
    });
}
