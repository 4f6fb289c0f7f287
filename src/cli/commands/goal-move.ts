/** `loopx goal move-work <goal-id> --to <provider>`: a Goal's work moved to a store of another provider, previewed, then confirmed by digest. */
import type { Command } from 'commander';
import { emit, resolveRoot, runtime, type GlobalOptions } from '../context.js';
import { parseStoreChoice } from '../parse.js';

interface MoveOptions {
  readonly to?: string;
  readonly databaseUrl?: string;
  readonly pgSchema?: string;
  readonly confirm?: string;
}

export function registerMoveWork(goal: Command, globals: () => GlobalOptions): void {
  goal
    .command('move-work <goal-id>')
    .description(
      "move a Goal's work (Todos, history, receipts) to a store of another provider: sqlite or postgresql; the old store is fenced",
    )
    .requiredOption('--to <provider>', 'where the work goes: sqlite (the root’s files) or postgresql')
    .option('--database-url <reference>', 'with --to postgresql: env:NAME, the environment variable holding the URL')
    .option(
      '--pg-schema <name>',
      'with --to postgresql: the schema (migrated; required unless the root is on PostgreSQL)',
    )
    .option('--confirm <digest>', 'the plan digest the preview printed; without it, only the plan is shown')
    .action(async (goalId: string, o: MoveOptions) => {
      const g = globals();
      const choice = parseStoreChoice(
        '--to',
        'goal move-work',
        o.to,
        { databaseUrl: o.databaseUrl, pgSchema: o.pgSchema },
        false,
      );
      const request = {
        provider: choice.provider ?? '',
        ...(choice.databaseUrl !== undefined ? { database_url: choice.databaseUrl } : {}),
        ...(choice.schema !== undefined ? { schema: choice.schema } : {}),
      };
      const { planWorkMove, applyWorkMove } = await runtime();
      const root = resolveRoot(g);
      if (o.confirm === undefined) {
        emit(g, await planWorkMove(root, goalId, request), (p, out) => {
          out.line(`move Goal ${p.goal_id}'s work from ${p.source.where} to ${p.destination.where}`);
          out.line(
            `  ${p.todos} Todo(s); ${p.receipts} receipt(s) move with it (${p.source.cursor} of this store, the rest from ${p.lineages} earlier store(s))`,
          );
          out.line('  the old store is marked moved: every writer of it is refused from then on');
          const at =
            p.destination.schema === null
              ? ''
              : ` --database-url ${p.destination.database_url ?? ''} --pg-schema ${p.destination.schema}`;
          out.hint(`confirm: loopx goal move-work ${goalId} --to ${p.destination.provider}${at} --confirm ${p.digest}`);
        });
        return;
      }
      const access = g.authorityDir !== undefined ? { authorityDir: g.authorityDir } : {};
      emit(g, await applyWorkMove(root, goalId, request, o.confirm, access), (r, out) => {
        out.line(`Goal ${r.goal_id}'s work moved to ${r.destination.provider} (${r.destination.store_identity})`);
        out.line(`  ${r.receipts} receipt(s) read back there; the ${r.source.provider} store takes no more writes`);
        for (const f of r.receivers) out.line(`  Goal ${f.goal_id} at ${f.target}: fence ${f.result}`);
      });
    });
}
