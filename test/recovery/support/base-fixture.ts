/**
 * One real base backup per test file — the producer's own, of a fixture root without special
 * entries or the large file — and a private work directory for the cases built from it, removed
 * after the file's tests. `stage` writes one damaged (or boundary) archive + manifest pair.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { create, plan } from '../../../src/backup/index.js';
import { makeRoot, tempBase } from '../../backup/support/fixtures.js';
import { buildCorpus, loadBase, writeCorpus, type BaseBackup, type BuildOptions } from './corpus.js';

export interface BaseFixture {
  /** The private work directory (valid inside tests). */
  readonly work: string;
  readonly base: BaseBackup;
  /** A fresh number for a case's names. */
  next(): number;
  /** Write the archive and manifest of `options` into a new case directory; `destination` does not exist yet. */
  stage(options: BuildOptions): ReturnType<typeof writeCorpus> & { readonly dir: string; readonly destination: string };
}

export function useBaseBackup(prefix: string, format: 'v0' | 'v1' = 'v0'): BaseFixture {
  let work = '';
  let base: BaseBackup | undefined;
  let seq = 0;
  beforeAll(async () => {
    work = tempBase(prefix);
    const root = join(work, 'root');
    await makeRoot(root, { specials: false });
    rmSync(join(root, 'big.bin'));
    const result = await create(plan(root, { outputDir: join(work, 'out'), backupId: 'base' }), { format });
    base = await loadBase(join(work, 'out', 'base.tar.gz'), result.manifest_doc);
  }, 60_000);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });
  return {
    get work() {
      return work;
    },
    get base() {
      return base!;
    },
    next: () => ++seq,
    stage(options) {
      const dir = join(work, `case-${++seq}`);
      return { dir, ...writeCorpus(dir, buildCorpus(base!, options)), destination: join(dir, 'dest') };
    },
  };
}
