/**
 * A real child process commits to a Goal's work through the work owner throughout a capture: the
 * snapshot is a committed state that passes integrity_check and that the work owner reads back
 * whole, and the archive reads back exactly what the manifest says. Latches on the writer's own
 * output prove it wrote right before and right after the snapshot was taken.
 */
import Database from 'better-sqlite3';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { create, plan, type BackupManifest, type RecoverySetCapture } from '../../src/backup/index.js';
import { executeVerify } from '../../src/recovery/index.js';
import { readHistoricalFile as readHistorical } from '../../src/owners/work/historical.js';
import { commitWork, makeRoot, readArchive, tempBase } from './support/fixtures.js';

const WRITER = resolve(import.meta.dirname, 'support/work-writer.ts');
const PRELOADED = 6_000;
/** alpha's history from makeRoot. */
const FIXTURE_COMMITS = 25;

class Writer {
  readonly child: ChildProcessWithoutNullStreams;
  count = 0;
  private waiters: Array<{ above: number; resolve: (n: number) => void }> = [];
  constructor(root: string, goalId: string, todoId: string) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WRITER, root, goalId, todoId]);
    let buffered = '';
    this.child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) if (/^\d+$/.test(line)) this.count = Number(line);
      this.waiters = this.waiters.filter((w) => (this.count > w.above ? (w.resolve(this.count), false) : true));
    });
  }
  /** Resolves once the writer has committed more rows than `above` (default: than now). */
  progressed(above = this.count): Promise<number> {
    return new Promise((res) => (this.count > above ? res(this.count) : this.waiters.push({ above, resolve: res })));
  }
}

let writer: Writer | undefined;
afterEach(() => {
  writer?.child.kill('SIGKILL');
  writer = undefined;
});

describe('a capture while a real process writes to a Goal work database', () => {
  it('snapshots a committed state that passes integrity_check; the archive matches the manifest exactly', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false, commitsAlpha: FIXTURE_COMMITS });
    // Enough history (about 2 KiB per commit) that the snapshot takes a while.
    await commitWork(root, 'alpha', PRELOADED, { todoId: 't1', text: (i) => `seed ${i} ${'s'.repeat(1024)}` });

    writer = new Writer(root, 'alpha', 't1');
    await writer.progressed(50);
    const w = writer;
    let before = 0;
    let after = 0;
    const result = await create(plan(root, { outputDir: join(base, 'out'), backupId: 'live' }), {
      format: 'v0',
      hooks: {
        beforeCopy: async (step) => {
          if (step.path === 'goals/alpha/work.db') before = await w.progressed();
        },
        afterCopy: async (step) => {
          if (step.path === 'goals/alpha/work.db') after = await w.progressed();
        },
      },
    });
    expect(w.child.exitCode).toBeNull(); // still writing when the capture ended
    expect(after).toBeGreaterThan(before);

    const manifest: BackupManifest = result.manifest_doc;
    const entries = await readArchive(join(base, 'out', 'live.tar.gz'));
    expect(manifest.members.map((m) => [m.path, m.type, m.size_bytes, m.sha256])).toEqual(
      entries
        .filter((e) => e.name !== 'manifest.json')
        .map((e) => [e.name.replace(/\/$/, ''), e.type, e.type === 'file' ? e.size : 0, e.sha256]),
    );
    const snap = manifest.execution.sqlite_snapshots.find((s) => s.source === 'goals/alpha/work.db')!;
    const entry = entries.find((e) => e.name === snap.archive_path)!;
    expect([entry.sha256, entry.size]).toEqual([snap.snapshot_sha256, snap.snapshot_size_bytes]);
    expect(snap.integrity).toBe('ok');

    const copy = join(base, 'work-snapshot.db');
    writeFileSync(copy, entry.data);
    const db = new Database(copy, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const rows =
      (db.prepare('SELECT count(*) AS n FROM commits').get() as { n: number }).n - FIXTURE_COMMITS - PRELOADED;
    expect(snap.committed_transactions).toBe(FIXTURE_COMMITS + PRELOADED + rows);
    // Every commit the writer had made before the snapshot started is in it, and none it made after the snapshot ended.
    expect(rows).toBeGreaterThanOrEqual(before);
    expect(rows).toBeLessThanOrEqual(after);
    // Commits are whole: the snapshot holds a prefix of the writer's sequence.
    const ops = db
      .prepare("SELECT operation_id FROM commits WHERE operation_id LIKE 'live-%' ORDER BY cursor")
      .all() as Array<{ operation_id: string }>;
    expect(ops.map((o) => Number(o.operation_id.slice('live-'.length)))).toEqual(
      Array.from({ length: rows }, (_, i) => i),
    );
    db.close();
    // The work owner reads the snapshot back as one consistent history whose head is its last commit.
    const work = readHistorical(copy, { goal_id: 'alpha' });
    expect([work.readable, work.history_count, work.findings]).toEqual([true, FIXTURE_COMMITS + PRELOADED + rows, []]);
    expect(work.todos.find((t) => t.todo_id === 't1')!.text).toBe(
      rows === 0 ? `seed ${FIXTURE_COMMITS + PRELOADED - 1} ${'s'.repeat(1024)}` : `${rows - 1}:${'e'.repeat(1024)}`,
    );
  });

  it('v1 online: the capture succeeds while the writer commits, the skew inventory names the moved work, and the archive verifies', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false, commitsAlpha: FIXTURE_COMMITS });
    await commitWork(root, 'alpha', 500, { todoId: 't1' });
    writer = new Writer(root, 'alpha', 't1');
    await writer.progressed(20);
    const w = writer;
    const p = plan(root, { outputDir: join(base, 'out'), backupId: 'online' });
    const alpha = p.goals.find((g) => g.goal_id === 'alpha')!;
    expect(alpha.route_status).toBe('included');
    let workId = '';
    const result = await create(p, {
      hooks: {
        // The writer commits again after alpha's work was captured: a movement the set-end re-check must see.
        afterComponent: async (id) => {
          if (id.startsWith('work-') && workId === '') {
            workId = id;
            await w.progressed();
          }
        },
      },
    });
    expect(w.child.exitCode).toBeNull();
    const m = result.manifest_doc;
    const work = m.components!.find((c) => c.owner_kind === 'work' && c.goal_id === 'alpha')!;
    expect(work.component_id).toBe(workId);
    expect(work.skew.moved_before_set_end).toBe(true);
    expect(work.skew.cursor_delta).toBeGreaterThan(0);
    expect(work.achieved_profile).toBe('online');
    const set = m.capture as RecoverySetCapture;
    expect(set.skew_inventory.find((x) => x.component_id === workId)).toEqual({
      component_id: workId,
      moved: true,
      cursor_delta: work.skew.cursor_delta,
    });
    expect(set.skew_inventory.length).toBe(m.components!.length);
    expect(set.downgrades).toEqual([]);
    w.child.kill('SIGKILL');

    const v = await executeVerify({
      archive: join(base, 'out', result.archive.name),
      manifest: join(base, 'out', result.manifest.name),
      destination: join(base, 'dest'),
    });
    const audited = v.audit.components.find((c) => c.component_id === workId)!;
    expect(audited.verification).toBe('verified');
    // The archived copy holds at least the exported prefix; its owner proved the prefix.
    const readback = audited.readback as { cursor: number; revision: string };
    expect(readback.cursor).toBeGreaterThanOrEqual(work.cursor!);
    if (readback.cursor === work.cursor) expect(readback.revision).toBe(work.source_revision);
    // alpha's closure moved: no point in time for it, so it is held and not offered for adoption; beta's did not move.
    expect(v.audit.findings.some((f) => f.code === 'capture_not_point_in_time' && f.severity === 'hold')).toBe(true);
    const betaScope = m.components!.find((c) => c.goal_id === 'beta')!.logical_scope;
    expect(v.audit.activation?.eligible_scopes ?? []).not.toContain(work.logical_scope);
    expect(v.audit.activation?.eligible_scopes).toEqual([betaScope]);
    expect(v.audit.phase).toBe('held');
  });
});
