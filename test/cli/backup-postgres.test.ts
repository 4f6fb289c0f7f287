/**
 * `loopx backup-state` of a root whose Goal state lives in PostgreSQL, against the real server:
 * every Goal-scoped owner on the database (work, session, effect, quota, scheduler) is captured
 * through its owner as a logical, canonical, digest-bound export read in ONE REPEATABLE READ snapshot
 * of the schema, and the manifest names the service by reference (provider, schema, server
 * identity) — never its URL or password. The archive is then verified with no database reachable
 * (the URL's variable unset, or naming a closed port): the Goal's components are present and
 * verified, and a tampered export record is found. A set captured while writers commit is still one
 * snapshot: a write committed between two components is in neither, and each export agrees with itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, expect, it } from 'vitest';
import {
  create,
  plan,
  type BackupManifest,
  type ManifestComponent,
  type RecoverySetCapture,
} from '../../src/backup/index.js';
import { startWebhookSink } from '../../src/dev/index.js';
import { quota as quotaOwner } from '../../src/owners/index.js';
import { openPostgres } from '../../src/store/index.js';
import { buildCorpus, loadBase, replaceEntry, writeCorpus } from '../recovery/support/corpus.js';
import { REPO, loopxAsync, tempRoot } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';

const schema = pgSchemas();
const PASSWORD = 'not-a-real-password-51c9';
const SECRET_URL = PG_URL.replace('postgres://postgres@', `postgres://postgres:${PASSWORD}@`);
const VAR = 'LOOPX_TEST_BACKUP_DATABASE_URL';
/** Where nothing listens: a verifier that tried to connect would fail. */
const CLOSED_URL = `postgres://postgres:${PASSWORD}@127.0.0.1:1/test`;
const SERVED = ['work', 'session', 'effect', 'quota', 'scheduler'];

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function json(args: readonly string[], env: Record<string, string> = {}): Promise<Doc> {
  const r = await loopxAsync(args, env);
  expect(r.status, r.stderr).toBe(0);
  return r.json();
}

/** A PostgreSQL root with one Goal, three Todos and one completed work run; returns its root and schema. */
async function pgRoot(
  prefix: string,
  env: Record<string, string>,
  workRun: boolean,
): Promise<{ root: string; name: string }> {
  const root = tempRoot(prefix);
  const name = schema();
  const at = ['--root', root, '--json'];
  await json(['init', '--store', 'postgresql', '--database-url', `env:${VAR}`, '--pg-schema', name, ...at], env);
  await json(['db', 'migrate', ...at], env);
  await json(['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at], env);
  for (const [id, title] of [
    ['t1', 'Draft the outline'],
    ['t2', 'Review the draft'],
    ['t3', 'Publish'],
  ])
    await json(['todo', 'add', '--goal', 'launch', '--title', title!, '--id', id!, ...at], env);
  if (workRun) {
    const sink = await startWebhookSink({ port: 0 });
    const run = await loopxAsync(
      [
        'work',
        'run',
        '--goal',
        'launch',
        '--agent',
        join(REPO, 'examples/agents/goal-worker.json'),
        '--sink',
        sink.deliveriesUrl,
        ...at,
      ],
      env,
    ).finally(() => sink.close());
    expect(run.status, run.stderr).toBe(0);
  }
  return { root, name };
}

const schemas = new Map(
  readdirSync(join(REPO, 'docs/schemas')).map(
    (f) => [f, JSON.parse(readFileSync(join(REPO, 'docs/schemas', f), 'utf8')) as { $id: string }] as const,
  ),
);
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const s of schemas.values()) ajv.addSchema(s);

const componentsOf = (m: BackupManifest): ManifestComponent[] => [...(m.components ?? [])];
const served = (m: BackupManifest, owner: string): ManifestComponent =>
  componentsOf(m).find((c) => c.owner_kind === owner)!;
/** The JSON lines of an archive member (the tar is read whole: small fixtures). */
function exportLines(archive: Buffer, member: string): Doc[] {
  const tar = gunzipSync(archive);
  for (let off = 0; off + 512 <= tar.length;) {
    const name = tar
      .subarray(off, off + 100)
      .toString('utf8')
      .replace(/\0.*$/s, '');
    const size = parseInt(
      tar
        .subarray(off + 124, off + 136)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim() || '0',
      8,
    );
    if (name === member)
      return tar
        .subarray(off + 512, off + 512 + size)
        .toString('utf8')
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as Doc);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`no member ${member}`);
}

/** A fresh private directory. */
const tempDir = (prefix: string): string => dirname(tempRoot(prefix));

/** `backup-state verify --execute` with `env`; returns the private audit. */
async function verify(
  archive: string,
  manifest: string,
  destination: string,
  env: Record<string, string>,
): Promise<Doc> {
  await json(
    [
      'backup-state',
      'verify',
      '--archive',
      archive,
      '--manifest',
      manifest,
      '--destination',
      destination,
      '--execute',
      '--json',
    ],
    env,
  );
  return JSON.parse(readFileSync(join(destination, 'recovery-audit.json'), 'utf8')) as Doc;
}

describePg('backup-state of a root whose Goal state lives in PostgreSQL', () => {
  let fx: { root: string; name: string; archive: string; manifest: string; doc: BackupManifest; commits: number };

  beforeAll(async () => {
    const env = { [VAR]: SECRET_URL };
    const { root, name } = await pgRoot('loopx-pgbackup-', env, true);
    const out = await json(['backup-state', '--root', root, '--execute', '--backup-id', 'pg1', '--json'], env);
    const dir = join(root, 'backups');
    const manifest = join(dir, out.manifest.name as string);
    const db = openPostgres({ url: PG_URL, schema: name, max: 1 });
    try {
      const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM work_commits');
      fx = {
        root,
        name,
        archive: join(dir, out.archive.name as string),
        manifest,
        doc: JSON.parse(readFileSync(manifest, 'utf8')) as BackupManifest,
        commits: row!.n,
      };
    } finally {
      await db.close();
    }
  }, 180_000);

  it('captures every owner on the database from one snapshot, as exports with no members, and names the service by reference only', async () => {
    const m = fx.doc;
    expect(
      ajv.getSchema('https://loopx.dev/schemas/state-backup-manifest-v1.json')!(m),
      'the manifest is a valid v1 manifest',
    ).toBe(true);
    for (const owner of SERVED) {
      expect(served(m, owner), owner).toMatchObject({
        state: 'captured',
        provider: 'postgresql',
        archive_members: [],
        export_items: 'in_export',
      });
      expect(served(m, owner).skew.moved_during_capture, owner).toBe(false);
    }
    const work = served(m, 'work');
    expect(work.source_identity).toMatch(/^postgresql:[0-9a-f]{32}$/);
    expect(work.cursor, 'the head of the Goal’s work, every commit of it').toBe(fx.commits);
    expect(work.record_count).toBe(fx.commits);
    expect(served(m, 'effect').record_count, 'the webhook delivery and the Todo updates').toBeGreaterThan(0);
    expect(served(m, 'quota').record_count).toBeGreaterThan(0);
    // One export holds every record of its owner: header, items, seal; the work export replays to its head.
    const lines = exportLines(readFileSync(fx.archive), work.export_member!);
    expect(lines.filter((r) => r.record === 'transaction')).toHaveLength(fx.commits);
    expect(lines[0]).toMatchObject({
      schema_version: 'loopx_work_retained_prefix_v0',
      head_cursor: fx.commits,
      goal_id: 'launch',
    });

    const service = (m.capture as RecoverySetCapture).service!;
    const live = openPostgres({ url: PG_URL, schema: fx.name, max: 1 });
    try {
      const [row] = await live.query<{ store_identity: string; restore_generation: string }>(
        'SELECT store_identity, restore_generation FROM loopx_installation',
      );
      expect(service).toMatchObject({
        provider: 'postgresql',
        schema: fx.name,
        server: await live.serverIdentity(),
        installation: {
          store_identity: row!.store_identity,
          restore_generation: Number(row!.restore_generation),
          state: 'active',
        },
      });
      // The machine owners' state belongs to that installation (a restored copy would be another one).
      for (const owner of SERVED.filter((o) => o !== 'work'))
        expect(served(m, owner).source_identity, owner).toBe(row!.store_identity);
    } finally {
      await live.close();
    }
    expect(service.snapshot).toMatchObject({
      isolation: 'repeatable_read',
      read_only: true,
      released_at: expect.any(String),
    });
    // The service by reference: no URL, no password, in the manifest or anywhere in the archive.
    const manifestText = readFileSync(fx.manifest, 'utf8');
    const tar = gunzipSync(readFileSync(fx.archive));
    for (const secret of [PASSWORD, SECRET_URL, PG_URL, '127.0.0.1:5432']) {
      expect(manifestText.includes(secret), secret).toBe(false);
      expect(tar.includes(secret), secret).toBe(false);
      expect(readFileSync(fx.archive).includes(secret), secret).toBe(false);
    }
  });

  it('is verified with no database reachable: the Goal’s components are present and verified', async () => {
    const dest = join(tempDir('loopx-pgverify-'), 'verified');
    // The variable unset: the verifier has no way to any database.
    const audit = await verify(fx.archive, fx.manifest, dest, {});
    expect([audit.phase, audit.execution_authority_granted]).toEqual(['audited', false]);
    expect(audit.findings.filter((f: Doc) => f.severity === 'error')).toEqual([]);
    const byOwner = (owner: string): Doc => audit.components.find((c: Doc) => c.owner_kind === owner);
    for (const owner of ['registry', 'config', 'goal', ...SERVED])
      expect(byOwner(owner), owner).toMatchObject({ verification: 'verified' });
    const work = byOwner('work');
    expect(work.archive_members).toEqual([served(fx.doc, 'work').export_member]);
    expect(work.readback).toMatchObject({
      counts: { todos: 3, history: fx.commits },
      work: { goal_id: 'launch', head_cursor: fx.commits, todo_count: 3 },
    });
    expect(work.readback.work.todos_by_status).toEqual({ done: 1, blocked: 1, open: 1 });
    // Each export's items, counted by kind, are every record the producer counted.
    for (const owner of SERVED.filter((o) => o !== 'work')) {
      const counts = Object.values(byOwner(owner).readback.counts as Record<string, number>);
      expect(
        counts.reduce((a, b) => a + b, 0),
        owner,
      ).toBe(served(fx.doc, owner).record_count);
    }
    expect(byOwner('effect').readback.counts.effects).toBeGreaterThan(0);
    expect(JSON.stringify(audit).includes(PASSWORD)).toBe(false);

    // The workspace reads back what the database held, from the exports alone.
    const ls = await json(['backup-state', 'workspace', 'ls', dest, '--json']);
    expect(ls.goals).toEqual([
      expect.objectContaining({
        goal_id: 'launch',
        work_readable: true,
        committed_transactions: fx.commits,
        todos_by_status: { done: 1, blocked: 1, open: 1 },
      }),
    ]);
    expect(ls.sessions).toBe(1);
    const shown = await json(['backup-state', 'workspace', 'show', dest, '--goal', 'launch', '--json']);
    expect(shown.work).toMatchObject({
      readable: true,
      store_identity: served(fx.doc, 'work').source_identity,
      head_cursor: fx.commits,
    });
    expect(shown.todos.map((t: Doc) => [t.todo_id, t.status])).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'open'],
    ]);
    expect(shown.sessions).toHaveLength(1);
    expect(shown.effects.length).toBeGreaterThan(0);

    // The Goal is planned for adoption from those exports alone (test/recovery/adopt-from-postgres.test.ts applies one).
    const into = join(dirname(dest), 'adopted');
    const planned = await json([
      'recover',
      'plan',
      '--from',
      dest,
      '--goal',
      'launch',
      '--destination',
      into,
      '--json',
    ]);
    expect(planned.preview.recovered_readable.join('\n')).toContain('Todos: 1 done, 1 blocked, 1 open');
    expect(planned.preview.recovered_readable.join('\n')).toContain(`${fx.commits} committed transactions`);

    // The variable naming a closed port: the same verdicts (nothing was ever asked of a server).
    const again = await verify(fx.archive, fx.manifest, join(tempDir('loopx-pgverify-'), 'verified'), {
      [VAR]: CLOSED_URL,
    });
    const verdicts = (a: Doc) => a.components.map((c: Doc) => [c.component_id, c.verification, c.content_digest]);
    expect(verdicts(again)).toEqual(verdicts(audit));
    expect(again.findings).toEqual(audit.findings);
  }, 120_000);

  it('a tampered export record is found by the verifier, offline', async () => {
    const base = await loadBase(fx.archive, fx.doc);
    const tamper = (member: string, at: number, change: (r: Doc) => void) =>
      replaceEntry(base.entries, member, (e) => {
        const lines = e.data!.toString('utf8').split('\n');
        const record = JSON.parse(lines[at]!) as Doc;
        change(record);
        lines[at] = JSON.stringify(record);
        return { ...e, data: Buffer.from(lines.join('\n'), 'utf8') };
      });
    const dir = tempDir('loopx-pgtamper-');
    const cases = [
      {
        owner: 'work',
        entries: tamper(served(fx.doc, 'work').export_member!, 1, (r) => (r.request_digest = 'f'.repeat(64))),
        code: 'retained_prefix_chain_broken',
      },
      {
        owner: 'effect',
        entries: tamper(
          served(fx.doc, 'effect').export_member!,
          1,
          (r) => (r.value.value.target = 'https://elsewhere.invalid/'),
        ),
        code: 'owner_export_chain_broken',
      },
    ];
    for (const [i, c] of cases.entries()) {
      const pair = writeCorpus(dir, buildCorpus(base, { entries: c.entries }), `tampered-${i}`);
      const audit = await verify(pair.archive, pair.manifest, join(dir, `verified-${i}`), { [VAR]: CLOSED_URL });
      const component = audit.components.find((x: Doc) => x.owner_kind === c.owner);
      expect(component.verification, c.owner).toBe('invalid');
      expect(
        audit.findings.filter((f: Doc) => f.component === component.component_id).map((f: Doc) => f.code),
        c.owner,
      ).toContain(c.code);
      // Every other served component is still verified.
      for (const owner of SERVED.filter((o) => o !== c.owner))
        expect(audit.components.find((x: Doc) => x.owner_kind === owner).verification, owner).toBe('verified');
    }
  }, 120_000);
});

describePg('a PostgreSQL set captured while writers commit', () => {
  it('is one snapshot: a write committed between two components is in neither, and each export agrees with itself', async () => {
    const { root, name } = await pgRoot('loopx-pgsnap-', { [VAR]: PG_URL }, false);
    const goal = await json(['goal', 'show', 'launch', '--root', root, '--json'], { [VAR]: PG_URL });
    const db = openPostgres({ url: PG_URL, schema: name, max: 2 });
    const count = async (table: string) =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;
    const before = await count('work_commits');
    const saved = process.env[VAR];
    process.env[VAR] = PG_URL; // the capture thread reads the root's variable
    const captured: string[] = [];
    try {
      const p = plan(root, { outputDir: join(root, '..', 'out'), backupId: 'moving' });
      const result = await create(p, {
        hooks: {
          // After the first component (the Goal's work), a Todo and a debit commit: both before the quota
          // component is read — a capture per component would see the debit.
          afterComponent: async (id) => {
            captured.push(id);
            if (captured.length !== 1) return;
            const added = await loopxAsync(
              ['todo', 'add', '--goal', 'launch', '--title', 'Late', '--id', 't4', '--root', root, '--json'],
              { [VAR]: PG_URL },
            );
            expect(added.status, added.stderr).toBe(0);
            const ledger = quotaOwner.quotaLedger(quotaOwner.openPgQuotaPort(db));
            await ledger.spend({
              effect_id: 'late-debit',
              goal_id: 'launch',
              goal_instance_id: goal.goal_instance_id as string,
              amount: 1,
              unit: 'turn',
            });
          },
        },
      });
      const m = result.manifest_doc;
      expect(captured[0]).toBe(served(m, 'work').component_id);
      expect(captured.indexOf(served(m, 'quota').component_id)).toBeGreaterThan(0);
      expect(await count('spends'), 'the debit committed').toBe(1);
      expect(await count('work_commits')).toBeGreaterThan(before);
      // Neither write is in the set: every served component is of the snapshot taken before the first.
      expect(served(m, 'quota').record_count).toBe(0);
      expect(served(m, 'work').cursor).toBe(before);
      // Both moved before the set ended, and say so; none moved inside its own capture.
      expect(served(m, 'quota').skew).toMatchObject({ moved_during_capture: false, moved_before_set_end: true });
      expect(served(m, 'work').skew).toMatchObject({
        moved_during_capture: false,
        moved_before_set_end: true,
        cursor_delta: 1,
      });
      // The work export agrees with itself: as many transactions as its head cursor, and verified whole.
      const lines = exportLines(
        readFileSync(join(root, '..', 'out', result.archive.name)),
        served(m, 'work').export_member!,
      );
      expect(lines.filter((r) => r.record === 'transaction')).toHaveLength(lines[0]!.head_cursor as number);
      const audit = await verify(
        join(root, '..', 'out', result.archive.name),
        join(root, '..', 'out', result.manifest.name),
        join(root, '..', 'verified'),
        {},
      );
      for (const owner of SERVED)
        expect(audit.components.find((c: Doc) => c.owner_kind === owner).verification, owner).toBe('verified');

      // A row the owner's reader refuses is never left out of an export: the component is not captured (a hold).
      await db.query("UPDATE spends SET request_digest = $1 WHERE effect_id = 'late-debit'", ['0'.repeat(64)]);
      const again = await create(plan(root, { outputDir: join(root, '..', 'out'), backupId: 'damaged' }));
      expect(served(again.manifest_doc, 'quota').state).toBe('unreadable');
      expect((again.manifest_doc.capture as RecoverySetCapture).downgrades).toContainEqual(
        expect.objectContaining({ code: 'capture_component_unreadable', component_id: 'quota', severity: 'hold' }),
      );
    } finally {
      if (saved === undefined) delete process.env[VAR];
      else process.env[VAR] = saved;
      await db.close();
    }
  }, 180_000);
});
