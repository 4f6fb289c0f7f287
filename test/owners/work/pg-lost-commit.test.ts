/**
 * A Todo write whose commit the database made but whose answer the connection lost is answered
 * from the store's readback — its receipt, exactly once — and one whose outcome cannot be read back
 * (the database unreachable after the loss) is `store_outcome_unproved`, never `internal_error`;
 * the same request with the same operation id then applies exactly once. The real CLI against the
 * real PostgreSQL, through a loopback proxy that cuts the connection at the server's answer to the
 * work commit (after the server committed it). Every command runs asynchronously: the proxy lives
 * in this process's event loop.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openPostgres } from '../../../src/store/index.js';
import { loopxAsync, tempRoot } from '../../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../../support/pg.js';
import { startPgProxy, type PgProxy } from '../../support/pg-proxy.js';

describePg('a work commit whose answer was lost', () => {
  const schema = pgSchemas()();
  let proxy: PgProxy;
  let root: string;
  let env: Record<string, string>;
  const at = () => ['--root', root];

  const ok = async (args: readonly string[]) => {
    const r = await loopxAsync([...args, '--root', root], env);
    expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r;
  };

  beforeAll(async () => {
    proxy = await startPgProxy();
    env = { LX_LOST_COMMIT: proxy.url(PG_URL) };
    root = tempRoot('loopx-lost-commit-');
    await ok(['init', '--store', 'postgresql', '--database-url', 'env:LX_LOST_COMMIT', '--pg-schema', schema]);
    await ok(['db', 'migrate']);
    await ok(['goal', 'create', 'g1', '--title', 'lost answers']);
    await ok(['todo', 'add', '--goal', 'g1', '--title', 'one']);
    await ok(['todo', 'add', '--goal', 'g1', '--title', 'two']);
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
  });

  const update = (todo: string, status: string, op: string) =>
    loopxAsync(
      ['todo', 'update', todo, '--goal', 'g1', '--status', status, '--operation-id', op, ...at(), '--json'],
      env,
    );
  /** The work commits in the schema, read straight from the server (not through the proxy): with one operation id, or all. */
  const commits = async (op?: string): Promise<number> => {
    const db = openPostgres({ url: PG_URL, schema, max: 1 });
    try {
      const rows = await db.query(
        `SELECT count(*)::int AS n FROM work_commits${op === undefined ? '' : ' WHERE operation_id = $1'}`,
        op === undefined ? [] : [op],
      );
      return rows[0]!.n as number;
    } finally {
      await db.close();
    }
  };

  it('committed but unanswered: the receipt read back, applied once; the same request again replays it', async () => {
    const before = await commits();
    const cut = proxy.dropAnswerTo('loopx_work_commit');
    const r = await update('t1', 'done', 'op-lost-answer');
    await cut;
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const first = r.json();
    const again = await update('t1', 'done', 'op-lost-answer');
    expect(again.status, again.stderr).toBe(0);
    expect(again.json().cursor ?? again.json().receipt?.cursor).toEqual(first.cursor ?? first.receipt?.cursor);
    expect(await commits('op-lost-answer')).toBe(1);
    expect(await commits()).toBe(before + 1);
  }, 120_000);

  it('unanswered and then unreachable: store_outcome_unproved, never internal_error; retried, it applies exactly once', async () => {
    const before = await commits();
    const cut = proxy.dropAnswerTo('loopx_work_commit', { thenRefuse: true });
    const r = await update('t2', 'blocked', 'op-unproved');
    await cut;
    expect(r.status, r.stdout + r.stderr).not.toBe(0);
    const error = JSON.parse(r.stdout).error;
    expect(error.code).toBe('store_outcome_unproved');
    expect(error.next_action).toContain('retry');
    proxy.forward();
    const retried = await update('t2', 'blocked', 'op-unproved');
    expect(retried.status, retried.stderr).toBe(0);
    expect(await commits('op-unproved')).toBe(1);
    expect(await commits()).toBe(before + 1);
    const todos = (await ok(['todo', 'list', '--goal', 'g1', '--json'])).json().todos as {
      todo_id: string;
      status: string;
    }[];
    expect(todos.find((t) => t.todo_id === 't2')?.status).toBe('blocked');
  }, 120_000);
});
