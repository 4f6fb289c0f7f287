/**
 * MCP tools in a run, through the engine's journal of mutating calls: a mutating MCP call is
 * journalled, carries the effect owner's idempotency key to the server and commits; a server
 * killed while the call is pending leaves it uncertain, the run waiting for resolution, and it is
 * not re-run on resume.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Tool, ToolContext } from '../../../src/engine/index.js';
import type { McpServerDeclaration } from '../../../src/engine/mcp/index.js';
import type { ToolResultPart } from '../../../src/snapshot/index.js';
import { call, latch, localApp, openTestEngine, scriptedAgent } from '../engine-support.js';
import { ECHO, everything, LONG_RUNNING, toolContext, closeLaunched, launch } from './support.js';

afterEach(closeLaunched);

const noteSchema = { type: 'object', properties: { note: { type: 'string' } }, required: ['note'] };
const recordServer: McpServerDeclaration = {
  name: 'rec',
  transport: {
    type: 'stdio',
    command: process.execPath,
    args: [join(import.meta.dirname, 'fixtures', 'record-server.mjs')],
  },
  tools: [{ name: 'record', input_schema: noteSchema }],
};

describe('MCP tools in a run', () => {
  it('a mutating MCP call is journalled, sends the effect owner\u2019s idempotency key and commits', async () => {
    const session = await launch([recordServer]);
    const engine = openTestEngine('memory', localApp(session.tools));
    const view = await engine.start(
      scriptedAgent([{ toolCalls: [call('rec.record', { note: 'hello' })] }, { text: 'done' }]),
      { runId: 'run-mcp' },
    );
    expect(view.status).toBe('completed');
    const [m] = await engine.mutations('run-mcp');
    expect(m).toMatchObject({ callId: 'run-mcp/t1/k0', toolName: 'rec.record', state: 'committed' });
    expect(JSON.parse(m!.resultJson!)).toEqual({
      content: [{ type: 'text', text: 'hello' }],
      structured_content: { meta: { 'loopx/idempotency_key': 'idem:run-mcp:t1:k0' } },
    });
  });

  it('a server killed while a mutating call is pending leaves the call uncertain, and resume does not re-run it', async () => {
    const pids: number[] = [];
    const session = await launch([everything([ECHO, LONG_RUNNING])], { onServerStarted: (_s, pid) => pids.push(pid) });
    const entered = latch();
    let calls = 0;
    // The call's request is written when execute is entered (synchronously); an echo answered after it proves the server read it.
    const tools: Tool[] = session.tools.map((t) => ({
      ...t,
      execute: (args, ctx: ToolContext) => {
        if (t.definition.mutating) {
          calls++;
          entered.open();
        }
        return t.execute(args, ctx);
      },
    }));
    const engine = openTestEngine('memory', localApp(tools));
    const script = [
      { toolCalls: [call('everything.trigger-long-running-operation', { duration: 600, steps: 600 })] },
      { text: 'done' },
    ];
    const running = engine.start(scriptedAgent(script), { runId: 'run-kill' });
    await entered.wait();
    await session.tools[0]!.execute({ message: 'after' }, toolContext('x/t1/k0'));
    process.kill(pids[0]!, 'SIGKILL');
    const view = await running;

    expect(view).toMatchObject({ status: 'active', waiting_for: { kind: 'resolution', call_ids: ['run-kill/t1/k0'] } });
    expect(await engine.mutations('run-kill')).toMatchObject([{ state: 'uncertain' }]);
    const result = (await engine.messages('run-kill')).find((msg) => msg.role === 'tool')!.parts[0] as ToolResultPart;
    expect(result.status).toBe('mutation_uncertain');
    expect(await engine.resume('run-kill')).toEqual(view);
    expect(calls).toBe(1);
  });
});
