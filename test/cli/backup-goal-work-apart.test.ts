/**
 * `loopx backup-state` of a root with Goals whose work lives apart from the root's store
 * (`goal create --work-provider`): a root on SQLite with one Goal's work in a PostgreSQL schema,
 * and a root on PostgreSQL with one Goal's work in its own work.db and another's in a schema of its
 * own. Each Goal's work is captured where it lives — a schema other than the root's in one
 * REPEATABLE READ snapshot of its own, named in the manifest by reference (`capture.goal_services`,
 * never a URL) — and the set is verified with no database reachable; the workspace reads each
 * Goal's Todos back from what was captured.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import type { BackupManifest, ManifestComponent, RecoverySetCapture } from '../../src/backup/index.js';
import { loopxAsync, tempRoot } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';
import { expectSchemaValid } from '../support/pg-restore.js';

const schema = pgSchemas();
const PASSWORD = 'not-a-real-password-7d21';
const VAR = 'LOOPX_TEST_APART_URL';
const REF = `env:${VAR}`;
const env = { [VAR]: PG_URL.replace('postgres://postgres@', `postgres://postgres:${PASSWORD}@`) };

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function ok(args: readonly string[], e: Record<string, string> = env): Promise<Doc> {
  const r = await loopxAsync(args, e);
  expect(r.status, r.stderr).toBe(0);
  return r.json();
}

async function addTodos(at: readonly string[], goal: string, titles: readonly string[]): Promise<void> {
  for (const [i, title] of titles.entries())
    await ok(['todo', 'add', '--goal', goal, '--title', title, '--id', `t${i + 1}`, ...at]);
}

/** Backs up `root`, verifies it with no database variable set, and returns the manifest, the audit and the workspace. */
async function backupAndVerify(
  root: string,
): Promise<{ manifest: BackupManifest; audit: Doc; workspace: string; archiveText: string }> {
  const out = await ok(['backup-state', '--root', root, '--execute', '--json']);
  const dir = join(root, 'backups');
  const manifestPath = join(dir, out.manifest.name as string);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as BackupManifest;
  expectSchemaValid('state-backup-manifest-v1.schema.json', manifest);
  const archive = join(dir, out.archive.name as string);
  const workspace = join(dirname(tempRoot('loopx-apart-verify-')), 'verified');
  await ok(
    [
      'backup-state',
      'verify',
      '--archive',
      archive,
      '--manifest',
      manifestPath,
      '--destination',
      workspace,
      '--execute',
      '--json',
    ],
    {},
  );
  const audit = JSON.parse(readFileSync(join(workspace, 'recovery-audit.json'), 'utf8')) as Doc;
  return { manifest, audit, workspace, archiveText: gunzipSync(readFileSync(archive)).toString('latin1') };
}

const workOf = (m: BackupManifest, goal: string): ManifestComponent =>
  (m.components ?? []).find((c) => c.owner_kind === 'work' && c.goal_id === goal)!;
const auditWork = (a: Doc, goal: string): Doc =>
  a.components.find((c: Doc) => c.owner_kind === 'work' && c.readback?.work?.goal_id === goal);

describePg('backup-state of a root with Goals whose work lives apart from its store', () => {
  it('a root on SQLite: the Goal in PostgreSQL is read in a snapshot of its schema, named by reference, and verified offline', async () => {
    const root = tempRoot('loopx-apart-sqlite-');
    const name = schema();
    const at = ['--root', root, '--json'];
    await ok(['init', ...at]);
    const apart = [
      'goal',
      'create',
      'launch',
      '--title',
      'Ship it',
      '--work-provider',
      'postgresql',
      '--database-url',
      REF,
      '--pg-schema',
      name,
      ...at,
    ];
    expect((await loopxAsync(apart, env)).json().error.code).toBe('pg_schema_not_migrated');
    await ok(['db', 'migrate', ...at]);
    await ok(apart);
    await ok(['goal', 'create', 'notes', '--title', 'Local notes', ...at]);
    await addTodos(at, 'launch', ['Draft', 'Review', 'Publish']);
    await addTodos(at, 'notes', ['Jot']);

    const { manifest, audit, workspace, archiveText } = await backupAndVerify(root);
    const capture = manifest.capture as RecoverySetCapture;
    expect(capture.service).toBeUndefined();
    expect(capture.goal_services).toEqual([
      expect.objectContaining({
        goal_ids: ['launch'],
        provider: 'postgresql',
        schema: name,
        snapshot: expect.objectContaining({ isolation: 'repeatable_read' }),
      }),
    ]);
    expect(capture.goal_services![0]!.snapshot.released_at).not.toBeNull();
    const launch = workOf(manifest, 'launch');
    expect(launch).toMatchObject({
      provider: 'postgresql',
      archive_members: [],
      export_items: 'in_export',
      state: 'captured',
    });
    expect(launch.source_identity).toMatch(/^postgresql:/);
    expect(workOf(manifest, 'notes')).toMatchObject({
      archive_members: ['runtime-root/goals/notes/work.db'],
      export_items: 'from_copy',
    });
    expect(workOf(manifest, 'notes').provider).toBeUndefined();
    // References only: no URL, password or variable value in the manifest or the archive.
    for (const text of [JSON.stringify(manifest), archiveText]) {
      expect(text.includes(PASSWORD)).toBe(false);
      expect(text.includes('postgres://')).toBe(false);
    }

    expect(audit.findings.filter((f: Doc) => f.severity === 'error')).toEqual([]);
    expect(auditWork(audit, 'launch')).toMatchObject({
      verification: 'verified',
      readback: { work: { todo_count: 3, head_cursor: 3 } },
    });
    expect(auditWork(audit, 'notes')).toMatchObject({ verification: 'verified' });
    const shown = await ok(['backup-state', 'workspace', 'show', workspace, '--goal', 'launch', '--json'], {});
    expect(shown.todos.map((t: Doc) => t.title)).toEqual(['Draft', 'Review', 'Publish']);
    expect(
      (await ok(['backup-state', 'workspace', 'show', workspace, '--goal', 'notes', '--json'], {})).todos,
    ).toHaveLength(1);
  }, 180_000);

  it('a root on PostgreSQL: a Goal in its own work.db is captured from the file, one in a schema of its own from that schema', async () => {
    const root = tempRoot('loopx-apart-pg-');
    const name = schema();
    const own = schema();
    const at = ['--root', root, '--json'];
    await ok(['init', '--store', 'postgresql', '--database-url', REF, '--pg-schema', name, ...at]);
    await ok(['db', 'migrate', ...at]);
    await ok(['goal', 'create', 'local', '--title', 'Local work', '--work-provider', 'sqlite', ...at]);
    await ok(['goal', 'create', 'shared', '--title', 'In the root schema', ...at]);
    const apart = [
      'goal',
      'create',
      'apart',
      '--title',
      'Its own schema',
      '--work-provider',
      'postgresql',
      '--pg-schema',
      own,
      ...at,
    ];
    expect((await loopxAsync(apart, env)).json().error.code).toBe('pg_schema_not_migrated');
    await ok(['db', 'migrate', ...at]);
    await ok(apart);
    await addTodos(at, 'local', ['One']);
    await addTodos(at, 'shared', ['One', 'Two']);
    await addTodos(at, 'apart', ['One', 'Two', 'Three']);

    const { manifest, audit } = await backupAndVerify(root);
    const capture = manifest.capture as RecoverySetCapture;
    expect(capture.service).toMatchObject({ schema: name });
    expect(capture.goal_services).toEqual([expect.objectContaining({ goal_ids: ['apart'], schema: own })]);
    expect(workOf(manifest, 'local')).toMatchObject({ archive_members: ['runtime-root/goals/local/work.db'] });
    expect(workOf(manifest, 'shared')).toMatchObject({ provider: 'postgresql', archive_members: [] });
    expect(workOf(manifest, 'apart')).toMatchObject({ provider: 'postgresql', archive_members: [] });
    expect(audit.findings.filter((f: Doc) => f.severity === 'error')).toEqual([]);
    for (const [goal, todos] of [
      ['local', 1],
      ['shared', 2],
      ['apart', 3],
    ] as const)
      expect(auditWork(audit, goal), goal).toMatchObject({
        verification: 'verified',
        readback: { work: { todo_count: todos } },
      });
  }, 180_000);
});
