/**
 * `loopx run start` with an agent that declares an MCP server (examples/agents/mcp-everything.json,
 * run as its documentation says: from the repository root): the server's tools are called over
 * stdio and their results reach the model; a declaration the file gets wrong is refused as an
 * invalid agent definition before anything starts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loopxAsync, tempRoot } from '../support/cli.js';

const EXAMPLE = 'examples/agents/mcp-everything.json';

describe('an agent with an MCP server', () => {
  it('runs the example: both server tools answer, and the run completes', async () => {
    const root = tempRoot();
    const started = await loopxAsync(['run', 'start', '--agent', EXAMPLE, '--root', root, '--json']);
    expect(started.status, started.stderr).toBe(0);
    expect(started.json()).toMatchObject({ status: 'completed', completed_turns: 3 });

    const events = await loopxAsync(['run', 'events', started.json().run_id, '--root', root, '--json']);
    const resulted = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> })
      .filter((e) => e.type === 'ToolResulted')
      .map((e) => [e.data.tool_name, e.data.status]);
    expect(resulted).toEqual([
      ['everything.echo', 'ok'],
      ['everything.get-sum', 'ok'],
    ]);
  });

  it('refuses a declaration with an unknown field as an invalid agent definition (exit 3)', async () => {
    const root = tempRoot();
    const file = join(dirname(root), 'bad-mcp.json');
    const agent = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as { mcp_servers: Array<Record<string, unknown>> };
    agent.mcp_servers[0]!.token = 'not allowed';
    writeFileSync(file, JSON.stringify(agent));

    const r = await loopxAsync(['run', 'start', '--agent', file, '--root', root, '--json']);

    expect(r.status).toBe(3);
    expect(r.json()).toMatchObject({ error: { code: 'agent_definition_invalid' } });
    expect(String(r.json().error.message)).toContain('/mcp_servers/0');
  });
});
