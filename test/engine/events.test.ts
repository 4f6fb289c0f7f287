/**
 * Event subscription: from any cursor, events arrive in sequence order with no gap and no
 * duplicate while a run writes — in this process or from another one — and a cursor past the head
 * waits for the events beyond it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  builtinApplication,
  defineAgent,
  openEngine,
  openReadOnlyEngine,
  type RunEvent,
} from '../../src/engine/index.js';
import { loopxChild, tempRoot } from '../support/cli.js';
import { testAuthority } from './engine-support.js';

const TURNS = 120;
const longAgent = {
  id: 'test.long',
  version: '1.0.0',
  model: { provider: 'scripted', model_id: 'scripted-v1' },
  turn_limit: TURNS + 1,
  tool_plan: 'loopx.builtin.v1',
  script: [
    ...Array.from({ length: TURNS }, (_, i) => ({
      text: `step ${i}`,
      tool_calls: [{ name: 'math.add', arguments: { a: i, b: 1 } }],
    })),
    { text: 'finished' },
  ],
};

const assertContiguous = (events: RunEvent[], from: number): void => {
  events.forEach((e, i) => expect(e.sequence).toBe(from + i));
};

describe('run event subscription', () => {
  it('delivers every event of a run written by another process in order, with no gap or duplicate', async () => {
    const root = tempRoot();
    const agentFile = join(root, '..', 'long.json');
    writeFileSync(agentFile, JSON.stringify(longAgent));
    // A reader, as `loopx run events --follow` is: the writer is the other process.
    const engine = openReadOnlyEngine({ root, application: builtinApplication(root) });
    try {
      const writer = loopxChild(['run', 'start', '--agent', agentFile, '--root', root, '--json']);
      // Wait until the writer has created the run (its first commit), then subscribe from cursor 0.
      let runId: string | undefined;
      while (!runId) {
        runId = (await engine.list())[0]?.run_id;
        if (!runId) await new Promise((r) => setTimeout(r, 10));
      }
      const seen: RunEvent[] = [];
      let midRun = false;
      for await (const e of engine.events(runId, { after: 0, follow: 'while-active', pollMs: 5 })) {
        seen.push(e);
        if (e.sequence === 10) midRun = (await engine.show(runId)).status === 'active';
      }
      const result = await writer;
      expect(result.status).toBe(0);
      expect(midRun).toBe(true); // the subscription really overlapped the writer
      assertContiguous(seen, 1);
      expect(seen.at(-1)!.type).toBe('Completed');
      expect(seen.at(-1)!.sequence).toBe((await engine.show(runId)).last_sequence);
      expect(seen.filter((e) => e.type === 'TurnCompleted')).toHaveLength(TURNS + 1);
    } finally {
      engine.close();
    }
  }, 60_000);

  it('a subscription from a middle cursor starts right after it', async () => {
    const root = tempRoot();
    const engine = openEngine({ root, application: builtinApplication(root), authority: testAuthority() });
    try {
      const run = await engine.start(
        defineAgent({
          ...toDef(longAgent),
          turnLimit: 10,
          script: toDef(longAgent)
            .script!.slice(0, 3)
            .concat([{ text: 'end' }]),
        }),
      );
      const events: RunEvent[] = [];
      for await (const e of engine.events(run.run_id, { after: 7 })) events.push(e);
      assertContiguous(events, 8);
      expect(events.at(-1)!.sequence).toBe(run.last_sequence);
    } finally {
      engine.close();
    }
  });

  it('a cursor past the head waits, then delivers exactly the events beyond it', async () => {
    const engine = openEngine({ application: builtinApplication(tempRoot()), authority: testAuthority() });
    const def = defineAgent({
      ...toDef(longAgent),
      turnLimit: 10,
      script: toDef(longAgent)
        .script!.slice(0, 4)
        .concat([{ text: 'end' }]),
    });
    const suspended = await engine.start(def, { suspendAfterTurns: 1 });
    expect(suspended.status).toBe('suspended');
    const cursor = suspended.last_sequence + 3;
    const ac = new AbortController();
    const it = engine
      .events(suspended.run_id, { after: cursor, follow: 'forever', signal: ac.signal, pollMs: 1_000 })
      [Symbol.asyncIterator]();
    let delivered: RunEvent | undefined;
    const next = it.next().then((r) => (delivered = r.value as RunEvent));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(delivered).toBeUndefined(); // nothing past the head yet: the subscriber waits

    await engine.resume(suspended.run_id); // writes Resumed, TurnStarted, … past the cursor
    await next;
    expect(delivered!.sequence).toBe(cursor + 1);
    const rest: RunEvent[] = [delivered!];
    for (;;) {
      const r = await it.next();
      rest.push(r.value as RunEvent);
      if ((r.value as RunEvent).type === 'Completed') break;
    }
    ac.abort();
    assertContiguous(rest, cursor + 1);
    engine.close();
  });
});

function toDef(file: typeof longAgent) {
  return {
    id: file.id,
    version: file.version,
    model: { provider: file.model.provider, modelId: file.model.model_id },
    turnLimit: file.turn_limit,
    toolPlan: file.tool_plan,
    script: file.script.map((s) => ({ text: s.text, ...('tool_calls' in s ? { toolCalls: s.tool_calls } : {}) })),
  };
}
