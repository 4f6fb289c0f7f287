/**
 * One Goal recovered from a backup of a root whose Goal state lives in PostgreSQL, through the real
 * CLI: the backup's components were read from the database (exports, no members), verified with no
 * database reachable, and the Goal is adopted from those exports — its history imported from the
 * retained-prefix export (verified whole and bound to the audited seal), its effects from the
 * journal's export under their original identities — into a new root on SQLite files and into one
 * on PostgreSQL. The work done after the capture is found at the receiver, never re-sent, and the
 * unfinished Todo continues in the new root.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { openPostgres } from '../../src/store/index.js';
import { loopxAsync } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';
import { okAsync, sourceWithBackup, type Doc, type Source } from './support/adopt.js';

describePg('loopx recover from a backup of a root on PostgreSQL', () => {
  const schemas = pgSchemas();
  let sink: WebhookSink;
  let s: Source;
  let sourceSchema: string;
  /** The source schema's committed work transactions and effects: a recovery never writes the source's database. */
  const sourceRows = async (): Promise<string> => {
    const db = openPostgres({ url: PG_URL, schema: sourceSchema, max: 1 });
    try {
      const [r] = await db.query<{ c: string; e: string }>(
        'SELECT (SELECT count(*) FROM work_commits)::text AS c, (SELECT count(*) FROM effects)::text AS e',
      );
      return `${r!.c}/${r!.e}`;
    } finally {
      await db.close();
    }
  };

  beforeAll(async () => {
    process.env.LX_ADOPT_SOURCE_PG = PG_URL; // the CLI children inherit it; the URL itself is never an argument
    sink = await startWebhookSink({ port: 0 });
    sourceSchema = schemas();
    s = await sourceWithBackup(sink, { store: { database_url: 'env:LX_ADOPT_SOURCE_PG', schema: sourceSchema } });
  }, 240_000);
  afterAll(async () => {
    await sink.close();
  });

  const adopt = async (
    name: string,
    store: readonly string[],
  ): Promise<{ destination: string; plan: Doc; status: Doc }> => {
    const destination = join(s.dir, name);
    const plan = await okAsync(s, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      destination,
      ...store,
      '--root',
      s.root,
    ]);
    const status = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest]);
    return { destination, plan, status };
  };

  const continues = async (destination: string) => {
    expect(
      (await okAsync(s, ['todo', 'list', '--goal', 'launch', '--root', destination])).todos.map((t: Doc) => t.status),
    ).toEqual(['done', 'blocked', 'open']);
    const r = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      s.agents.cont,
      '--sink',
      sink.deliveriesUrl,
      ...s.at(destination),
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json().status).toBe('completed');
    expect(
      (await okAsync(s, ['todo', 'list', '--goal', 'launch', '--root', destination])).todos.find(
        (t: Doc) => t.todo_id === 't3',
      ).status,
    ).toBe('done');
  };

  it('the workspace was read from the database: every Goal component is an export with no member', async () => {
    const ls = await okAsync(s, ['backup-state', 'workspace', 'ls', s.workspace]);
    expect(ls.goals).toEqual([expect.objectContaining({ goal_id: 'launch', work_readable: true })]);
  });

  it('adopts the Goal from the exports into a root on SQLite files, and continues its work there', async () => {
    const before = await sourceRows();
    const { destination, plan, status } = await adopt('on-files', []);
    expect(plan.preview.recovered_readable.join('\n')).toContain('Todos: 1 done, 1 blocked, 1 open');
    expect(status.state, JSON.stringify(status.holds)).toBe('complete');
    const byAction = new Map<string, Doc>(status.receipts.map((r: Doc) => [r.action, r]));
    const imported = byAction.get('work:import_inert')!.readback;
    expect(imported.imported_transactions).toBeGreaterThan(3);
    expect(imported.source_store_identity).toMatch(/^postgresql:/);
    expect(imported.store_identity).toMatch(/^sqlite:/);
    // The source's store choice (its own database) is not adopted: this root keeps its state in files.
    expect(byAction.get('config:rebind')!.readback.not_adopted).toEqual(['store']);
    expect(await okAsync(s, ['db', 'status', '--root', destination])).toMatchObject({
      provider: 'sqlite',
      installation: null,
    });
    const effects = byAction.get('effect:reconcile')!.readback;
    expect(effects.recovered_effects).toBeGreaterThan(0);
    // The delivery made after the capture is known at the receiver: recorded as committed, never sent again.
    expect(effects.committed_after_capture.length).toBeGreaterThan(0);
    await continues(destination);
    expect(await sourceRows()).toBe(before);
  }, 240_000);

  it('adopts the Goal from the exports into a root on PostgreSQL (from a backup of its own: one recovery continues a lifetime)', async () => {
    process.env.LX_ADOPT_DEST_PG = PG_URL;
    sourceSchema = schemas();
    s = await sourceWithBackup(sink, { store: { database_url: 'env:LX_ADOPT_SOURCE_PG', schema: sourceSchema } });
    const before = await sourceRows();
    const schema = schemas();
    const { destination, status } = await adopt('on-postgres', [
      '--database-url',
      'env:LX_ADOPT_DEST_PG',
      '--pg-schema',
      schema,
    ]);
    expect(status.state, JSON.stringify(status.holds)).toBe('complete');
    expect(status.receipts.find((r: Doc) => r.action === 'work:import_inert').readback.store_identity).toMatch(
      /^postgresql:/,
    );
    // The destination keeps its Goal state in the schema the plan named — never the source's.
    expect((await okAsync(s, ['db', 'status', '--root', destination])).schema).toBe(schema);
    await continues(destination);
    expect(await sourceRows()).toBe(before);
  }, 240_000);
});
