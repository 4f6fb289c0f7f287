/** `loopx db migrate` — bring a PostgreSQL-backed root's tables to the version this loopx knows (explicit; never done implicitly). */
import type { Command } from 'commander';
import { migrateRootStore } from '../../runtime/index.js';
import { emit, existingRoot, type GlobalOptions } from '../context.js';

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
}
