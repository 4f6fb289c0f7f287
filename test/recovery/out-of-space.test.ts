/**
 * A destination that fills during `backup-state verify --execute` is reported as out of space —
 * `verify_capacity_free_space` with its one next action, the destination removed — and never as a
 * verdict on the backup (`verify_sqlite_integrity_failed`, `verify_worker_failed`, a held finding).
 * The destination is a real tmpfs of a few MiB mounted by this test; the preflight's free-space
 * check is bypassed (LOOPX_TEST_FREE_BYTES) so that the file system fills at every later stage:
 * during extraction, during the owner worker's private SQLite copies, and at audit publication.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, plan } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import { executeVerify, type VerifyProgress } from '../../src/recovery/index.js';
import { makeRoot, tempBase } from '../backup/support/fixtures.js';
import { loopx } from '../support/cli.js';
import { mountTmpfs, type Tmpfs } from '../support/tmpfs.js';

const MiB = 1024 * 1024;
let base: string;
let archive: string;
let manifest: string;
let fs: Tmpfs | undefined;
let baseline: { phase: string; codes: string[] };
let n = 0;

beforeAll(async () => {
  base = tempBase('loopx-verify-enospc-');
  // alpha's work.db is ~5.5 MiB: the worker's private copy of it needs that much room again.
  await makeRoot(join(base, 'root'), { commitsAlpha: 4000 });
  await create(plan(join(base, 'root'), { outputDir: join(base, 'out'), backupId: 'b' }));
  archive = join(base, 'out', 'b.tar.gz');
  manifest = join(base, 'out', 'b.manifest.json');
  const ok = await executeVerify({ archive, manifest, destination: join(base, 'baseline') });
  baseline = { phase: ok.summary.phase, codes: ok.summary.findings.map((f) => f.code).sort() };
  fs = mountTmpfs(join(base, 'mnt'), 24 * MiB);
  process.env.LOOPX_TEST_FREE_BYTES = String(1024 * 1024 * MiB);
}, 120_000);

afterAll(() => {
  delete process.env.LOOPX_TEST_FREE_BYTES;
  fs?.unmount();
  rmSync(base, { recursive: true, force: true });
});

type Outcome =
  | { ok: true; phase: string; codes: string[] }
  | { ok: false; code: string; kind: string; nextAction: string | undefined; step: VerifyProgress['step'] | undefined };

/** One verification into the tmpfs; `at` runs (synchronously) when the run reports that step. */
async function verifyInto(at?: { step: VerifyProgress['step']; run: () => void }): Promise<Outcome> {
  const destination = join(fs!.dir, `d${++n}`);
  let step: VerifyProgress['step'] | undefined;
  let fired = false;
  const onProgress = (p: VerifyProgress): void => {
    step = p.step;
    if (at && !fired && p.step === at.step) {
      fired = true;
      at.run();
    }
  };
  try {
    const o = await executeVerify({ archive, manifest, destination }, { onProgress });
    return { ok: true, phase: o.summary.phase, codes: o.summary.findings.map((f) => f.code).sort() };
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    return { ok: false, code: e.code, kind: e.kind, nextAction: e.nextAction, step };
  } finally {
    // Nothing half-published: a refused run removed its destination entirely.
    expect(readdirSync(fs!.dir).filter((f) => !f.startsWith('filler'))).toEqual(
      existsSync(destination) ? [`d${n}`] : [],
    );
  }
}

const clear = (): void => {
  for (const f of readdirSync(fs!.dir)) rmSync(join(fs!.dir, f), { recursive: true, force: true });
};

const capacity = {
  ok: false,
  code: 'verify_capacity_free_space',
  kind: 'rejected',
  nextAction: 'free space or choose a destination on a larger file system',
};

describe('verify into a destination that fills', () => {
  it('the tmpfs is mounted (under CI=true this must not be skipped)', () => {
    if (process.env.CI === 'true') expect(fs).toBeDefined();
  });

  it('whatever stage the space runs out at, the answer is the capacity refusal or the full audit — never a verdict on the backup', async (ctx) => {
    if (!fs) return ctx.skip();
    const failedAt = new Set<string>();
    // From too little for the extraction to enough for everything, in 1 MiB steps: the ones
    // between the extracted bytes (~8.6 MiB) and those plus alpha's copy (~14 MiB) fill in the worker.
    for (let free = 1; free <= 16; free++) {
      clear();
      fs.leave(free * MiB);
      const o = await verifyInto();
      if (o.ok) expect(o).toEqual({ ok: true, ...baseline });
      else {
        expect(o).toMatchObject(capacity);
        failedAt.add(o.step!);
      }
    }
    clear();
    // It filled during the extraction and during owner verification, and was reported the same way.
    expect([...failedAt].sort()).toEqual(['extract', 'owners']);
  }, 240_000);

  it('filling up at the start of extraction is the capacity refusal', async (ctx) => {
    if (!fs) return ctx.skip();
    clear();
    expect(await verifyInto({ step: 'extract', run: () => fs!.fill() })).toMatchObject({
      ...capacity,
      step: 'extract',
    });
  }, 60_000);

  it('filling up when the owner worker starts on its private copies is the capacity refusal, not verify_sqlite_integrity_failed', async (ctx) => {
    if (!fs) return ctx.skip();
    for (let i = 0; i < 3; i++) {
      clear();
      // The worker still has alpha's copy to make (or the audit is still to be written): either way, out of space.
      fs.leave(10 * MiB, 'filler-base');
      expect(await verifyInto({ step: 'owners', run: () => fs!.fill() })).toMatchObject(capacity);
    }
  }, 120_000);

  it('filling up just before the audit is published is the capacity refusal; nothing is left in the destination', async (ctx) => {
    if (!fs) return ctx.skip();
    clear();
    expect(await verifyInto({ step: 'audit', run: () => fs!.fill() })).toMatchObject({ ...capacity, step: 'audit' });
  }, 60_000);

  it('the CLI prints the capacity code with its one next action and exits 3', (ctx) => {
    if (!fs) return ctx.skip();
    clear();
    fs.leave(11 * MiB);
    const destination = join(fs.dir, 'cli');
    const r = loopx(
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
      {
        LOOPX_TEST_FREE_BYTES: String(1024 * MiB * 1024),
      },
    );
    expect(r.status, r.stderr).toBe(3);
    expect(r.json().error).toMatchObject({ code: 'verify_capacity_free_space', next_action: capacity.nextAction });
    expect(r.stderr).toContain('try: free space or choose a destination on a larger file system');
    expect(existsSync(destination)).toBe(false);
    clear();
  }, 60_000);
});
