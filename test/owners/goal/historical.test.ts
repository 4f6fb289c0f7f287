/**
 * The goal owner's recovery read side: every goal.json of a copied root and each recorded
 * document's digest, read without a lock or a write; damage and links are typed findings.
 */
import { cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openFileGoalStore } from '../../../src/owners/goal/index.js';
import { readHistoricalCopy as readHistorical } from '../../../src/owners/goal/historical.js';
import { openFileRegistry } from '../../../src/owners/registry/index.js';
import { cleanup, snapshotTree, tempRoot } from '../registry/support.js';

afterAll(cleanup);

function copiedRoot() {
  const root = tempRoot();
  const goals = openFileGoalStore(root, { registry: openFileRegistry(root) });
  goals.create('beta', 'B');
  goals.create('alpha', 'A');
  goals.addDoc('alpha', 'vision.md', '# vision');
  goals.addDoc('alpha', 'plan.md', 'plan');
  mkdirSync(join(root, 'goals/workonly')); // another owner's Goal directory without goal.json
  writeFileSync(join(root, 'goals/README'), 'not a goal');
  const copy = join(tempRoot(), 'copy');
  cpSync(root, copy, { recursive: true });
  return { copy, goals };
}

const codes = (copy: string) => readHistorical(copy).findings.map((f) => `${f.code}@${f.subject}`);

describe('goal readHistorical', () => {
  it('reads every Goal of a copy and verifies its documents, writing nothing', () => {
    const { copy, goals } = copiedRoot();
    const before = snapshotTree(copy);
    const h = readHistorical(copy);
    expect(snapshotTree(copy)).toEqual(before);
    expect(h).toEqual({ ok: true, goals: [goals.get('alpha'), goals.get('beta')], findings: [] });
  });

  it('a copy without goals/ holds no Goals', () => {
    expect(readHistorical(tempRoot())).toEqual({ ok: true, goals: [], findings: [] });
  });

  it('a changed document is goal_doc_digest_mismatch and a removed one goal_doc_missing', () => {
    const { copy } = copiedRoot();
    writeFileSync(join(copy, 'goals/alpha/docs/vision.md'), '# VISION');
    rmSync(join(copy, 'goals/alpha/docs/plan.md'));
    expect(codes(copy)).toEqual([
      'goal_doc_missing@goals/alpha/docs/plan.md',
      'goal_doc_digest_mismatch@goals/alpha/docs/vision.md',
    ]);
  });

  it('an unknown goal.json schema is goal_unknown_schema; the other Goals are still read', () => {
    const { copy } = copiedRoot();
    writeFileSync(join(copy, 'goals/beta/goal.json'), JSON.stringify({ schema_version: 'loopx_goal_v9' }));
    const h = readHistorical(copy);
    expect(h.ok).toBe(false);
    expect(h.goals.map((g) => g.goal_id)).toEqual(['alpha']);
    expect(codes(copy)).toEqual(['goal_unknown_schema@goals/beta/goal.json']);
  });

  it('a goal.json copied under another alias is goal_id_mismatch', () => {
    const { copy } = copiedRoot();
    mkdirSync(join(copy, 'goals/gamma'));
    cpSync(join(copy, 'goals/beta/goal.json'), join(copy, 'goals/gamma/goal.json'));
    expect(codes(copy)).toEqual(['goal_id_mismatch@goals/gamma/goal.json']);
  });

  it('linked Goal and docs directories are goal_unreadable and are not followed', () => {
    const { copy } = copiedRoot();
    const outside = tempRoot();
    symlinkSync(join(copy, 'goals/beta'), join(copy, 'goals/delta'));
    cpSync(join(copy, 'goals/alpha/docs'), join(outside, 'docs'), { recursive: true });
    rmSync(join(copy, 'goals/alpha/docs'), { recursive: true });
    symlinkSync(join(outside, 'docs'), join(copy, 'goals/alpha/docs'));
    expect(codes(copy)).toEqual(['goal_unreadable@goals/alpha/docs', 'goal_unreadable@goals/delta']);
  });
});
