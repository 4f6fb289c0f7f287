/**
 * How an MCP call ends, as the engine's journal of mutating calls reads it: a result is committed;
 * the tool's own `isError` is a definite failure; a server killed mid-call, a timeout, a closed
 * session or a protocol error leave a mutating call's outcome unknown — uncertain, never re-run —
 * and a pending call never hangs. A mutating call carries its idempotency key in `_meta`.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Tool } from '../../../src/engine/index.js';
import { outcomeOfOutput, outcomeOfThrow } from '../../../src/engine/mutations.js';
import { IDEMPOTENCY_META_KEY, type McpServerDeclaration, type McpSession } from '../../../src/engine/mcp/index.js';
import { expectCode } from '../engine-support.js';
import { alive, ECHO, everything, LONG_RUNNING, toolContext, closeLaunched, launch } from './support.js';

afterEach(closeLaunched);

const tool = (session: McpSession, name: string): Tool => session.tools.find((x) => x.definition.name === name)!;
const settled = (p: unknown): Promise<unknown> => Promise.resolve(p);

/** A call that cannot finish by itself (the server sleeps ten minutes in it). */
const forever = { duration: 600, steps: 600 };

/**
 * Start a long call and return once the server is known to be in it: an echo sent after it on the
 * same (ordered) connection has been answered, so the server has read the long call's request.
 */
async function pendingLongCall(
  session: McpSession,
  name: string,
  callId: string,
): Promise<{ readonly pending: Promise<unknown> }> {
  const pending = settled(tool(session, name).execute(forever, toolContext(callId, `idem:${callId}`)));
  pending.catch(() => {}); // awaited by the caller; not an unhandled rejection meanwhile
  await tool(session, 'everything.echo').execute({ message: 'after' }, toolContext('r1/t9/k0'));
  return { pending }; // wrapped: an async function returning the promise itself would wait for it
}

const RECORD_SERVER = join(import.meta.dirname, 'fixtures', 'record-server.mjs');
const noteSchema = { type: 'object', properties: { note: { type: 'string' } }, required: ['note'] };
const recordServer = (): McpServerDeclaration => ({
  name: 'rec',
  transport: { type: 'stdio', command: process.execPath, args: [RECORD_SERVER] },
  tools: [
    { name: 'record', input_schema: noteSchema },
    { name: 'refuse', input_schema: noteSchema },
    { name: 'explode', input_schema: noteSchema },
  ],
});

describe('MCP call outcomes', () => {
  it('a server killed mid-call leaves a mutating call uncertain (effect_outcome_unknown), and later calls are refused unsent', async () => {
    const pids: number[] = [];
    const session = await launch([everything([ECHO, LONG_RUNNING])], { onServerStarted: (_s, pid) => pids.push(pid) });
    const { pending } = await pendingLongCall(session, 'everything.trigger-long-running-operation', 'r1/t1/k0');
    process.kill(pids[0]!, 'SIGKILL');
    const e = await expectCode(pending, 'effect_outcome_unknown');
    expect(e.details).toEqual({ operation_id: 'r1:t1:k0', reason: 'mcp_connection_closed' });
    expect(outcomeOfThrow('everything.trigger-long-running-operation', e)).toMatchObject({
      state: 'uncertain',
      status: 'mutation_uncertain',
      effect: { outcome: 'unknown' },
    });
    await expect.poll(() => alive(pids[0]!)).toBe(false);
    const refused = await expectCode(
      settled(
        tool(session, 'everything.trigger-long-running-operation').execute(forever, toolContext('r1/t2/k0', 'k')),
      ),
      'mcp_server_unavailable',
    );
    expect(outcomeOfThrow('x', refused)).toMatchObject({ state: 'failed', effect: { outcome: 'rejected' } });
  });

  it('a server killed mid-call fails a read-only call with mcp_call_failed', async () => {
    const pids: number[] = [];
    const readOnly = { ...LONG_RUNNING, mutating: false };
    const session = await launch([everything([ECHO, readOnly])], { onServerStarted: (_s, pid) => pids.push(pid) });
    const { pending } = await pendingLongCall(session, 'everything.trigger-long-running-operation', 'r1/t1/k0');
    process.kill(pids[0]!, 'SIGKILL');
    const e = await expectCode(pending, 'mcp_call_failed');
    expect(e.details).toEqual({
      server: 'everything',
      tool: 'trigger-long-running-operation',
      reason: 'connection_closed',
    });
  });

  it('closing the session ends a pending mutating call as an unknown outcome', async () => {
    const session = await launch([everything([ECHO, LONG_RUNNING])]);
    const { pending } = await pendingLongCall(session, 'everything.trigger-long-running-operation', 'r1/t1/k0');
    await session.close();
    expect((await expectCode(pending, 'effect_outcome_unknown')).details?.reason).toBe('mcp_connection_closed');
  });

  it('a call past its timeout ends — unknown when mutating, mcp_call_failed when not', async () => {
    const readOnly = { ...LONG_RUNNING, mutating: false };
    const mutating = await launch([everything([LONG_RUNNING])], { callTimeoutMs: 200 });
    const e = await expectCode(
      settled(
        tool(mutating, 'everything.trigger-long-running-operation').execute(forever, toolContext('r1/t1/k0', 'k')),
      ),
      'effect_outcome_unknown',
    );
    expect(e.details?.reason).toBe('mcp_timeout');
    const plain = await launch([everything([readOnly])], { callTimeoutMs: 200 });
    const f = await expectCode(
      settled(tool(plain, 'everything.trigger-long-running-operation').execute(forever, toolContext('r1/t1/k1'))),
      'mcp_call_failed',
    );
    expect(f.details?.reason).toBe('timeout');
  });

  it('a mutating call sends its idempotency key in _meta, and its result is committed', async () => {
    const session = await launch([recordServer()]);
    const record = tool(session, 'rec.record');
    expect(record.definition.mutating).toBe(true);
    const out = await record.execute({ note: 'n1' }, toolContext('r1/t1/k0', 'idem:r1:t1:k0'));
    expect(out).toEqual({
      content: [{ type: 'text', text: 'n1' }],
      structured_content: { meta: { [IDEMPOTENCY_META_KEY]: 'idem:r1:t1:k0' } },
    });
    expect(outcomeOfOutput(out)).toMatchObject({ state: 'committed', status: 'ok' });
  });

  it('the tools of every listed page are found (a server that paginates its tool list)', async () => {
    const session = await launch([recordServer()]);
    expect(session.tools.map((t) => t.definition.name)).toEqual(['rec.record', 'rec.refuse', 'rec.explode']);
  });

  it('an isError result is a definite failure; a protocol error leaves a mutating call unknown', async () => {
    const session = await launch([recordServer()]);
    const e = await expectCode(
      settled(tool(session, 'rec.refuse').execute({ note: 'n2' }, toolContext('r1/t1/k1', 'k1'))),
      'mcp_tool_error',
    );
    expect(e.message).toContain('refused: n2');
    expect(e.message).not.toContain('second line');
    expect(outcomeOfThrow('rec.refuse', e)).toMatchObject({
      state: 'failed',
      status: 'error',
      effect: { outcome: 'rejected' },
    });
    const u = await expectCode(
      settled(tool(session, 'rec.explode').execute({ note: 'n3' }, toolContext('r1/t1/k2', 'k2'))),
      'effect_outcome_unknown',
    );
    expect(u.details?.reason).toBe('mcp_error_response');
  });
});
