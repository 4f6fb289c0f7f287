/**
 * `loopx db migrate|status|rotate` — the root's PostgreSQL schema (and those Goals chose for their
 * work alone): migrations (explicit; never done implicitly), each installation as the database says
 * it is, and the rotation a restored copy needs before it admits a writer (preview, then
 * `--confirm <digest>`; `--goal` for a Goal's work schema).
 */
import type { Command } from 'commander';
import { usageError } from '../../core/index.js';
import type { DbStatus, RotationPlan, RotationResult } from '../../runtime/index.js';
import { emit, existingRoot, runtime, type GlobalOptions, type Output } from '../context.js';

const ORIGINAL_TEXT: Record<RotationResult['original'], string> = {
  superseded: 'the original service now refuses every write',
  already_superseded: 'the original service was superseded already',
  not_named: 'no earlier database was named; revoke the old service’s credentials if it still runs',
  unreachable: 'the original service could not be reached; revoke its credentials if it still runs',
  not_the_original: 'the earlier reference reaches another installation; it was left alone',
};

function planText(d: RotationPlan, out: Output): void {
  out.line(
    `schema ${d.schema}: ${d.restore_detected ? `restored copy (${d.state}; changed: ${d.changed.join(', ') || 'none'})` : d.state}`,
  );
  out.line(
    `  restore generation ${d.restore_generation} → ${d.next_restore_generation}; a new store identity is minted`,
  );
  const leases = d.goals.reduce((n, g) => n + g.active_leases, 0);
  out.line(
    `  ${d.goals.length} Goal work store(s): ${leases} active lease(s) and ${d.goals.filter((g) => g.fenced).length} writer fence(s) are revoked`,
  );
  const bound =
    d.goal_id === null ? 'the root is' : `Goal ${d.goal_id}'s work (and this root's Goals in the schema) are`;
  if (d.previous_database_url !== null)
    out.line(
      `  ${bound} bound to ${d.database_url} (was ${d.previous_database_url}); the original is superseded if it answers`,
    );
  out.line(
    `  the copy holds ${d.copy_heads.map((h) => `Goal ${h.goal_id} up to work cursor ${h.cursor}`).join(', ') || 'no Goal work'}`,
  );
  out.line(`  ${LATER_TEXT[d.later_writes.original](d.later_writes.count ?? 0)}`);
  for (const w of d.later_writes.goals)
    out.line(
      `    Goal ${w.goal_id}: ${w.later} write(s) past the copy's cursor ${w.copy_cursor ?? 'none'} (the original is at ${w.original_cursor})`,
    );
  const abandon = (d.later_writes.count ?? 0) > 0 ? ` --abandon-later-writes ${d.later_writes.count}` : '';
  out.line(
    d.goal_id === null
      ? `confirm: loopx db rotate --database-url ${d.database_url} --confirm ${d.digest}${abandon}`
      : `confirm: loopx db rotate --goal ${d.goal_id} --database-url ${d.database_url} --confirm ${d.digest}${abandon}`,
  );
}

/** What the preview says of the original's writes after the copy (a rotation abandons them). */
const LATER_TEXT: Record<RotationPlan['later_writes']['original'], (n: number) => string> = {
  compared: (n) =>
    n === 0
      ? 'the original database has no work written after this copy was taken'
      : `the original database has ${n} work write(s) made after this copy was taken: rotating abandons them (to keep them, back up the original again and restore that copy)`,
  not_named: () => 'no original database was named: writes made there after this copy was taken cannot be counted',
  unreachable: () =>
    'the original database cannot be reached: writes made there after this copy was taken cannot be counted',
  not_the_original: () =>
    'the earlier reference reaches another installation: writes made on the original after this copy cannot be counted',
};

function installationText(schema: string, i: NonNullable<DbStatus['installation']>, out: Output): void {
  out.line(
    `schema ${schema}: ${i.state}${i.changed.length > 0 ? ` (changed since recorded: ${i.changed.join(', ')})` : ''}`,
  );
  out.line(`  store identity ${i.store_identity}, restore generation ${i.restore_generation}`);
}

/** What a rotation's raise of a receiver's fence means for deliveries from the superseded installation. */
const RECEIVER_TEXT: Record<RotationResult['receivers'][number]['result'], string> = {
  raised: 'refuses deliveries from the superseded installation from now on',
  unknown: 'did not answer; it refuses the superseded installation once this one delivers there',
  refused: 'already follows a later lifetime of this Goal',
  conflict: 'another lifetime of this Goal holds that fence there',
};

const BINDING_TEXT: Record<Exclude<NonNullable<DbStatus['binding']>, 'bound'>, string> = {
  unbound: 'this root records no installation yet; what to do: loopx db migrate',
  older:
    'this server holds an older incarnation than the root is bound to (the old primary after a failover, or a copy from before a rotation): its writers are refused',
  newer: 'this schema was rotated through another root since this root was bound: its writers are admitted',
  other: 'this schema was rotated elsewhere from the same generation as the root: its writers are refused',
};

const countOf = (text: string): number => {
  if (!/^(0|[1-9][0-9]{0,8})$/.test(text))
    throw usageError(
      'db_rotation_count_invalid',
      '--abandon-later-writes is a whole number of writes.',
      'pass the count the preview printed',
    );
  return Number(text);
};

export function register(program: Command, globals: () => GlobalOptions): void {
  const db = program.command('db').description("the root's database, when its state lives in PostgreSQL");
  db.command('migrate')
    .description("apply the migrations this loopx knows to the root's PostgreSQL schema (a root on SQLite has none)")
    .action(async () => {
      const g = globals();
      const { migrateRootStore } = await runtime();
      const r = await migrateRootStore(await existingRoot(g));
      emit(g, r, (d, out) => {
        if (d.schema === null) return out.line(`this root keeps its state in ${d.provider}: nothing to migrate`);
        out.line(`schema ${d.schema}: ${d.components.length === 0 ? 'no PostgreSQL component yet' : ''}`);
        for (const c of d.components)
          out.line(`  ${c.component}: ${c.from === c.to ? `at version ${c.to}` : `version ${c.from} → ${c.to}`}`);
      });
    });
  db.command('status')
    .description(
      "the PostgreSQL installations of the root and of Goals' work: store identity, restore generation and whether each is a restored copy",
    )
    .action(async () => {
      const g = globals();
      const { dbStatus } = await runtime();
      emit(g, await dbStatus(await existingRoot(g)), (d, out) => {
        if (d.installation === null) out.line(`this root keeps its state in ${d.provider}: no database installation`);
        else installationText(d.schema ?? '', d.installation, out);
        if (d.binding !== null && d.binding !== 'bound') out.line(`  ${BINDING_TEXT[d.binding]}`);
        for (const w of d.goal_work_schemas) {
          out.line(`work of Goal(s) ${w.goals.join(', ')} (${w.database_url}):`);
          if (w.installation === null) out.line(`  schema ${w.schema}: not readable (${w.refusal ?? 'unknown'})`);
          else installationText(w.schema, w.installation, out);
        }
      });
    });
  db.command('rotate')
    .description(
      'after a restore: mint a new store identity and restore generation, revoke every lease, and only then admit writers',
    )
    .option('--goal <id>', "rotate the schema this Goal's work lives in (its own, or the root's) instead of the root's")
    .option(
      '--database-url <env:NAME>',
      'the database URL, by reference, to bind the root (or the Goal) to (required for a restored copy)',
    )
    .option('--confirm <digest>', 'the plan digest the preview printed; without it, only the plan is shown')
    .option(
      '--abandon-later-writes <count>',
      'the number of work writes the original made after the copy, as the preview counted them: rotating abandons them',
    )
    .action(async (opts: { goal?: string; databaseUrl?: string; confirm?: string; abandonLaterWrites?: string }) => {
      const g = globals();
      const root = await existingRoot(g);
      const { planRotation, rotateStore } = await runtime();
      if (opts.confirm === undefined) return emit(g, await planRotation(root, opts.databaseUrl, opts.goal), planText);
      const abandon = opts.abandonLaterWrites === undefined ? undefined : countOf(opts.abandonLaterWrites);
      emit(
        g,
        await rotateStore(root, opts.confirm, opts.databaseUrl, opts.goal, abandon, {
          ...(g.authorityDir !== undefined ? { authorityDir: g.authorityDir } : {}),
        }),
        (d, out) => {
          out.line(
            `schema ${d.schema} rotated: store identity ${d.store_identity}, restore generation ${d.restore_generation}; writers are admitted`,
          );
          const revoked = d.revoked.filter((r) => r.result !== 'none');
          out.line(`  ${revoked.length} Goal work store(s) had their leases and fences revoked`);
          out.line(`  ${ORIGINAL_TEXT[d.original]}`);
          if (d.abandoned_later_writes !== null && d.abandoned_later_writes > 0)
            out.line(`  ${d.abandoned_later_writes} later work write(s) of the original were abandoned, as confirmed`);
          for (const r of d.receivers) out.line(`  Goal ${r.goal_id} at ${r.target}: ${RECEIVER_TEXT[r.result]}`);
        },
      );
    });
}
