/**
 * A webhook delivery's `ToolResulted` says what its receiver did (`delivery_result`, `duplicate_of`),
 * read from the receipt when the call settles: before the effect owner's receipt is bounded to a
 * digest (which would lose it). Every ToolResulted of a delivery carries both fields — null when not
 * known (an unknown outcome, a reconciliation's or an operator's settlement); calls whose effect is
 * not a delivery carry neither.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openEngine, type Engine, type JsonValue, type Tool } from '../../src/engine/index.js';
import { effectOutput } from '../../src/engine/tools.js';
import {
  memoryEffectJournal,
  outcomeUnknown,
  WEBHOOK_KIND,
  type EffectJournal,
} from '../../src/owners/effect/index.js';
import { allEvents, call, localApp, makeTool, scriptedAgent, testAuthority } from './engine-support.js';

const closers: Array<() => void> = [];
afterEach(() => {
  while (closers.length > 0) closers.pop()!();
});

const schema: { [k: string]: JsonValue } = {
  type: 'object',
  additionalProperties: false,
  required: ['message'],
  properties: { message: { type: 'string' } },
};
const script = [{ text: 'announcing', toolCalls: [call('notify', { message: 'ready' })] }, { text: 'done' }];

/** A delivery tool: its effect is a webhook delivery; `execute` answers as the test needs. */
const notify = (execute: Tool['execute'], kind = WEBHOOK_KIND): Tool => ({
  ...makeTool('notify', execute, { mutating: true, inputSchema: schema }),
  describeEffect: (args) => ({ kind, target: 'webhook:receiver.test', intent: { body: args } }),
});

function engineWith(tool: Tool): { engine: Engine; effects: EffectJournal } {
  const effects = memoryEffectJournal();
  const engine = openEngine({ application: localApp([tool]), effects, authority: testAuthority() });
  closers.push(() => engine.close());
  return { engine, effects };
}

const resulted = async (engine: Engine, runId: string) =>
  (await allEvents(engine, runId)).filter((e) => e.type === 'ToolResulted').map((e) => e.data);

describe('the delivery result of a run’s ToolResulted', () => {
  it('is read from the receipt before it is bounded: a receipt kept only as a digest still says `replayed` on the event', async () => {
    const receipt = { http_status: 200, response: { replayed: true, delivery: { note: 'x'.repeat(40_000) } } };
    const { engine, effects } = engineWith(notify(() => effectOutput({ delivered: true }, receipt)));
    expect(await engine.start(scriptedAgent(script), { runId: 'run-big' })).toMatchObject({ status: 'completed' });
    // The effect owner keeps a digest of the receipt: `replayed` is not in it any more.
    expect((await effects.get('run-big:t1:k0'))?.receipt).toEqual({
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      bytes: expect.any(Number),
    });
    expect(await resulted(engine, 'run-big')).toEqual([
      { call_id: 'run-big/t1/k0', tool_name: 'notify', status: 'ok', delivery_result: 'replayed', duplicate_of: null },
    ]);
  });

  it.each([
    ['stored', { http_status: 201, response: { replayed: false } }, { delivery_result: 'stored', duplicate_of: null }],
    [
      'not_sent',
      { sent: false, duplicate_of: 'run-0:t1:k0' },
      { delivery_result: 'not_sent', duplicate_of: 'run-0:t1:k0' },
    ],
    [
      'null for a receiver that says neither',
      { http_status: 204, response: null },
      { delivery_result: null, duplicate_of: null },
    ],
  ] as const)('is %s from the receipt the delivery returned', async (_name, receipt, fields) => {
    const { engine } = engineWith(notify(() => effectOutput({ delivered: true }, receipt)));
    await engine.start(scriptedAgent(script), { runId: 'run-r' });
    expect(await resulted(engine, 'run-r')).toEqual([
      { call_id: 'run-r/t1/k0', tool_name: 'notify', status: 'ok', ...fields },
    ]);
  });

  it('is absent from a call whose effect is not a delivery', async () => {
    const { engine } = engineWith(
      notify(() => effectOutput({ delivered: true }, { http_status: 201, response: { replayed: false } }), 'tool.call'),
    );
    await engine.start(scriptedAgent(script), { runId: 'run-t' });
    expect(await resulted(engine, 'run-t')).toEqual([{ call_id: 'run-t/t1/k0', tool_name: 'notify', status: 'ok' }]);
  });

  it('is null while the outcome is unknown, and after the operator or a reconciliation settles it (neither says what the receiver did)', async () => {
    for (const how of ['operator', 'reconciliation'] as const) {
      const runId = `run-${how}`;
      const { engine, effects } = engineWith(
        notify((_args, ctx) => {
          throw outcomeUnknown(ctx.operationId, 'timeout');
        }),
      );
      expect(await engine.start(scriptedAgent(script), { runId })).toMatchObject({
        waiting_for: { kind: 'resolution' },
      });
      if (how === 'operator')
        await engine.resolve(runId, `${runId}/t1/k0`, { kind: 'committed', resultJson: '{"delivered":true}' });
      else {
        await effects.reconcile(`${runId}:t1:k0`, async () => ({ status: 'committed', receipt: { found: true } }));
        await engine.resume(runId);
      }
      const settled =
        how === 'operator' ? { status: 'ok', resolution: 'committed' } : { status: 'ok', settled_by: 'effect_owner' };
      expect(await resulted(engine, runId)).toEqual([
        {
          call_id: `${runId}/t1/k0`,
          tool_name: 'notify',
          status: 'mutation_uncertain',
          delivery_result: null,
          duplicate_of: null,
        },
        { call_id: `${runId}/t1/k0`, tool_name: 'notify', ...settled, delivery_result: null, duplicate_of: null },
      ]);
    }
  });
});
