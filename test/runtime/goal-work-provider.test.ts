/**
 * A Goal work run answered by a real provider package (openai-compatible, against the local wire
 * fixtures): its Turn is debited in the quota ledger with the tokens the provider reported for the
 * turn (input + output, as recorded with the response), not an estimate.
 */
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { defineAgent, TURN_DEBIT_UNIT } from '../../src/engine/index.js';
import { quota } from '../../src/owners/index.js';
import { addTodo, createGoal, initRoot, runGoalWork, withRootEngine } from '../../src/runtime/index.js';
import { tempRoot } from '../support/cli.js';
import { startModelFixtureServer, type ModelFixtureServer } from '../support/model-fixture-server.js';

const KEY_ENV = 'LOOPX_TEST_GOAL_MODEL_KEY';
let sink: WebhookSink;
let server: ModelFixtureServer;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  server = await startModelFixtureServer();
  process.env[KEY_ENV] = 'sk-goal-work';
});
afterAll(async () => {
  delete process.env[KEY_ENV];
  await sink.close();
  await server.close();
});

describe('a Goal work run with a provider', () => {
  it("debits its Turn with the provider's reported tokens", async () => {
    const root = tempRoot('loopx-goal-provider-');
    initRoot(root);
    await createGoal(root, 'launch', 'Ship the launch post');
    await addTodo(root, 'launch', { operation_id: 'add-1', todo_id: 't1', title: 'Draft the outline' });
    const agent = defineAgent({
      id: 'test.goal-provider',
      version: '1.0.0',
      model: { provider: 'openai-compatible', modelId: 'fixture-model', baseUrl: server.url, apiKeyEnv: KEY_ENV },
      turnLimit: 3,
      toolPlan: 'loopx.goal-work.v1',
    });
    server.enqueue('openai-chat', 'text-stream');

    const { run, goal } = await withRootEngine({ root, authorityDir: join(dirname(root), 'authority') }, (engine) =>
      runGoalWork({ root, goalId: 'launch', agent, engine, webhookUrl: sink.deliveriesUrl }),
    );

    expect(run).toMatchObject({ status: 'completed', completed_turns: 1 });
    const ledger = quota.openSqliteQuotaLedger(join(root, 'quota.db'));
    try {
      expect((await ledger.list()).map((d) => [d.unit, d.goal_instance_id, d.amount])).toEqual([
        [TURN_DEBIT_UNIT, goal.goal_instance_id, 14 + 6],
      ]);
    } finally {
      ledger.close();
    }
  }, 60_000);
});
