/**
 * A receiver's `409 fence_stale` is evidence that the Goal's lifetime was superseded only when the
 * newest fence it names is above the lifetime's own, for the lineage the delivery carried: then the
 * root records the supersession in its own goal owner and admits nothing more for the lifetime.
 * A newest fence of the writer's own lifetime (a rotated installation of its store delivered) is
 * a refused delivery that ends the call `goal_work_installation_superseded`, and records nothing.
 * Any other 409 — no newest fence, or one not above the writer's own — is a refused delivery and
 * nothing more. In process, on real SQLite owners and a real loopback receiver.
 */
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryFence, lifetimeFence } from '../../src/owners/goal/index.js';
import {
  addTodo,
  createGoal,
  initRoot,
  parseAgentDefinition,
  runGoalWork,
  withRootEngine,
  withRootOwners,
  type Engine,
} from '../../src/runtime/index.js';
import { tempRoot } from '../support/cli.js';

const AGENT = parseAgentDefinition({
  id: 'test.fence-evidence',
  version: '1.0.0',
  model: { provider: 'scripted', model_id: 'scripted-v1' },
  turn_limit: 6,
  tool_plan: 'loopx.goal-work.v1',
  system: 'Work the Goal.',
  script: [
    { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'news' } }] },
    { text: 'Done.' },
  ],
});

let server: Server;
let url: string;
/** What the receiver answers every delivery with (a 409). */
let answer: Record<string, unknown> = {};
const seen: { lineage: string | undefined; fence: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push({
        lineage: req.headers['x-loopx-goal-lineage'] as string | undefined,
        fence: req.headers['x-loopx-fence'] as string | undefined,
      });
      res.writeHead(409, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/deliveries`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** A fresh root whose Goal `launch` delivers once against the receiver answering `with`; the Goal's record after. */
async function deliverAgainst(with_: Record<string, unknown>) {
  answer = with_;
  const root = tempRoot('loopx-fence-evidence-');
  initRoot(root);
  await createGoal(root, 'launch', 'Ship the launch post');
  await addTodo(root, 'launch', { operation_id: 'add-1', todo_id: 't1', title: 'Draft' });
  const access = { root, authorityDir: join(dirname(root), 'authority') };
  // What the delivery call ended with (the engine's record of its mutation).
  const answered = await withRootEngine(access, async (engine: Engine) => {
    const { run } = await runGoalWork({ root, goalId: 'launch', agent: AGENT, engine, webhookUrl: url });
    return (await engine.mutations(run.run_id)).find((m) => m.callId.endsWith('/t1/k0'));
  });
  return { root, access, answered, goal: await withRootOwners(root, (owners) => owners.goals.get('launch')!) };
}

describe('a receiver’s fence_stale as evidence of supersession', () => {
  it('counts when the newest fence is above the lifetime’s own: the root records it and admits nothing more', async () => {
    const newest = lifetimeFence({ generation: 2 });
    const { root, access, goal, answered } = await deliverAgainst({ error: 'fence_stale', newest_fence: newest });
    expect(seen.at(-1)).toEqual({ lineage: goal.goal_instance_id, fence: '1' });
    expect(goal.superseded).toMatchObject({ evidence: 'receiver_fence_stale', newest_fence: newest });
    expect(JSON.parse(answered!.resultJson!)).toMatchObject({ error: 'goal_lifetime_superseded' });
    const again = await withRootEngine(access, (engine: Engine) =>
      runGoalWork({ root, goalId: 'launch', agent: AGENT, engine, webhookUrl: url }),
    ).catch((e: unknown) => e);
    expect((again as { code?: string }).code).toBe('goal_lifetime_superseded');
  });

  it('does not count without a newest fence, or with one not above the lifetime’s own', async () => {
    for (const with_ of [
      { error: 'fence_stale' },
      { error: 'fence_stale', newest_fence: 1 },
      { error: 'fence_stale', newest_fence: 0 },
      { error: 'something_else', newest_fence: lifetimeFence({ generation: 3 }) },
    ]) {
      const { goal } = await deliverAgainst(with_);
      expect(goal.superseded, JSON.stringify(with_)).toBeUndefined();
    }
  });

  it('a newer fence of the same lifetime (its store rotated since this process was admitted): refused, nothing recorded', async () => {
    const newest = deliveryFence({ generation: 1 }, 1);
    expect(newest).toBeGreaterThan(1);
    const { goal, answered } = await deliverAgainst({ error: 'fence_stale', newest_fence: newest });
    expect(seen.at(-1)?.fence).toBe('1');
    expect(goal.superseded).toBeUndefined();
    expect(JSON.parse(answered!.resultJson!)).toMatchObject({ error: 'goal_work_installation_superseded' });
  });
});
