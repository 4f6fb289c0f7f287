/**
 * MCP servers declared in an agent file, run by the built-in application (what the `loopx` command
 * uses) with the real npm servers over stdio: the declared tools join the agent's tool plan and its
 * identity; a run that calls them suspends, is exported, imported into another root and resumed
 * there; a server whose tools differ from the declaration is refused before the run is created; a
 * changed declaration is refused at import, before anything is launched.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  builtinApplication,
  defineAgent,
  openEngine,
  type AgentDefinition,
  type Engine,
  type RunEvent,
} from '../../../src/engine/index.js';
import type { McpServerDeclaration } from '../../../src/engine/mcp/index.js';
import { LocalRunAuthority } from '../../../src/run-authority/index.js';
import { expectCode, expectThrowsCode, privateDir } from '../engine-support.js';
import { ECHO, GET_SUM, WRITE_FILE, everything, filesystem } from './support.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function world() {
  const base = privateDir('loopx-mcp-agent-');
  const authorityDir = join(base, 'authority');
  return (name: string): Engine => {
    const root = join(base, name);
    const authority = LocalRunAuthority.open({ dir: authorityDir, create: true });
    const engine = openEngine({ root, application: builtinApplication(root), authority });
    cleanups.push(async () => {
      engine.close();
      await authority.close();
    });
    return engine;
  };
}

const agent = (servers: readonly McpServerDeclaration[], dir: string): AgentDefinition =>
  defineAgent({
    id: 'test.mcp-agent',
    version: '1.0.0',
    model: { provider: 'scripted', modelId: 'scripted-v1' },
    turnLimit: 4,
    toolPlan: 'loopx.builtin.v1',
    mcpServers: servers,
    script: [
      {
        text: 'echo, then write',
        toolCalls: [
          { name: 'everything.echo', arguments: { message: 'hello over stdio' } },
          { name: 'fs.write_file', arguments: { path: join(dir, 'note.txt'), content: 'written once' } },
        ],
      },
      { text: 'add', toolCalls: [{ name: 'everything.get-sum', arguments: { a: 19, b: 23 } }] },
      { text: 'done' },
    ],
  });

const toolResults = async (engine: Engine, runId: string) =>
  (await engine.messages(runId))
    .filter((m) => m.role === 'tool')
    .map((m) => m.parts[0]!)
    .map((p) => (p.type === 'tool_result' ? [p.toolName, p.status, p.resultJson] : []));

describe('MCP servers declared by an agent', () => {
  it('join the plan and its identity; a run calling them moves to another root and resumes there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-files-'));
    const open = world();
    const a = open('a');
    const def = agent([everything([ECHO, GET_SUM]), filesystem(dir, [WRITE_FILE])], dir);

    const started = await a.start(def, { runId: 'run-mcp', suspendAfterTurns: 1 });

    expect(started).toMatchObject({ status: 'suspended', completed_turns: 1 });
    const results = await toolResults(a, 'run-mcp');
    expect(results.map((r) => r.slice(0, 2))).toEqual([
      ['everything.echo', 'ok'],
      ['fs.write_file', 'ok'],
    ]);
    expect(results[0]![2]).toContain('hello over stdio');
    expect(readFileSync(join(dir, 'note.txt'), 'utf8')).toBe('written once');
    const signed = await a.exportEnvelope('run-mcp');
    const names = signed.state.planIdentity.components.map((c) => c.name);
    expect(names).toEqual(
      expect.arrayContaining(['everything.echo', 'everything.get-sum', 'fs.write_file', 'math.add']),
    );
    expect(signed.state.planIdentity.toolPlanId).toMatch(/^loopx\.builtin\.v1\+mcp\.[0-9a-f]{16}$/);

    const b = open('b');
    await b.importSnapshot(signed.bytes, { agent: def });
    const resumed = await b.resume('run-mcp');

    expect(resumed).toMatchObject({ status: 'completed', completed_turns: 3 });
    const moved = await toolResults(b, 'run-mcp');
    expect(moved.at(-1)!.slice(0, 2)).toEqual(['everything.get-sum', 'ok']);
    expect(moved.at(-1)![2]).toContain('42');
    const tail: RunEvent[] = [];
    for await (const e of b.events('run-mcp', { after: signed.state.lastSequence })) tail.push(e);
    // The mutating write of turn 1 was not made again.
    expect(tail.filter((e) => e.type === 'ToolCalled').map((e) => e.data.tool_name)).toEqual(['everything.get-sum']);
  });

  it('refuses to start a run whose server lists a tool differently from its declaration, storing nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-files-'));
    const open = world();
    const a = open('a');
    const changed = {
      ...ECHO,
      input_schema: {
        ...ECHO.input_schema,
        properties: { ...(ECHO.input_schema.properties as object), loud: { type: 'boolean' } },
        required: ['message', 'loud'],
      },
    };

    await expectCode(
      a.start(agent([everything([changed, GET_SUM]), filesystem(dir, [WRITE_FILE])], dir), { runId: 'run-changed' }),
      'mcp_tool_contract_changed',
    );

    expect(await a.list()).toEqual([]);
    expect(existsSync(join(dir, 'note.txt'))).toBe(false);
  });

  it('refuses an import whose declaration changed, before anything is launched', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-files-'));
    const open = world();
    const a = open('a');
    const def = agent([everything([ECHO, GET_SUM]), filesystem(dir, [WRITE_FILE])], dir);
    await a.start(def, { runId: 'run-pinned', suspendAfterTurns: 1 });
    const signed = await a.exportEnvelope('run-pinned');
    // Same id and version, another schema — and a command that serves nothing (it exits at once):
    // had anything been launched, the refusal would be the launch's.
    const changedSum = { ...GET_SUM, input_schema: { ...GET_SUM.input_schema, required: ['a'] } };
    const exits = { type: 'stdio' as const, command: process.execPath, args: ['-e', 'process.exit(1)'] };
    const changed = agent([everything([ECHO, changedSum], { transport: exits }), filesystem(dir, [WRITE_FILE])], dir);

    const b = open('b');
    await expectCode(b.importSnapshot(signed.bytes, { agent: changed }), 'import_definition_mismatch');
    expect(await b.list()).toEqual([]);
  });
});

describe('MCP declarations in an agent definition', () => {
  it('a declaration the schema allows but the MCP rules refuse is an invalid agent definition at its place, with the rule as the reason', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-files-'));
    const plainHttp: McpServerDeclaration = {
      name: 'remote',
      transport: { type: 'http', url: 'http://mcp.example.com/mcp' },
      tools: [ECHO],
    };
    const e = expectThrowsCode(() => agent([everything([ECHO]), plainHttp], dir), 'agent_definition_invalid');
    expect(e.message).toMatch(/^Agent definition is invalid at \/mcp_servers\/1\/transport[^:]*: /);
    expect(e.message).not.toContain('MCP server declaration is invalid');
  });
});
