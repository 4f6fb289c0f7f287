/**
 * The work owner's adoption: a recovered copy's history imported into a NEW store (new store
 * identity and incarnation) only when its rows seal to the audited digest, original receipts read
 * back exactly and replay as `already_applied`, and the recovered Todos become the first
 * transaction — leases retired (released, epochs kept) — with a receipt naming the
 * recovery. Repeats are readbacks; refusals write nothing.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/index.js';
import { openGoalWork, type WorkOwner } from '../../../src/owners/work/index.js';
import { exportWorkCopy } from '../../../src/owners/work/copy-export.js';

const GOAL = 'launch';
const RECOVERY = 'f'.repeat(64);
const dirs: string[] = [];
const fresh = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-work-adopt-'));
  dirs.push(d);
  mkdirSync(join(d, 'goals', GOAL), { recursive: true, mode: 0o700 });
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

let copyPath: string;
let headerLine: string;
let digest: string;
let sourceIdentity: string;

beforeAll(async () => {
  const src = fresh();
  const w = await openGoalWork({ root: src, goal_id: GOAL });
  try {
    await w.addTodo({ operation_id: 'add-1', title: 'Draft' });
    await w.addTodo({ operation_id: 'add-2', title: 'Review' });
    await w.addTodo({ operation_id: 'add-3', title: 'Publish' });
    await w.updateTodo({ operation_id: 'done-1', todo_id: 't1', status: 'done' });
    await w.setHandoffMode({ operation_id: 'mode', handoff_mode: 'hard_lease' });
    await w.acquireLease({
      operation_id: 'lease-3',
      todo_id: 't3',
      owner: 'session:s1',
      execution_key: 'exec:s1:2',
      ttl_ms: 600_000,
      expected_version: 0,
    });
    sourceIdentity = (await w.storeIdentity()).store_identity;
  } finally {
    w.close();
  }
  const copyDir = fresh();
  copyPath = join(copyDir, 'goals', GOAL, 'work.db');
  copyFileSync(join(src, 'goals', GOAL, 'work.db'), copyPath);
  const ex = exportWorkCopy(copyPath, GOAL, { start: new Date().toISOString(), end: new Date().toISOString() });
  headerLine = ex.lines[0];
  digest = ex.archive_sha256;
});

const request = () => ({
  recovery_id: RECOVERY,
  copy_path: copyPath,
  export_header_line: headerLine,
  content_digest: digest,
});

async function withDestination<T>(fn: (w: WorkOwner) => Promise<T>): Promise<T> {
  const w = await openGoalWork({ root: fresh(), goal_id: GOAL });
  try {
    return await fn(w);
  } finally {
    w.close();
  }
}

describe('work owner adoption', () => {
  it('imports the audited history into a new store and adopts the Todos as its first transaction', () =>
    withDestination(async (w) => {
      const own = await w.storeIdentity();
      expect(own.store_identity).not.toBe(sourceIdentity);
      const imported = await w.importLineage(request());
      expect(imported).toMatchObject({
        result: 'applied',
        lineage: { source_store_identity: sourceIdentity, source_head_cursor: 6, recovery_id: RECOVERY },
      });
      expect((await w.importLineage(request())).result).toBe('already');
      // The original receipt, exactly, and a repeat of the original request replays it.
      const original = await w.readReceipt('done-1');
      expect(original?.receipt).toMatchObject({ operation_id: 'done-1', store_identity: sourceIdentity, cursor: 4 });
      const adopted = await w.adoptRecoveredState({ operation_id: 'rcv-adopt', recovery_id: RECOVERY });
      expect(adopted.result).toBe('applied');
      expect(adopted.cursor).toBe(1);
      expect(adopted.receipt).toMatchObject({
        operation: 'adopt_recovered_state',
        store_identity: own.store_identity,
        recovery: { recovery_id: RECOVERY, source_store_identity: sourceIdentity, source_cursor: 6 },
      });
      const replay = await w.updateTodo({ operation_id: 'done-1', todo_id: 't1', status: 'done' });
      expect(replay.result).toBe('already_applied');
      expect(canonicalJson(replay.receipt)).toBe(canonicalJson(original!.receipt));
      const todos = await w.listTodos();
      expect(todos.map((t) => [t.todo_id, t.status, t.claimed_by])).toEqual([
        ['t1', 'done', null],
        ['t2', 'open', null],
        ['t3', 'open', null],
      ]);
      const t3 = todos[2]!;
      expect(t3.lease).toMatchObject({ status: 'released', lease_epoch: 1, owner: 'session:s1' });
      expect((await w.leaseStatus('t3')).authorization).toBe('released');
      expect((await w.view()).fence_epoch).toBeNull();
      expect((await w.adoptRecoveredState({ operation_id: 'rcv-adopt', recovery_id: RECOVERY })).result).toBe(
        'already_applied',
      );
      // A new lease starts one epoch on: the restored one never counts again.
      const lease = await w.acquireLease({
        operation_id: 'new-lease',
        todo_id: 't3',
        owner: 'session:s2',
        execution_key: 'exec:s2:1',
        ttl_ms: 600_000,
        expected_version: t3.lease!.version,
      });
      expect(lease.receipt.lease?.lease_epoch).toBe(2);
    }));

  it('refuses rows that do not seal to the audited digest, and a store that already has work, writing nothing', () =>
    withDestination(async (w) => {
      const bad = await w
        .importLineage({ ...request(), content_digest: '0'.repeat(64) })
        .catch((e: { code: string }) => e);
      expect((bad as { code: string }).code).toBe('work_lineage_mismatch');
      expect(await w.lineage()).toEqual([]);
      const missing = await w
        .adoptRecoveredState({ operation_id: 'rcv-adopt', recovery_id: RECOVERY })
        .catch((e: { code: string }) => e);
      expect((missing as { code: string }).code).toBe('work_lineage_missing');
      await w.addTodo({ operation_id: 'own', title: 'mine' });
      const late = await w.importLineage(request()).catch((e: { code: string }) => e);
      expect((late as { code: string }).code).toBe('work_lineage_store_not_empty');
      expect(await w.lineage()).toEqual([]);
    }));
});
