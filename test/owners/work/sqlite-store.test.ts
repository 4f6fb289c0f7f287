/**
 * The SQLite work store specifically: one database per Goal under the runtime root, fail-closed
 * opening (foreign incarnation, unknown user_version, foreign database, a history gap), receipts
 * across a real process restart, the recovery read side on a copy, and the §12 capacity.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/core/digest.js';
import { openSqlite } from '../../../src/store/index.js';
import {
  openGoalWork,
  openWork,
  verifyRetainedPrefix,
  MAX_RETAINED_TRANSACTIONS,
  WORK_DB_VERSION,
} from '../../../src/owners/work/index.js';
import { readHistoricalFile as readHistorical } from '../../../src/owners/work/historical.js';
import { GOAL, errorOf, manualClock, owner, rejectionOf, sqliteHarness, tempDir } from './support.js';

const REPO = resolve(import.meta.dirname, '../../..');

/** Raw SQL against a work database (test-only damage). */
const damage = (path: string, sql: string): void => {
  const db = openSqlite(path);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
};

/** An online snapshot through the SQLite backup API, as the backup producer takes it. */
const snapshot = async (path: string, dest: string): Promise<void> => {
  const db = openSqlite(path);
  try {
    await db.backup(dest);
  } finally {
    db.close();
  }
};

const populated = async () => {
  const h = sqliteHarness();
  const w = await owner(h);
  await w.setHandoffMode({ operation_id: 'mode', handoff_mode: 'hard_lease' });
  await w.addTodo({ operation_id: 'a1', title: 'First' });
  await w.addTodo({ operation_id: 'a2', title: 'Second' });
  await w.acquireLease({
    operation_id: 'l1',
    todo_id: 't1',
    owner: 'agent',
    execution_key: 'k',
    ttl_ms: 60_000,
    expected_version: 0,
  });
  await w.engageFence({ operation_id: 'f1' });
  return { h, w };
};

describe('sqlite work store: layout and fail-closed opening', () => {
  it('a Goal’s work lives in goals/<goal_id>/work.db, owner-only; a missing Goal directory is goal_not_found', async () => {
    const root = tempDir();
    expect((await rejectionOf(() => openGoalWork({ root, goal_id: GOAL }))).code).toBe('goal_not_found');
    mkdirSync(join(root, 'goals', GOAL), { recursive: true, mode: 0o700 });
    const w = await openGoalWork({ root, goal_id: GOAL });
    await w.addTodo({ operation_id: 'a', title: 'T' });
    expect((await w.storeIdentity()).store_identity).toMatch(/^sqlite:[0-9a-f]{32}$/);
    w.close();
    const path = join(root, 'goals', GOAL, 'work.db');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect((await rejectionOf(() => openGoalWork({ root, goal_id: 'bad/../id' }))).code).toBe('goal_id_invalid');
  });

  it('a foreign incarnation refuses: metadata that does not match the head’s revisions', async () => {
    const { h, w } = await populated();
    w.close();
    damage(h.path, `UPDATE metadata SET incarnation = '${'a'.repeat(32)}'`);
    const e = errorOf(() => h.open());
    expect(e.code).toBe('work_store_foreign_incarnation');
    expect(e.kind).toBe('rejected');
  });

  it('a foreign incarnation refuses: a database other than the one the caller expects', async () => {
    const { h, w } = await populated();
    const { incarnation } = await w.storeIdentity();
    w.close();
    // The same path now holds another store's bytes (a swapped or restored file).
    const other = sqliteHarness();
    await (await owner(other)).addTodo({ operation_id: 'x', title: 'Other' });
    copyFileSync(other.path, h.path);
    expect(errorOf(() => h.open({ expected_incarnation: incarnation })).code).toBe('work_store_foreign_incarnation');
  });

  it('an unknown user_version fails closed', async () => {
    const { h, w } = await populated();
    w.close();
    damage(h.path, `PRAGMA user_version = ${WORK_DB_VERSION + 1}`);
    const e = errorOf(() => h.open());
    expect(e.code).toBe('work_store_schema_unknown');
    expect(e.details).toMatchObject({ user_version: WORK_DB_VERSION + 1 });
  });

  it('another SQLite database at the path is not taken over', async () => {
    const h = sqliteHarness();
    damage(h.path, 'CREATE TABLE something_else (x)');
    expect(errorOf(() => h.open()).code).toBe('work_store_unrecognized');
  });

  it('a store whose history has a gap refuses to open (provider_protocol_violation)', async () => {
    const { h, w } = await populated();
    w.close();
    damage(h.path, 'DELETE FROM commits WHERE cursor = 2');
    expect(errorOf(() => h.open()).code).toBe('provider_protocol_violation');
  });

  it('a repeated operation never applies twice across a real process restart', async () => {
    const h = sqliteHarness();
    const script = `
      import { openWork, openSqliteWorkProvider } from ${JSON.stringify(join(REPO, 'src/owners/work/index.ts'))};
      const w = await openWork({ provider: openSqliteWorkProvider(${JSON.stringify(h.path)}, { goal_id: ${JSON.stringify(GOAL)} }) });
      const r = await w.addTodo({ operation_id: 'child-op', title: 'From the child' });
      process.stdout.write(JSON.stringify(r));
      w.close();`;
    const run = () =>
      spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: REPO,
        encoding: 'utf8',
        timeout: 60_000,
      });
    const first = run();
    expect(first.status, first.stderr).toBe(0);
    const second = run();
    expect(second.status, second.stderr).toBe(0);
    const a = JSON.parse(first.stdout);
    const b = JSON.parse(second.stdout);
    expect(a.result).toBe('applied');
    expect(b.result).toBe('already_applied');
    expect(b.receipt).toEqual(a.receipt);
    const w = await owner(h);
    expect(await w.transactionCount()).toBe(1);
    expect(await w.listTodos()).toHaveLength(1);
  }, 60_000);
});

describe('sqlite work store: recovery read side on a copy', () => {
  it('readHistorical reads a live snapshot copy read-only: Todos, history, identity, no findings, no authority', async () => {
    const { h, w } = await populated();
    const dir = tempDir();
    const copy = join(dir, 'work.db');
    await snapshot(h.path, copy);
    await w.addTodo({ operation_id: 'after-copy', title: 'Not in the copy' });
    const before = sha256Hex(readFileSync(copy));
    const mtime = statSync(copy).mtimeMs;
    const scratch = () => readdirSync(tmpdir()).filter((n) => n.startsWith('loopx-work-read-')).length;
    const scratchBefore = scratch();
    const r = readHistorical(copy, { goal_id: GOAL });
    expect(scratch()).toBe(scratchBefore); // the private read image is gone again
    expect(r.findings).toEqual([]);
    expect(r.readable).toBe(true);
    expect(r.execution_authority_granted).toBe(false);
    expect(r.store_identity).toBe((await w.storeIdentity()).store_identity);
    expect(r.incarnation).toBe((await w.storeIdentity()).incarnation);
    expect(r.goal_id).toBe(GOAL);
    expect(r.history_count).toBe(5);
    expect(r.head_cursor).toBe(5);
    expect(r.handoff_mode).toBe('hard_lease');
    expect(r.fence_epoch).toBe(1);
    expect(r.todos.map((t) => t.todo_id)).toEqual(['t1', 't2']);
    expect(r.todos[0]!.lease).toMatchObject({ owner: 'agent', lease_epoch: 1 });
    // The copy is untouched: same bytes, same mtime, no sidecars.
    expect(sha256Hex(readFileSync(copy))).toBe(before);
    expect(statSync(copy).mtimeMs).toBe(mtime);
    expect(readdirSync(dir)).toEqual(['work.db']);
  });

  it('readHistorical reports damage as findings instead of throwing', async () => {
    const { h } = await populated();
    const dir = tempDir();

    const tampered = join(dir, 'tampered.db');
    await snapshot(h.path, tampered);
    // t2's only post-image is at cursor 3: rewriting it makes the replay disagree with the stored head.
    damage(tampered, `UPDATE commits SET events = replace(events, '"Second"', '"Rewritten"') WHERE cursor = 3`);
    expect(readHistorical(tampered).findings.map((f) => f.code)).toEqual(['work_projection_mismatch']);

    const gap = join(dir, 'gap.db');
    await snapshot(h.path, gap);
    damage(gap, 'DELETE FROM commits WHERE cursor = 3');
    expect(readHistorical(gap).findings.map((f) => f.code)).toContain('provider_protocol_violation');

    const foreign = join(dir, 'foreign.db');
    await snapshot(h.path, foreign);
    damage(foreign, `UPDATE metadata SET incarnation = '${'b'.repeat(32)}'`);
    expect(readHistorical(foreign).findings.map((f) => f.code)).toContain('work_store_foreign_incarnation');

    const future = join(dir, 'future.db');
    await snapshot(h.path, future);
    damage(future, `PRAGMA user_version = ${WORK_DB_VERSION + 5}`);
    const fr = readHistorical(future);
    expect(fr.findings.map((f) => f.code)).toEqual(['work_store_schema_unknown']);
    expect(fr.todos).toEqual([]);

    const notDb = join(dir, 'not.db');
    writeFileSync(notDb, 'hello, not a database');
    expect(readHistorical(notDb).findings.map((f) => f.code)).toEqual(['work_db_not_sqlite']);
    expect(readHistorical(join(dir, 'missing.db')).findings.map((f) => f.code)).toEqual(['work_db_unreadable']);
    expect(readHistorical(tampered, { goal_id: 'other' }).findings.map((f) => f.code)).toContain(
      'work_store_goal_mismatch',
    );
  });

  it('a WAL sidecar beside a copy is reported (readback reflects the main file only)', async () => {
    const { h, w } = await populated();
    // A raw file copy of a live WAL database: the main file plus a non-empty -wal.
    const dir = tempDir();
    copyFileSync(h.path, join(dir, 'work.db'));
    copyFileSync(`${h.path}-wal`, join(dir, 'work.db-wal'));
    const r = readHistorical(join(dir, 'work.db'));
    expect(r.findings).toContainEqual(
      expect.objectContaining({ code: 'work_db_wal_sidecar_present', severity: 'warning' }),
    );
    w.close();
  });
});

describe('sqlite work store: capacity', () => {
  it(`${MAX_RETAINED_TRANSACTIONS} committed transactions are readable completely: history, export and copy readback`, async () => {
    const h = sqliteHarness(undefined, 'OFF');
    const clock = manualClock();
    const w = await openWork({ provider: h.open(), clock: clock.now });
    await w.addTodo({ operation_id: 'seed', title: 'Busy Todo' });
    for (let i = 1; i < MAX_RETAINED_TRANSACTIONS; i++) {
      clock.advance(1);
      await w.updateTodo({ operation_id: `n${i}`, todo_id: 't1', note: `step ${i}` });
    }
    expect(await w.transactionCount()).toBe(MAX_RETAINED_TRANSACTIONS);
    let count = 0;
    let last = 0;
    for await (const t of w.iterateHistory()) {
      expect(t.cursor).toBe(last + 1);
      last = t.cursor;
      count++;
    }
    expect(count).toBe(MAX_RETAINED_TRANSACTIONS);
    const ex = await w.exportRetainedPrefix();
    expect(ex.records).toHaveLength(MAX_RETAINED_TRANSACTIONS + 2);
    const v = verifyRetainedPrefix(ex.records);
    expect(v.findings).toEqual([]);
    expect(v.projection!.todos[0]!.note).toBe(`step ${MAX_RETAINED_TRANSACTIONS - 1}`);
    const copy = join(tempDir(), 'work.db');
    await snapshot(h.path, copy);
    const r = readHistorical(copy);
    expect(r.findings).toEqual([]);
    expect(r.history_count).toBe(MAX_RETAINED_TRANSACTIONS);
    expect(existsSync(`${copy}-wal`)).toBe(false);
  }, 120_000);

  it('verification refuses a prefix beyond capacity instead of truncating it', async () => {
    const w = await owner(sqliteHarness());
    await w.addTodo({ operation_id: 'a', title: 'T' });
    const records = JSON.parse(JSON.stringify((await w.exportRetainedPrefix()).records));
    records[0].head_cursor = MAX_RETAINED_TRANSACTIONS + 1;
    expect(verifyRetainedPrefix(records).findings.map((f: { code: string }) => f.code)).toEqual([
      'retained_prefix_capacity_exceeded',
    ]);
  });
});
