/**
 * `loopx db migrate|status|rotate` — the root's PostgreSQL schema: its migrations (explicit; never
 * done implicitly), its installation as the database says it is, and the rotation a restored copy
 * needs before it admits a writer (preview, then `--confirm <digest>`).
 */
import type { Command } from 'commander';
import { dbStatus, migrateRootStore, planRotation, rotateStore, type RotationPlan, type RotationResult } from '../../runtime/index.js';
import { emit, existingRoot, type GlobalOptions, type Output } from '../context.js';

const ORIGINAL_TEXT: Record<RotationResult['original'], string> = {
  superseded: 'the original service now refuses every write',
  already_superseded: 'the original service was superseded already',
  not_named: 'no earlier database was named; revoke the old service’s credentials if it still runs',
  unreachable: 'the original service could not be reached; revoke its credentials if it still runs',
  not_the_original: 'the earlier reference reaches another installation; it was left alone',
};

function planText(d: RotationPlan, out: Output): void {
  out.line(`schema ${d.schema}: ${d.restore_detected ? `restored copy (${d.state}; changed: ${d.changed.join(', ') || 'none'})` : d.state}`);
  out.line(`  restore generation ${d.restore_generation} → ${d.next_restore_generation}; a new store identity is minted`);
  const leases = d.goals.reduce((n, g) => n + g.active_leases, 0);
  out.line(`  ${d.goals.length} Goal work store(s): ${leases} active lease(s) and ${d.goals.filter((g) => g.fenced).length} writer fence(s) are revoked`);
  if (d.previous_database_url !== null) out.line(`  the root is bound to ${d.database_url} (was ${d.previous_database_url}); the original is superseded if it answers`);
  out.line(`confirm: loopx db rotate --database-url ${d.database_url} --confirm ${d.digest}`);
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const db = program.command('db').description("the root's database, when its state lives in PostgreSQL");
  db.command('migrate')
    .description("apply the migrations this loopx knows to the root's PostgreSQL schema (a root on SQLite has none)")
    .action(async () => {
      const g = globals();
      const r = await migrateRootStore(existingRoot(g));
      emit(g, r, (d, out) => {
        if (d.schema === null) return out.line(`this root keeps its state in ${d.provider}: nothing to migrate`);
        out.line(`schema ${d.schema}: ${d.components.length === 0 ? 'no PostgreSQL component yet' : ''}`);
        for (const c of d.components) out.line(`  ${c.component}: ${c.from === c.to ? `at version ${c.to}` : `version ${c.from} → ${c.to}`}`);
      });
    });
  db.command('status')
    .description("the root's PostgreSQL installation: its store identity, restore generation and whether it is a restored copy")
    .action(async () => {
      const g = globals();
      emit(g, await dbStatus(existingRoot(g)), (d, out) => {
        if (d.installation === null) return out.line(`this root keeps its state in ${d.provider}: no database installation`);
        const i = d.installation;
        out.line(`schema ${d.schema}: ${i.state}${i.changed.length > 0 ? ` (changed since recorded: ${i.changed.join(', ')})` : ''}`);
        out.line(`  store identity ${i.store_identity}, restore generation ${i.restore_generation}`);
      });
    });
  db.command('rotate')
    .description('after a restore: mint a new store identity and restore generation, revoke every lease, and only then admit writers')
    .option('--database-url <env:NAME>', 'the database URL, by reference, to bind the root to (required for a restored copy)')
    .option('--confirm <digest>', 'the plan digest the preview printed; without it, only the plan is shown')
    .action(async (opts: { databaseUrl?: string; confirm?: string }) => {
      const g = globals();
      const root = existingRoot(g);
      if (opts.confirm === undefined) return emit(g, await planRotation(root, opts.databaseUrl), planText);
      emit(g, await rotateStore(root, opts.confirm, opts.databaseUrl), (d, out) => {
        out.line(`schema ${d.schema} rotated: store identity ${d.store_identity}, restore generation ${d.restore_generation}; writers are admitted`);
        const revoked = d.revoked.filter((r) => r.result !== 'none');
        out.line(`  ${revoked.length} Goal work store(s) had their leases and fences revoked`);
        out.line(`  ${ORIGINAL_TEXT[d.original]}`);
      });
    });
}
