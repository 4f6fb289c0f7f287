/**
 * The PostgreSQL work provider against the real server, beyond the conformance suite (port.test.ts):
 * Goals sharing one installation schema never see each other's rows; a stale writer is refused by
 * the database itself (the fence token checked in the commit's transaction), with the same code as
 * on SQLite; a store replaced under an open handle is not written through it; a schema not migrated
 * and damaged rows are refused; and an ambiguous commit of a Todo update — the connection
 * terminated while its one commit statement is in flight, or a commit that landed but whose answer
 * was lost — is resolved
 * by the work owner's receipt readback, and a retry of the same request applies at most once.
 */
import { expect, it } from 'vitest';
import {
  PgCommitAmbiguous,
  migratePostgres,
  openPostgres,
  type PgDatabase,
  type PgQuery,
} from '../../../src/store/index.js';
import {
  WORK_PG_COMPONENT,
  WORK_PG_MIGRATIONS,
  openPostgresWorkProvider,
  openWork,
  type WorkCommitRequest,
  type WorkProvider,
  type WorkLoad,
} from '../../../src/owners/work/index.js';
import { PG_URL, describePg, pgSchemas } from '../../support/pg.js';
import { pgWorkHarnesses, type PgWorkHarness } from './pg-harness.js';
import { GOAL, rejectionOf, sha, sqliteHarness } from './support.js';

const harness = pgWorkHarnesses();
const freshSchema = pgSchemas();

const request = async (
  p: WorkProvider,
  n: number,
  over: Partial<WorkCommitRequest> = {},
): Promise<WorkCommitRequest> => ({
  expected_provider_revision: (await p.load()).provider_revision,
  operation_id: `op-${n}`,
  request_digest: sha(n),
  events: [{ type: 'e', n }],
  next_projection: { n },
  receipt: { operation_id: `op-${n}`, n },
  ...over,
});

/**
 * Writer A engages the fence and writes; writer B (another connection, another process's view)
 * engages a newer one. A still believes its fence holds — its loads answer what it last read — so
 * only the store can refuse it.
 */
async function staleWriterIsRefused(
  openA: () => Promise<WorkProvider>,
  openB: () => Promise<WorkProvider>,
): Promise<void> {
  const pa = await openA();
  const pb = await openB();
  let memory: WorkLoad | undefined;
  const a = await openWork({ provider: { ...pa, load: async () => memory ?? pa.load() } });
  const b = await openWork({ provider: pb });
  const tokenA = (await a.engageFence({ operation_id: 'fence-a' })).receipt.fence!;
  await a.addTodo({ operation_id: 'a-1', title: 'by A', fence: tokenA });
  memory = await pa.load();
  const tokenB = (await b.engageFence({ operation_id: 'fence-b' })).receipt.fence!;
  expect(tokenB.epoch).toBe(tokenA.epoch + 1);

  const refused = await rejectionOf(() => a.addTodo({ operation_id: 'a-2', title: 'by A, fenced', fence: tokenA }));
  expect(refused.code).toBe('writer_fenced');
  expect(refused.details).toMatchObject({ presented_epoch: tokenA.epoch });
  expect(await pb.readReceipt('a-2')).toBeUndefined();
  expect((await pb.load()).cursor).toBe(3);
  expect((await b.listTodos()).map((t) => t.title)).toEqual(['by A']);
  // At the current revision too: the token alone is refused by the store.
  const atHead = await request(pb, 9, { writer_fence: tokenA });
  expect(await pa.commit(atHead)).toEqual({ status: 'conflict', reason: 'writer_fenced' });
  // A that reads again is refused before it commits; B writes on.
  memory = undefined;
  expect((await rejectionOf(() => a.addTodo({ operation_id: 'a-3', title: 'by A, again', fence: tokenA }))).code).toBe(
    'writer_fenced',
  );
  expect(await b.addTodo({ operation_id: 'b-1', title: 'by B', fence: tokenB })).toMatchObject({
    result: 'applied',
    cursor: 4,
  });
  expect((await pb.scanCommitted(0, 10)).transactions.map((t) => t.operation_id)).toEqual([
    'fence-a',
    'a-1',
    'fence-b',
    'b-1',
  ]);
}

type Fault = 'terminate_at_commit' | 'lose_commit_answer';

/**
 * `db` whose next commit (the provider's one autocommit statement) meets `fault`: its connection
 * terminated by a second connection while the statement is in flight — held at the store table's
 * lock until then, so nothing lands — or a statement that landed and whose answer is lost. Either
 * way the statement rejects with `PgCommitAmbiguous`.
 */
function commitPointFaults(
  db: PgDatabase,
  killer: PgDatabase,
): { db: PgDatabase; arm(fault: Fault): void; fired(): number } {
  let armed: Fault | undefined;
  let fired = 0;
  const wrapped: PgDatabase = {
    schema: db.schema,
    query: (sql, params) => db.query(sql, params),
    transaction: (body, options) => db.transaction(body, options),
    serverIdentity: () => db.serverIdentity(),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
    async autocommit(sql, params, name) {
      const fault = armed;
      if (fault === undefined) return db.autocommit(sql, params, name);
      armed = undefined;
      fired++;
      if (fault === 'lose_commit_answer') {
        await db.autocommit(sql, params, name);
        throw new PgCommitAmbiguous(new Error('the answer to the commit was lost'));
      }
      return killer.transaction(async (q) => {
        await q('LOCK TABLE work_stores IN EXCLUSIVE MODE');
        const pending = db.autocommit(sql, params, name);
        pending.catch(() => undefined);
        const victim = await waitingFor(q);
        // Waits until that backend is gone: the statement in flight meets a terminated connection.
        await q('SELECT pg_terminate_backend($1, 30000)', [victim]);
        return pending;
      });
    },
  };
  return { db: wrapped, arm: (fault) => (armed = fault), fired: () => fired };
}

/** Latch: the backend waiting for a lock `q`'s own backend holds (polled; fails after a generous bound). */
async function waitingFor(q: PgQuery): Promise<number> {
  for (let i = 0; i <= 1200; i++) {
    const [row] = await q<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid)) LIMIT 1',
    );
    if (row) return row.pid;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no backend ever waited for the store table');
}

async function todoOwnerWithFaults(h: PgWorkHarness) {
  await h.open(); // creates the store
  const faults = commitPointFaults(h.database(), h.database());
  const provider = await openPostgresWorkProvider(faults.db, { store_key: h.store_key, goal_id: GOAL });
  const work = await openWork({ provider });
  await work.addTodo({ operation_id: 'add', todo_id: 't1', title: 'first title' });
  return { ...faults, provider, work };
}

describePg('the PostgreSQL work provider on the real server', () => {
  it('Goals sharing one installation schema never see each other’s rows', async () => {
    const g = await harness('goal-g').open({ goal_id: 'goal-g' });
    const h = await harness('goal-h').open({ goal_id: 'goal-h' });
    expect((await g.storeIdentity()).store_identity).not.toBe((await h.storeIdentity()).store_identity);
    expect(await g.commit(await request(g, 1, { receipt: { goal: 'g' } }))).toMatchObject({
      status: 'applied',
      cursor: 1,
    });
    expect(await h.commit(await request(h, 1, { receipt: { goal: 'h' } }))).toMatchObject({
      status: 'applied',
      cursor: 1,
    });
    expect(await g.commit(await request(g, 2))).toMatchObject({ status: 'applied', cursor: 2 });
    expect((await g.readReceipt('op-1'))?.receipt).toEqual({ goal: 'g' });
    expect((await h.readReceipt('op-1'))?.receipt).toEqual({ goal: 'h' });
    expect(await h.readReceipt('op-2')).toBeUndefined();
    expect((await h.load()).cursor).toBe(1);
    expect((await h.scanCommitted(0, 10)).transactions.map((t) => t.receipt)).toEqual([{ goal: 'h' }]);
    const lineage = {
      source_store_identity: 'sqlite:' + 'b'.repeat(32),
      source_incarnation: 'a'.repeat(32),
      source_head_cursor: 1,
      source_provider_revision: `${'a'.repeat(32)}:1`,
      source_projection: null,
      recovery_id: 'c'.repeat(64),
      content_digest: 'd'.repeat(64),
    };
    const row = {
      cursor: 1,
      provider_revision: `${'a'.repeat(32)}:1`,
      operation_id: 'src-1',
      request_digest: sha(7),
      events: '[{}]',
      receipt: '{}',
    };
    const i = await harness('goal-i').open({ goal_id: 'goal-i' });
    expect(await i.importLineage({ lineage, rows: [row] })).toMatchObject({ status: 'applied' });
    expect(await g.lineage()).toEqual([]);
    expect(await g.readReceipt('src-1')).toBeUndefined();
    expect(await g.commit(await request(g, 3, { operation_id: 'src-1' }))).toMatchObject({ status: 'applied' });
    expect((await rejectionOf(() => harness('goal-g').open({ goal_id: 'goal-h' }))).code).toBe(
      'work_store_goal_mismatch',
    );
  });

  it('a writer fenced by a newer one is refused by the database itself (writer_fenced, as on SQLite), and nothing of its write lands', async () => {
    const pg = harness();
    await staleWriterIsRefused(
      () => pg.open(),
      () => pg.open(),
    );
    const lite = sqliteHarness();
    await staleWriterIsRefused(
      async () => lite.open(),
      async () => lite.open(),
    );
  });

  it('a store removed and made anew under an open handle is not written or read through it (work_store_replaced)', async () => {
    const h = harness();
    const old = await h.open();
    expect((await old.commit(await request(old, 1))).status).toBe('applied');
    await h.database().transaction(async (q) => {
      for (const table of ['work_lineage_commits', 'work_lineage', 'work_commits', 'work_stores'])
        await q(`DELETE FROM ${table} WHERE goal_key = $1`, [h.store_key]);
    });
    const fresh = await h.open();
    expect((await fresh.storeIdentity()).incarnation).not.toBe((await old.storeIdentity()).incarnation);
    expect(await old.commit(await request(fresh, 2))).toEqual({ status: 'failed', code: 'work_store_replaced' });
    expect(await old.importLineage({ lineage: { ...LINEAGE, source_head_cursor: 0 }, rows: [] })).toEqual({
      status: 'failed',
      code: 'work_store_replaced',
    });
    expect((await rejectionOf(() => old.load())).code).toBe('work_store_replaced');
    expect(await fresh.load()).toMatchObject({ cursor: 0, head: null });
    expect(await fresh.lineage()).toEqual([]);
  });

  it('a schema at work version 1 (before the one-statement commit) is refused until migrated, then commits with its JSON columns compressed by lz4; a statement the server refused is not ambiguous', async () => {
    const db = openPostgres({ url: PG_URL, schema: freshSchema(), max: 1 });
    try {
      expect(await migratePostgres(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS.slice(0, 1))).toEqual({ from: 0, to: 1 });
      expect((await rejectionOf(() => openPostgresWorkProvider(db, { goal_id: GOAL }))).code).toBe(
        'pg_schema_not_migrated',
      );
      expect(await migratePostgres(db, WORK_PG_COMPONENT, WORK_PG_MIGRATIONS)).toEqual({ from: 1, to: 3 });
      // Migration 3: the JSON columns compress with lz4 (this server is built with it).
      const compression = await db.query(
        `SELECT c.relname || '.' || a.attname AS col, a.attcompression AS method FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          WHERE c.relnamespace = current_schema()::regnamespace AND a.attname IN ('events', 'receipt', 'projection', 'source_projection') ORDER BY 1`,
        [],
      );
      expect(compression).toEqual(
        [
          'work_commits.events',
          'work_commits.receipt',
          'work_lineage.source_projection',
          'work_lineage_commits.events',
          'work_lineage_commits.receipt',
          'work_stores.projection',
        ].map((col) => ({ col, method: 'l' })),
      );
      const p = await openPostgresWorkProvider(db, { goal_id: GOAL });
      expect(await p.commit(await request(p, 1))).toMatchObject({ status: 'applied', cursor: 1 });
      const refused = await db.autocommit('SELECT 1 / 0', []).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).not.toBeInstanceOf(PgCommitAmbiguous);
      expect((refused as { code?: unknown }).code).toBe('22012');
    } finally {
      await db.close();
    }
  });

  it('refuses a schema the work tables were not migrated into, a missing store when not creating, and rows that do not decode', async () => {
    const bare = openPostgres({ url: PG_URL, schema: freshSchema(), max: 1 });
    try {
      expect((await rejectionOf(() => openPostgresWorkProvider(bare, { goal_id: GOAL }))).code).toBe(
        'pg_schema_not_migrated',
      );
    } finally {
      await bare.close();
    }
    const h = harness();
    const p = await h.open();
    expect(
      (await rejectionOf(() => openPostgresWorkProvider(h.database(), { goal_id: 'never-made', create: false }))).code,
    ).toBe('work_store_missing');
    await p.commit(await request(p, 1));
    await p.commit(await request(p, 2));
    const admin = h.database();
    await admin.query(`UPDATE work_commits SET receipt = 'not json' WHERE goal_key = $1 AND cursor = 1`, [h.store_key]);
    expect((await rejectionOf(() => p.scanCommitted(0, 10))).code).toBe('provider_protocol_violation');
    await admin.query(`DELETE FROM work_commits WHERE goal_key = $1 AND cursor = 1`, [h.store_key]);
    expect((await rejectionOf(() => h.open())).code).toBe('provider_protocol_violation');
  });

  it('a Todo update whose connection is terminated at the commit point did not land: the owner says unproved, and the same request then applies once', async () => {
    const { work, provider, arm, fired } = await todoOwnerWithFaults(harness());
    const update = { operation_id: 'rename', todo_id: 't1', title: 'second title' };
    arm('terminate_at_commit');
    expect((await rejectionOf(() => work.updateTodo(update))).code).toBe('store_outcome_unproved');
    expect(fired()).toBe(1);
    expect(await provider.readReceipt('rename')).toBeUndefined();
    expect((await work.getTodo('t1'))?.title).toBe('first title');
    const applied = await work.updateTodo(update);
    expect(applied).toMatchObject({
      result: 'applied',
      cursor: 2,
      receipt: { operation_id: 'rename', todo: { title: 'second title' } },
    });
    expect(await work.updateTodo(update)).toMatchObject({
      result: 'already_applied',
      cursor: 2,
      receipt: applied.receipt,
    });
    expect(await work.transactionCount()).toBe(2);
  });

  it('a Todo update that landed but whose COMMIT answer was lost is answered applied from its receipt, and a retry applies nothing', async () => {
    const { work, provider, arm, fired } = await todoOwnerWithFaults(harness());
    const update = { operation_id: 'rename', todo_id: 't1', title: 'second title' };
    arm('lose_commit_answer');
    const resolved = await work.updateTodo(update);
    expect(fired()).toBe(1);
    expect(resolved).toMatchObject({
      result: 'applied',
      cursor: 2,
      receipt: { operation_id: 'rename', todo: { title: 'second title' } },
    });
    expect((await provider.readReceipt('rename'))?.receipt).toEqual(resolved.receipt);
    expect(await work.updateTodo(update)).toMatchObject({
      result: 'already_applied',
      cursor: 2,
      receipt: resolved.receipt,
    });
    expect(await work.transactionCount()).toBe(2);
  });

  it('a batch of Todo updates whose COMMIT answer was lost is answered applied from its receipt, once; its kilobytes of JSON are stored lz4-compressed and read back whole', async () => {
    const h = harness();
    const { work, provider, arm, fired } = await todoOwnerWithFaults(h);
    for (let i = 2; i <= 20; i++)
      await work.addTodo({ operation_id: `add-${i}`, todo_id: `t${i}`, title: `Todo ${i}` });
    const batch = {
      operation_id: 'batch',
      updates: Array.from({ length: 20 }, (_, i) => ({ todo_id: `t${i + 1}`, note: `note ${i + 1} `.repeat(20) })),
    };
    arm('lose_commit_answer');
    const resolved = await work.updateTodos(batch);
    expect(fired()).toBe(1);
    expect(resolved).toMatchObject({ result: 'applied', cursor: 21, receipt: { operation: 'update_todos' } });
    expect(resolved.receipt.todos!.map((t) => [t.todo_id, t.todo_revision])).toEqual(
      Array.from({ length: 20 }, (_, i) => [`t${i + 1}`, 2]),
    );
    expect(await work.updateTodos(batch)).toMatchObject({
      result: 'already_applied',
      cursor: 21,
      receipt: resolved.receipt,
    });
    expect(await work.transactionCount()).toBe(21);
    // Another process reads the same batch back from the rows.
    const reader = await openWork({ provider: await h.open() });
    const [tx] = (await reader.history(20, 1)).transactions;
    expect(tx!.receipt).toEqual(resolved.receipt);
    expect(tx!.events).toHaveLength(20);
    expect((await reader.listTodos()).every((t) => t.note === `note ${t.todo_id.slice(1)} `.repeat(20))).toBe(true);
    const [stored] = await h
      .database()
      .query<{ method: string; bytes: number }>(
        `SELECT pg_column_compression(events) AS method, pg_column_size(events) AS bytes FROM work_commits WHERE goal_key = $1 AND cursor = 21`,
        [h.store_key],
      );
    expect(stored).toMatchObject({ method: 'lz4' });
    expect(stored!.bytes).toBeLessThan(JSON.stringify(tx!.events).length);
    expect((await provider.readReceipt('batch'))?.receipt).toEqual(resolved.receipt);
  });
});

const LINEAGE = {
  source_store_identity: 'sqlite:' + 'e'.repeat(32),
  source_incarnation: 'a'.repeat(32),
  source_head_cursor: 0,
  source_provider_revision: `${'a'.repeat(32)}:0`,
  source_projection: null,
  recovery_id: 'c'.repeat(64),
  content_digest: 'd'.repeat(64),
};
