/**
 * A Goal's work moved from PostgreSQL to SQLite and back (`loopx goal move-work`), against the real
 * server: the provider's reviewed, digest-confirmed workflow that is the rollback path of a Goal
 * whose work a database service keeps. Each move previews a plan (validated against
 * work-move-plan.schema.json), is refused under another digest, and when confirmed (its answer
 * validated against work-move.schema.json) keeps every
 * receipt readable exactly — an operation id committed in the old store replays in the new one —
 * while the old store is fenced (every writer refused `work_store_moved`) and the receiver the Goal
 * delivered to refuses the old store's fence. Interrupted after the source was fenced, the same
 * command resumes and finishes.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { deliveryFence } from '../../src/owners/goal/index.js';
import { openGoalWork, openWorkAt, type GoalWorkLocation, type ReceiptReadback } from '../../src/owners/work/index.js';
import { REPO, addLaunchTodos, loopxAsync, tempRoot, todoStatuses } from '../support/cli.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';

const schema = pgSchemas();
const REF = 'env:LOOPX_TEST_MOVE_URL';
const env = { LOOPX_TEST_MOVE_URL: PG_URL };

const ajv = new Ajv2020({ strict: true, allErrors: true });
const SCHEMA_DIR = join(REPO, 'docs/schemas');
for (const f of readdirSync(SCHEMA_DIR).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, f), 'utf8')) as object);
function expectValid(id: string, doc: unknown): void {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${id}.json`)!;
  expect(validate(doc) ? [] : validate.errors).toEqual([]);
}

/** Every receipt of the Goal's work as its store reads it back now, by operation id. */
async function receiptsOf(root: string, ops?: readonly string[]): Promise<Map<string, ReceiptReadback | undefined>> {
  Object.assign(process.env, env);
  const work = await openGoalWork({ root, goal_id: 'launch' });
  try {
    const ids = ops ?? [];
    if (ops === undefined) for await (const t of work.iterateHistory()) (ids as string[]).push(t.operation_id);
    return new Map(await Promise.all(ids.map(async (op) => [op, await work.readReceipt(op)] as const)));
  } finally {
    work.close();
  }
}

describePg('a Goal’s work moved from PostgreSQL to SQLite and back', () => {
  let root: string;
  let name: string;
  let sink: WebhookSink;
  let at: string[];
  const toPg = () => ['--to', 'postgresql', '--database-url', REF, '--pg-schema', name];
  const move = (args: string[]) => loopxAsync(['goal', 'move-work', 'launch', ...args, ...at], env);
  let onPg: Map<string, ReceiptReadback | undefined>;
  let pgLocation: GoalWorkLocation;

  beforeAll(async () => {
    root = tempRoot('loopx-move-work-');
    name = schema();
    at = ['--root', root, '--json'];
    sink = await startWebhookSink({ port: 0 });
    expect((await loopxAsync(['init', ...at])).status).toBe(0);
    const create = ['goal', 'create', 'launch', '--title', 'Ship it', '--work-provider', 'postgresql'];
    await loopxAsync([...create, '--database-url', REF, '--pg-schema', name, ...at], env);
    expect((await loopxAsync(['db', 'migrate', ...at], env)).status).toBe(0);
    const made = await loopxAsync([...create, '--database-url', REF, '--pg-schema', name, ...at], env);
    expect(made.status, made.stderr).toBe(0);
    await addLaunchTodos(at, env);
    const agent = join(REPO, 'examples/agents/goal-worker.json');
    const run = await loopxAsync(
      ['work', 'run', '--goal', 'launch', '--agent', agent, '--sink', sink.deliveriesUrl, ...at],
      env,
    );
    expect(run.status, run.stderr).toBe(0);
    onPg = await receiptsOf(root);
    pgLocation = JSON.parse(readFileSync(join(root, 'goals', 'launch', 'work-store.json'), 'utf8'));
  }, 120_000);
  afterAll(() => sink?.close());

  it('to SQLite: previewed, refused under another digest, then moved with every receipt as it was', async () => {
    const plan = await move(['--to', 'sqlite']);
    expect(plan.status, plan.stderr).toBe(0);
    expectValid('work-move-plan', plan.json());
    expect(plan.json()).toMatchObject({
      source: { provider: 'postgresql', cursor: onPg.size },
      destination: { provider: 'sqlite', database_url: null, schema: null },
      receipts: onPg.size,
      lineages: 0,
      todos: 3,
    });
    const wrong = await move(['--to', 'sqlite', '--confirm', 'f'.repeat(64)]);
    expect(wrong.status).toBe(4);
    expect(wrong.json().error.code).toBe('work_move_confirm_mismatch');
    expect((await loopxAsync(['goal', 'show', 'launch', ...at], env)).json().work_provider).toBe('postgresql');

    const done = await move(['--to', 'sqlite', '--confirm', plan.json().digest]);
    expect(done.status, done.stderr).toBe(0);
    expectValid('work-move', done.json());
    // The receiver now refuses the PostgreSQL store's fence (1): the SQLite store's is one installation on.
    expect(done.json().receivers).toEqual([
      {
        goal_id: 'launch',
        target: `webhook:127.0.0.1:${sink.port}`,
        fence: deliveryFence({ generation: 1 }, 1),
        result: 'raised',
      },
    ]);
    expect((await loopxAsync(['goal', 'show', 'launch', ...at], env)).json().work_provider).toBe('sqlite');
    expect(existsSync(join(root, 'goals', 'launch', 'work-store.json'))).toBe(false);
    expect(await receiptsOf(root, [...onPg.keys()])).toEqual(onPg);
    expect(await todoStatuses('launch', at, env)).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'open'],
    ]);

    // The PostgreSQL store is fenced: a writer holding it refuses, typed; what it committed replays in SQLite.
    const old = await openWorkAt({ root, goal_id: 'launch' }, pgLocation);
    try {
      const refused = await old.addTodo({ operation_id: 'late', title: 'x' }).catch((e: { code: string }) => e.code);
      expect(refused).toBe('work_store_moved');
    } finally {
      old.close();
    }
    const t1Add = [...onPg.entries()].find(([, r]) => r?.receipt.operation === 'add_todo')!;
    const replay = await loopxAsync(
      [
        'todo',
        'add',
        '--goal',
        'launch',
        '--title',
        'Draft the outline',
        '--id',
        't1',
        '--operation-id',
        t1Add[0],
        ...at,
      ],
      env,
    );
    expect(replay.status, replay.stderr).toBe(0);
    expect(replay.json().result).toBe('already_applied');
    expect(await todoStatuses('launch', at, env)).toHaveLength(3);
    const added = await loopxAsync(
      ['todo', 'add', '--goal', 'launch', '--title', 'On SQLite', '--id', 't4', ...at],
      env,
    );
    expect(added.status, added.stderr).toBe(0);
  }, 120_000);

  it('back to PostgreSQL, interrupted after the SQLite store was fenced: the same command finishes it', async () => {
    // The PostgreSQL store's receipts (a history the SQLite store holds) and the SQLite store's own.
    const own = await receiptsOf(root);
    const before = await receiptsOf(root, [...onPg.keys(), ...own.keys()]);
    expect(before.size).toBe(onPg.size + own.size);
    // From a root on SQLite, a move to PostgreSQL names its schema (else each preview would choose a new one).
    const unnamed = await move(['--to', 'postgresql', '--database-url', REF]);
    expect([unnamed.status, unnamed.json().error.code]).toEqual([2, 'work_move_schema_required']);
    // A copy of the Goal's directory from before the move (its SQLite store not yet moved out).
    const saved = join(mkdtempSync(join(tmpdir(), 'loopx-move-saved-')), 'launch');
    cpSync(join(root, 'goals', 'launch'), saved, { recursive: true });
    const plan = (await move(toPg())).json();
    expect(plan).toMatchObject({
      source: { provider: 'sqlite' },
      destination: { provider: 'postgresql', schema: name },
    });
    expect(plan.lineages).toBe(1);
    const crashed = await loopxAsync(['goal', 'move-work', 'launch', ...toPg(), '--confirm', plan.digest, ...at], {
      ...env,
      LOOPX_TEST_FAULT: 'work.move.after-out',
    });
    expect(crashed.status).not.toBe(0);
    // Half done: the Goal still reads its SQLite store, which takes no write; another digest is refused.
    expect((await loopxAsync(['goal', 'show', 'launch', ...at], env)).json().work_provider).toBe('sqlite');
    // (In process, so no writer's check moves the run authority's mark: the move alone must have.)
    const half = await openGoalWork({ root, goal_id: 'launch' });
    try {
      const refused = await half.addTodo({ operation_id: 'x', title: 'x' }).catch((e: { code: string }) => e.code);
      expect(refused).toBe('work_store_moved');
    } finally {
      half.close();
    }
    const other = await move([...toPg(), '--confirm', 'e'.repeat(64)]);
    expect(other.json().error).toMatchObject({ code: 'work_move_in_progress' });
    expect(other.json().error.next_action).toContain(`--confirm ${plan.digest}`);

    // Interrupted again, after the SQLite store was set aside: finished without opening it again.
    const again = await loopxAsync(['goal', 'move-work', 'launch', ...toPg(), '--confirm', plan.digest, ...at], {
      ...env,
      LOOPX_TEST_FAULT: 'work.move.after-set-aside',
    });
    expect(again.status).not.toBe(0);
    expect(existsSync(join(root, 'goals', 'launch', 'work.db'))).toBe(false);
    const finished = await move([...toPg(), '--confirm', plan.digest]);
    expect(finished.status, finished.stderr).toBe(0);
    expect(finished.json().receivers[0]).toMatchObject({
      fence: deliveryFence({ generation: 1 }, 2),
      result: 'raised',
    });
    expect((await loopxAsync(['goal', 'show', 'launch', ...at], env)).json().work_provider).toBe('postgresql');
    // Every receipt of both earlier stores reads back exactly; the SQLite store is kept aside as history.
    expect(await receiptsOf(root, [...before.keys()])).toEqual(before);
    expect(readdirSync(join(root, 'goals', 'launch', 'retired'))).toHaveLength(1);
    expect(existsSync(join(root, 'goals', 'launch', 'work.db'))).toBe(false);
    const next = await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', 'Back on PostgreSQL', ...at], env);
    expect(next.status, next.stderr).toBe(0);
    // That copy put back in place of the Goal's directory is a root rolled back, never a second live store:
    // the run authority saw the SQLite store's last head (the move's), which the copy is behind.
    const live = join(root, 'goals', 'launch.live');
    renameSync(join(root, 'goals', 'launch'), live);
    cpSync(saved, join(root, 'goals', 'launch'), { recursive: true });
    const stale = await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', 'split brain', ...at], env);
    expect(stale.json().error?.code).toBe('root_rolled_back');
    renameSync(join(root, 'goals', 'launch'), `${saved}.after`);
    renameSync(live, join(root, 'goals', 'launch'));
    // A fence of a store left behind is refused at the receiver.
    const lineage = (await loopxAsync(['goal', 'show', 'launch', ...at], env)).json().goal_instance_id;
    const late = await fetch(sink.deliveriesUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': 'stale-1',
        'x-operation-id': 'stale-1',
        'x-loopx-goal-lineage': lineage,
        'x-loopx-fence': String(deliveryFence({ generation: 1 }, 1)),
        'x-loopx-goal-lifetime': lineage,
      },
      body: JSON.stringify({ message: 'from the SQLite store' }),
    });
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: string }).error).toBe('fence_stale');
  }, 120_000);

  it('a rotation of the schema afterwards passes over the store the work moved out of', async () => {
    const preview = await loopxAsync(['db', 'rotate', '--goal', 'launch', '--database-url', REF, ...at], env);
    expect(preview.status, preview.stderr).toBe(0);
    const rotated = await loopxAsync(
      ['db', 'rotate', '--goal', 'launch', '--database-url', REF, '--confirm', preview.json().digest, ...at],
      env,
    );
    expect(rotated.status, rotated.stderr).toBe(0);
    // Two stores of the Goal in the schema: the first one, moved out (its fence replaced by the move), grants
    // nothing and is left as it is; the live one, adopted afresh, holds no lease or fence yet.
    expect(rotated.json().revoked).toEqual([
      { goal_id: 'launch', active_leases: 0, fenced: false, result: 'none' },
      { goal_id: 'launch', active_leases: 0, fenced: false, result: 'none' },
    ]);
    const after = await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', 'After the rotation', ...at], env);
    expect(after.status, after.stderr).toBe(0);
  });

  it('refuses a move to where the work is already', async () => {
    for (const to of [toPg(), ['--to', 'postgresql', '--database-url', REF]]) {
      const same = await move(to);
      expect(same.status).toBe(2);
      expect(same.json().error.code).toBe('work_move_same_store');
    }
  });
});
