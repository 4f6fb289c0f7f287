/**
 * Before a work run or a lifecycle change, a root asks each receiver its Goal delivered to for the
 * lineage's newest fence (`GET <base>/fences?goal_lineage=L`). A fence of a later generation than
 * the lifetime's own means a later lifetime (recovered elsewhere) delivered there: the root records its own
 * supersession and refuses the writer before it sends or changes anything. Any other answer — the
 * lifetime's own fence or a newer one of the same lifetime (a rotated store), another lineage named back, a malformed body, no answer at all — decides
 * nothing. In process, on real SQLite owners, the dev receiver and a hand-written loopback receiver.
 */
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { deliveryFence, lifetimeFence } from '../../src/owners/goal/index.js';
import { effect as effectOwner } from '../../src/owners/index.js';
import {
  addTodo,
  createGoal,
  initRoot,
  parseAgentDefinition,
  runGoalWork,
  transitionGoal,
  withRootEngine,
  withRootOwners,
  type Engine,
} from '../../src/runtime/index.js';
import { tempRoot } from '../support/cli.js';

const agent = (message: string) =>
  parseAgentDefinition({
    id: 'test.fence-question',
    version: '1.0.0',
    model: { provider: 'scripted', model_id: 'scripted-v1' },
    turn_limit: 6,
    tool_plan: 'loopx.goal-work.v1',
    system: 'Work the Goal.',
    script: [
      { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message } }] },
      { text: 'Done.' },
    ],
  });

/** A fresh root whose Goal `launch` delivered once to `url`, with its access for further runs. */
async function deliveredTo(url: string) {
  const root = tempRoot('loopx-fence-question-');
  initRoot(root);
  await createGoal(root, 'launch', 'Ship the launch post');
  await addTodo(root, 'launch', { operation_id: 'add-1', todo_id: 't1', title: 'Draft' });
  const access = { root, authorityDir: join(dirname(root), 'authority') };
  const work = (message: string) =>
    withRootEngine(access, (engine: Engine) =>
      runGoalWork({ root, goalId: 'launch', agent: agent(message), engine, webhookUrl: url }),
    );
  await work('first news');
  const goal = () => withRootOwners(root, (owners) => owners.goals.get('launch')!);
  return { root, work, goal, lineage: (await goal()).goal_instance_id };
}

const raise = (sink: WebhookSink, body: Record<string, unknown>) =>
  fetch(`${sink.url}/fences`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((r) => r.status);

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'admitted',
    (e: { code?: string }) => e.code,
  );

describe('the question a root asks its receivers before it works a Goal or changes its lifecycle', () => {
  let sink: WebhookSink;
  beforeAll(async () => {
    sink = await startWebhookSink({ port: 0 });
  });
  afterAll(() => sink.close());

  it('a newer fence at the receiver: a lifecycle change is refused, the supersession recorded, nothing sent', async () => {
    const s = await deliveredTo(sink.deliveriesUrl);
    expect(
      await raise(sink, {
        goal_lineage: s.lineage,
        fence: lifetimeFence({ generation: 2 }),
        lifetime: `ginst_${'ab'.repeat(16)}`,
      }),
    ).toBe(200);
    const attempts = sink.attempts(s.lineage).attempts.length;
    expect(await refusal(transitionGoal(s.root, 'launch', 'pause'))).toBe('goal_lifetime_superseded');
    const goal = await s.goal();
    expect(goal.lifecycle).toBe('active');
    expect(goal.superseded).toMatchObject({
      evidence: 'receiver_fence_stale',
      newest_fence: lifetimeFence({ generation: 2 }),
    });
    // From then on the lifetime admits no writer, and the receiver sees nothing more from it.
    expect(await refusal(s.work('stale news'))).toBe('goal_lifetime_superseded');
    expect(sink.attempts(s.lineage).attempts).toHaveLength(attempts);
  });

  it('a newer fence at the receiver: a work run is refused before its first send', async () => {
    const s = await deliveredTo(sink.deliveriesUrl);
    expect(await raise(sink, { goal_lineage: s.lineage, fence: lifetimeFence({ generation: 3 }) })).toBe(200);
    const attempts = sink.attempts(s.lineage).attempts.length;
    expect(await refusal(s.work('stale news'))).toBe('goal_lifetime_superseded');
    expect(sink.attempts(s.lineage).attempts).toHaveLength(attempts);
    expect((await s.goal()).superseded).toMatchObject({ newest_fence: lifetimeFence({ generation: 3 }) });
  });

  it('a receiver the operator retired for the Goal is not asked: its newer fence decides nothing', async () => {
    const s = await deliveredTo(sink.deliveriesUrl);
    expect(await raise(sink, { goal_lineage: s.lineage, fence: lifetimeFence({ generation: 4 }) })).toBe(200);
    await withRootOwners(s.root, (owners) =>
      effectOwner.retireTarget(owners.effects, {
        goal_id: 'launch',
        target: effectOwner.webhookTarget(sink.deliveriesUrl),
        reason: 'the receiver is gone',
        evidence: {},
      }),
    );
    expect(await refusal(transitionGoal(s.root, 'launch', 'pause'))).toBe('admitted');
    expect((await s.goal()).superseded).toBeUndefined();
  });

  it('the lifetime’s own fence, a newer one of the same lifetime, or no receiver answering, decides nothing', async () => {
    const s = await deliveredTo(sink.deliveriesUrl);
    expect(await refusal(transitionGoal(s.root, 'launch', 'pause'))).toBe('admitted');
    expect(await refusal(transitionGoal(s.root, 'launch', 'resume'))).toBe('admitted');
    // The same lifetime delivered through a rotated installation of its store: not a later lifetime.
    expect(await raise(sink, { goal_lineage: s.lineage, fence: deliveryFence({ generation: 1 }, 3) })).toBe(200);
    expect(await refusal(transitionGoal(s.root, 'launch', 'pause'))).toBe('admitted');
    expect((await s.goal()).superseded).toBeUndefined();
    const gone = await startWebhookSink({ port: 0 });
    const g = await deliveredTo(gone.deliveriesUrl);
    await gone.close();
    expect(await refusal(transitionGoal(g.root, 'launch', 'pause'))).toBe('admitted');
    expect((await g.goal()).superseded).toBeUndefined();
  });

  describe('against a receiver whose fence answer is not a clear one', () => {
    let server: Server;
    let url: string;
    let answer: (lineage: string) => unknown = () => ({});
    beforeAll(async () => {
      server = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          const at = new URL(req.url ?? '/', 'http://127.0.0.1');
          if (req.method === 'GET' && at.pathname === '/fences') {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify(answer(at.searchParams.get('goal_lineage') ?? '')));
          } else res.writeHead(201, { 'content-type': 'application/json' }).end('{}');
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(server.address() as { port: number }).port}/deliveries`;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    it('another lineage named back, a fence that is not a number, or no lineage at all: admitted, nothing recorded', async () => {
      const s = await deliveredTo(url);
      const later = lifetimeFence({ generation: 9 });
      for (const a of [
        () => ({ goal_lineage: 'someone_else', newest_fence: later, lifetime: null }),
        (l: string) => ({ goal_lineage: l, newest_fence: String(later), lifetime: null }),
        (l: string) => ({ goal_lineage: l, newest_fence: later, lifetime: 'not a lifetime' }),
        () => ({ newest_fence: later }),
      ]) {
        answer = a;
        expect(await refusal(transitionGoal(s.root, 'launch', 'pause'))).toBe('admitted');
        expect(await refusal(transitionGoal(s.root, 'launch', 'resume'))).toBe('admitted');
      }
      expect((await s.goal()).superseded).toBeUndefined();
      // The same receiver answering clearly with a newer fence is believed.
      answer = (l) => ({ goal_lineage: l, newest_fence: lifetimeFence({ generation: 2 }), lifetime: null });
      expect(await refusal(transitionGoal(s.root, 'launch', 'pause'))).toBe('goal_lifetime_superseded');
    });
  });
});
