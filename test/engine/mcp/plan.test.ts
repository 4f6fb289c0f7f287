/**
 * A tool plan over declared MCP servers, registered before anything runs: nothing starts until a
 * call; concurrent first calls share one launch; a launch refused by the contract check fails the
 * call definitely (nothing was sent); after close, the next call launches anew.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  mcpStaticTools,
  mcpToolPlan,
  parseMcpServers,
  type McpLaunchOptions,
  type McpToolPlan,
} from '../../../src/engine/mcp/index.js';
import { call, expectCode, openTestEngine, scriptedAgent } from '../engine-support.js';
import { convenienceApplication, computePlanIdentity } from '../../../src/engine/index.js';
import { alive, ECHO, everything, GET_SUM, toolContext } from './support.js';

const plans: McpToolPlan[] = [];
afterEach(async () => {
  await Promise.all(plans.splice(0).map((p) => p.close()));
});

function plan(decls: Parameters<typeof parseMcpServers>[0], options: McpLaunchOptions = {}): McpToolPlan {
  const p = mcpToolPlan('mcp.plan', parseMcpServers(decls), options);
  plans.push(p);
  return p;
}

describe('an MCP tool plan', () => {
  it('registering it and computing its identity start nothing; the identity is the static one', () => {
    const started: number[] = [];
    const decls = [everything([ECHO, GET_SUM])];
    const p = plan(decls, { onServerStarted: (_s, pid) => started.push(pid) });
    const app = convenienceApplication({ toolPlans: [p.plan] });
    const identity = app.planIdentityFor(scriptedAgent([], { toolPlan: 'mcp.plan' }));
    const statics = mcpStaticTools(parseMcpServers(decls));
    expect(identity.fingerprint).toBe(
      computePlanIdentity({
        components: statics.map((s) => s.identity),
        toolPlanId: 'mcp.plan',
        compatibilityIdentity: '',
        tools: statics.map((s) => s.definition),
      }).fingerprint,
    );
    expect(started).toEqual([]);
  });

  it('concurrent first calls share one launch, and after close the next call launches anew', async () => {
    const started: number[] = [];
    const p = plan([everything([ECHO])], { onServerStarted: (_s, pid) => started.push(pid) });
    const echo = p.plan.tools[0]!;
    const [a, b] = await Promise.all([
      echo.execute({ message: 'a' }, toolContext('r/t1/k0')),
      echo.execute({ message: 'b' }, toolContext('r/t1/k1')),
    ]);
    expect([a, b]).toEqual([
      { content: [{ type: 'text', text: 'Echo: a' }] },
      { content: [{ type: 'text', text: 'Echo: b' }] },
    ]);
    expect(started).toHaveLength(1);
    await p.close();
    expect(alive(started[0]!)).toBe(false);
    await echo.execute({ message: 'c' }, toolContext('r/t2/k0'));
    expect(started).toHaveLength(2);
  });

  it('a launch refused by the contract check fails a mutating call definitely, and the run goes on', async () => {
    const changed = { ...GET_SUM, input_schema: { ...GET_SUM.input_schema, required: ['b'] } };
    const p = plan([everything([changed])]);
    await expectCode(p.session(), 'mcp_tool_contract_changed');
    const engine = openTestEngine('memory', convenienceApplication({ toolPlans: [p.plan] }));
    const agent = scriptedAgent([{ toolCalls: [call('everything.get-sum', { a: 1, b: 2 })] }, { text: 'done' }], {
      toolPlan: 'mcp.plan',
    });
    const view = await engine.start(agent, { runId: 'run-refused' });
    expect(view.status).toBe('completed');
    const [m] = await engine.mutations('run-refused');
    expect(m).toMatchObject({ state: 'failed' });
    expect(JSON.parse(m!.resultJson!)).toMatchObject({ error: 'mcp_tool_contract_changed' });
  });
});
