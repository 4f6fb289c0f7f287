/**
 * §12 capacity bounds are enforced at create: exceeding one refuses publication with the code that
 * names the limit, and nothing is truncated (history in particular).
 */
import { existsSync, mkdirSync, readdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKUP_LIMITS, create, plan, type CreateHooks } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import { readHistoricalFile as readHistorical } from '../../src/owners/work/historical.js';
import { commitWork, createGoal, goalsOf, makeRoot, PROJECT, readArchive, tempBase } from './support/fixtures.js';

/**
 * `count` more registered Goals g000, g001, … through the goal owner (zero-padded: creation order
 * is goal_id order). Their work stores are not opened yet, so they add no SQLite files.
 */
function addGoals(root: string, count: number): void {
  const goals = goalsOf(root);
  for (let i = 0; i < count; i++)
    goals.create(`g${String(i).padStart(3, '0')}`, `Goal ${i}`, { projectId: PROJECT.project_id });
}

async function setup() {
  const base = tempBase();
  const root = join(base, 'root');
  await makeRoot(root, { specials: false });
  return { root, out: join(base, 'out') };
}

async function refusal(root: string, out: string, hooks: CreateHooks = {}) {
  try {
    await create(plan(root, { outputDir: out, backupId: 'b' }), { hooks });
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    // Nothing published and no staging left (early refusals do not even create the output directory).
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
    return { code: e.code, kind: e.kind, details: e.details };
  }
  throw new Error('create was expected to refuse');
}

describe('backup-state create enforces the §12 capacity bounds', () => {
  it('more than 20,000 committed transactions in one Goal refuses publication; exactly 20,000 is captured whole', async () => {
    const { root, out } = await setup();
    await createGoal(root, 'gamma');
    await commitWork(root, 'gamma', BACKUP_LIMITS.goalCommittedTransactions + 1);
    expect(await refusal(root, out)).toEqual({
      code: 'backup_capacity_goal_history',
      kind: 'rejected',
      details: { limit: 20_000, observed: 20_001, subject: 'gamma' },
    });

    const ok = await setup();
    await createGoal(ok.root, 'gamma');
    await commitWork(ok.root, 'gamma', BACKUP_LIMITS.goalCommittedTransactions);
    const r = await create(plan(ok.root, { outputDir: ok.out, backupId: 'b' }));
    const snap = r.manifest_doc.execution.sqlite_snapshots.find((s) => s.source === 'goals/gamma/work.db')!;
    expect([snap.goal_id, snap.committed_transactions]).toEqual(['gamma', 20_000]);
    // The whole history is in the archive: the work owner's recovery read sees every transaction.
    const entry = (await readArchive(join(ok.out, 'b.tar.gz'))).find((e) => e.name === snap.archive_path)!;
    const copy = join(ok.out, '..', 'gamma-work.db');
    writeFileSync(copy, entry.data);
    const history = readHistorical(copy, { goal_id: 'gamma' });
    expect([history.history_count, history.findings]).toEqual([20_000, []]);
  }, 60_000);

  it('a path deeper than 64 components refuses before anything is written', async () => {
    const { root, out } = await setup();
    // runtime-root + 64 directories = 65 components.
    mkdirSync(join(root, ...Array.from({ length: 64 }, (_, i) => `d${i}`)), { recursive: true });
    expect((await refusal(root, out)).code).toBe('backup_capacity_path_components');
  });

  it('an archive path longer than 1,024 characters refuses', async () => {
    const { root, out } = await setup();
    mkdirSync(join(root, ...Array.from({ length: 5 }, (_, i) => `${i}`.repeat(250))), { recursive: true });
    expect(await refusal(root, out)).toMatchObject({ code: 'backup_capacity_path_chars', details: { limit: 1024 } });
  });

  it('more than 128 Goals refuses', async () => {
    const { root, out } = await setup();
    addGoals(root, 127); // + alpha, beta, orphan
    expect(await refusal(root, out)).toMatchObject({
      code: 'backup_capacity_goals',
      details: { limit: 128, observed: 130 },
    });
  });

  it('regular-file bytes over 512 MiB refuse — also when a file grew after planning (refused before it is copied; nothing is truncated)', async () => {
    const big = await setup();
    writeFileSync(join(big.root, 'sparse.bin'), '');
    truncateSync(join(big.root, 'sparse.bin'), BACKUP_LIMITS.regularFileBytes + 1);
    expect((await refusal(big.root, big.out)).code).toBe('backup_capacity_regular_file_bytes');

    const grows = await setup();
    writeFileSync(join(grows.root, 'sparse.bin'), 'small when planned');
    const r = await refusal(grows.root, grows.out, {
      afterPlan: () => truncateSync(join(grows.root, 'sparse.bin'), BACKUP_LIMITS.regularFileBytes + 1),
    });
    expect(r.code).toBe('backup_capacity_regular_file_bytes');
  }, 60_000);

  it('a root just inside the bounds is captured with every member', async () => {
    const { root, out } = await setup();
    addGoals(root, 125); // 128 Goals
    const r = await create(plan(root, { outputDir: out, backupId: 'b' }));
    expect(r.manifest_doc.execution.member_count).toBe((await readArchive(join(out, 'b.tar.gz'))).length);
  });
});
