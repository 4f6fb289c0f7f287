/**
 * An output directory that fills during `backup-state --execute` is reported as out of space —
 * `backup_capacity_free_space` with its one next action — never as an untyped internal error or as
 * a verdict on a source (`backup_sqlite_snapshot_failed`); nothing is half-published: no archive or
 * manifest under its final name and no staging directory is left. The output directory is a real
 * tmpfs of a few MiB mounted by this test.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, plan, type CreateHooks } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import { loopxAsync } from '../support/cli.js';
import { mountTmpfs, type Tmpfs } from '../support/tmpfs.js';
import { makeRoot, tempBase } from './support/fixtures.js';

const MiB = 1024 * 1024;
const NEXT =
  "free space on the output directory's file system (or choose another output directory), then run the same backup-state command again";
let base: string;
let root: string;
let fs: Tmpfs | undefined;
let n = 0;

beforeAll(async () => {
  base = tempBase('loopx-backup-enospc-');
  root = join(base, 'root');
  // alpha's work.db (~5.5 MiB) is snapshotted into the staging directory before it is archived.
  await makeRoot(root, { commitsAlpha: 4000, specials: false });
  fs = mountTmpfs(join(base, 'mnt'), 16 * MiB);
}, 120_000);

afterAll(() => {
  fs?.unmount();
  rmSync(base, { recursive: true, force: true });
});

const clear = (): void => {
  for (const f of readdirSync(fs!.dir)) rmSync(join(fs!.dir, f), { recursive: true, force: true });
};

/** One create into the tmpfs; the answer, and what is left in the output directory besides the filler. */
async function createInto(hooks: CreateHooks = {}): Promise<{ outcome: string; left: string[] }> {
  const out = join(fs!.dir, `out${++n}`);
  let outcome: string;
  try {
    await create(plan(root, { outputDir: out, backupId: 'b' }), { hooks });
    outcome = 'published';
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    expect(e).toMatchObject({ kind: 'rejected', nextAction: NEXT });
    outcome = e.code;
  }
  let left: string[] = [];
  try {
    left = readdirSync(out);
  } catch {
    left = [];
  }
  return { outcome, left };
}

describe('backup-state create into an output directory that fills', () => {
  it('the tmpfs is mounted (under CI=true this must not be skipped)', async () => {
    if (process.env.CI === 'true') expect(fs).toBeDefined();
  });

  it('whatever it was writing when the space ran out, the answer is backup_capacity_free_space and nothing is published', async (ctx) => {
    if (!fs) return ctx.skip();
    const outcomes = new Set<string>();
    // 64 KiB: not even the configuration checkpoint and archive start; 1–5 MiB: the SQLite snapshot
    // of alpha's work.db; 7 MiB and up: everything fits.
    for (const free of [64 * 1024, 512 * 1024, 1 * MiB, 3 * MiB, 5 * MiB, 8 * MiB]) {
      clear();
      fs.leave(free);
      const r = await createInto();
      outcomes.add(r.outcome);
      if (r.outcome === 'published') expect(r.left.sort()).toEqual(['b.manifest.json', 'b.tar.gz']);
      else {
        expect(r.outcome).toBe('backup_capacity_free_space');
        expect(r.left).toEqual([]);
      }
    }
    expect([...outcomes].sort()).toEqual(['backup_capacity_free_space', 'published']);
  }, 120_000);

  it('filling up while the archive is finished and the manifest written is the same refusal', async (ctx) => {
    if (!fs) return ctx.skip();
    clear();
    let steps = 0;
    const total = plan(root, { outputDir: join(base, 'probe'), backupId: 'b' }).members.length;
    // After the last member is copied: the embedded manifest, the gzip end and the external manifest remain.
    const r = await createInto({ afterCopy: () => void (++steps >= total && fs!.fill()) });
    expect(r).toEqual({ outcome: 'backup_capacity_free_space', left: [] });
  }, 60_000);

  it('the CLI exits 3 with the capacity code and its next action, not internal_error', async (ctx) => {
    if (!fs) return ctx.skip();
    clear();
    fs.leave(3 * MiB);
    const out = join(fs.dir, 'cli');
    const r = await loopxAsync([
      'backup-state',
      '--execute',
      '--output-dir',
      out,
      '--backup-id',
      'b',
      '--root',
      root,
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(3);
    expect(r.json().error).toMatchObject({ code: 'backup_capacity_free_space', next_action: NEXT });
    expect(readdirSync(out)).toEqual([]);
    clear();
  }, 60_000);
});
