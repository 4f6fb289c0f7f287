/**
 * Launching the real MCP servers from npm over stdio: the declared tools are checked against what
 * each server lists and called through the plan tools; a server that does not offer a declared
 * tool as declared is refused and stopped; environment references reach the server and nothing
 * else of the host's environment does.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonValue } from '../../../src/engine/index.js';
import {
  launchMcpServers,
  mcpStaticTools,
  parseMcpServers,
  type McpServerDeclaration,
  type McpSession,
} from '../../../src/engine/mcp/index.js';
import { expectCode } from '../engine-support.js';
import {
  alive,
  ECHO,
  EVERYTHING_BIN,
  FILESYSTEM_BIN,
  everything,
  filesystem,
  GET_ENV,
  GET_SUM,
  LIST_DIRECTORY,
  READ_TEXT_FILE,
  toolContext,
  WRITE_FILE,
} from './support.js';

const sessions: McpSession[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function launch(
  decls: McpServerDeclaration[],
  options: Parameters<typeof launchMcpServers>[1] = {},
): Promise<McpSession> {
  const session = await launchMcpServers(parseMcpServers(decls), options);
  sessions.push(session);
  return session;
}

const tool = (session: McpSession, name: string) => {
  const t = session.tools.find((x) => x.definition.name === name);
  if (!t) throw new Error(`no tool ${name}`);
  return t;
};

const text = (result: unknown): string => ((result as { content: { text: string }[] }).content[0] ?? { text: '' }).text;

describe('launching MCP servers', () => {
  it('exposes the declared tools of server-everything, with the static definitions and identities, and calls echo', async () => {
    const decls = [everything([ECHO, GET_SUM])];
    const session = await launch(decls);
    expect(session.tools.map((t) => t.definition.name)).toEqual(['everything.echo', 'everything.get-sum']);
    const statics = mcpStaticTools(parseMcpServers(decls));
    expect(session.tools.map((t) => [t.definition, t.identity])).toEqual(
      statics.map((s) => [s.definition, s.identity]),
    );
    const result = await tool(session, 'everything.echo').execute({ message: 'hello' }, toolContext('r1/t1/k0'));
    expect(result).toEqual({ content: [{ type: 'text', text: 'Echo: hello' }] });
  });

  it('tools the server offers beyond the declaration are not exposed', async () => {
    const session = await launch([everything([ECHO])]);
    expect(session.tools.map((t) => t.definition.name)).toEqual(['everything.echo']);
  });

  it('a declared tool whose input schema differs from the server\u2019s is refused, and the server is stopped', async () => {
    const changed = { ...GET_SUM, input_schema: { ...GET_SUM.input_schema, required: ['a'] } };
    const pids: number[] = [];
    const e = await expectCode(
      launchMcpServers(parseMcpServers([everything([ECHO, changed])]), {
        onServerStarted: (_s, pid) => pids.push(pid),
      }),
      'mcp_tool_contract_changed',
    );
    expect(e.details).toEqual({ server: 'everything', tool: 'get-sum', difference: 'input_schema', at: '/required' });
    expect(pids).toHaveLength(1);
    expect(alive(pids[0]!)).toBe(false);
  });

  it('a declared tool the server does not offer is refused, and every server of the launch is stopped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-'));
    dirs.push(dir);
    const missing = { ...ECHO, name: 'no-such-tool' };
    const pids: number[] = [];
    const e = await expectCode(
      launchMcpServers(parseMcpServers([filesystem(dir, [LIST_DIRECTORY]), everything([missing])]), {
        onServerStarted: (_s, pid) => pids.push(pid),
      }),
      'mcp_tool_contract_changed',
    );
    expect(e.details).toEqual({ server: 'everything', tool: 'no-such-tool', difference: 'missing' });
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(alive(pid)).toBe(false);
  });

  it('a command that names no executable file is refused before anything starts', async () => {
    const decl = {
      name: 'nothing',
      transport: { type: 'stdio' as const, command: join(tmpdir(), 'loopx-no-such-mcp-server') },
      tools: [ECHO],
    };
    const e = await expectCode(launchMcpServers(parseMcpServers([decl])), 'mcp_executable_not_found');
    expect(e.details).toEqual({ server: 'nothing', reason: 'missing' });
  });

  it('an executable that does not start is refused as a launch failure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-'));
    dirs.push(dir);
    const script = join(dir, 'server');
    writeFileSync(script, '#!/loopx-no-such-interpreter\n', { mode: 0o755 });
    const decl = { name: 'nothing', transport: { type: 'stdio' as const, command: script }, tools: [ECHO] };
    const e = await expectCode(launchMcpServers(parseMcpServers([decl])), 'mcp_launch_failed');
    expect(e.details).toEqual({ server: 'nothing', reason: 'spawn_failed' });
  });

  it('an environment reference reaches the server; its value never appears in a refusal, and the host environment is not passed on', async () => {
    const environment = {
      ...process.env,
      LOOPX_MCP_TEST_TOKEN: 'tok-4f2a-secret',
      LOOPX_MCP_TEST_OTHER: 'not-declared',
    };
    const decl = everything([GET_ENV], {
      transport: {
        type: 'stdio',
        command: EVERYTHING_BIN,
        args: ['stdio'],
        env: { API_TOKEN: 'env:LOOPX_MCP_TEST_TOKEN' },
      },
    });
    const session = await launch([decl], { environment });
    const env = JSON.parse(text(await tool(session, 'everything.get-env').execute({}, toolContext('r1/t1/k0')))) as {
      [k: string]: string;
    };
    expect(env.API_TOKEN).toBe('tok-4f2a-secret');
    expect(env.LOOPX_MCP_TEST_OTHER).toBeUndefined();

    const e = await expectCode(
      launchMcpServers(parseMcpServers([decl]), { environment: { PATH: process.env.PATH } }),
      'mcp_env_missing',
    );
    expect(e.details).toEqual({ server: 'everything', variable: 'LOOPX_MCP_TEST_TOKEN' });
    expect(JSON.stringify(e.toJSON())).not.toContain('tok-4f2a');
  });

  it('the filesystem server is confined to its directory: reads inside it work, a read outside is the tool\u2019s own error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-'));
    const outside = mkdtempSync(join(tmpdir(), 'loopx-mcp-outside-'));
    dirs.push(dir, outside);
    writeFileSync(join(dir, 'note.txt'), 'inside\n');
    writeFileSync(join(outside, 'secret.txt'), 'outside\n');
    const session = await launch([filesystem(dir, [LIST_DIRECTORY, READ_TEXT_FILE, WRITE_FILE])]);
    const ctx = toolContext('r1/t1/k0');
    expect(text(await tool(session, 'fs.list_directory').execute({ path: dir }, ctx))).toContain('[FILE] note.txt');
    const read = (await tool(session, 'fs.read_text_file').execute({ path: join(dir, 'note.txt') }, ctx)) as {
      [k: string]: JsonValue;
    };
    expect(read.structured_content).toEqual({ content: 'inside\n' });
    const e = await expectCode(
      Promise.resolve(tool(session, 'fs.read_text_file').execute({ path: join(outside, 'secret.txt') }, ctx)),
      'mcp_tool_error',
    );
    expect(e.details).toEqual({ server: 'fs', tool: 'read_text_file' });

    const write = tool(session, 'fs.write_file');
    expect(write.definition.mutating).toBe(true);
    expect(await write.describeEffect!({ path: join(dir, 'new.txt'), content: 'x' }, ctx)).toMatchObject({
      kind: 'mcp.call',
      target: 'mcp:fs/write_file',
    });
    await write.execute({ path: join(dir, 'new.txt'), content: 'written\n' }, toolContext('r1/t1/k1', 'idem:r1:t1:k1'));
    expect(readFileSync(join(dir, 'new.txt'), 'utf8')).toBe('written\n');
  });

  it('a relative working directory is resolved against the base directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-mcp-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'here.txt'), 'x');
    const decl = {
      ...filesystem('.', [LIST_DIRECTORY]),
      transport: { type: 'stdio' as const, command: FILESYSTEM_BIN, args: ['.'], cwd: 'sub/..' },
    };
    const session = await launch([decl], { baseDir: dir });
    expect(text(await tool(session, 'fs.list_directory').execute({ path: dir }, toolContext('r1/t1/k0')))).toContain(
      '[FILE] here.txt',
    );
  });

  it('after close, the servers are gone and a call is refused before anything is sent', async () => {
    const pids: number[] = [];
    const session = await launch([everything([ECHO, GET_SUM])], { onServerStarted: (_s, pid) => pids.push(pid) });
    expect(session.servers).toEqual([{ name: 'everything', pid: pids[0] }]);
    await session.close();
    expect(session.closed).toBe(true);
    expect(alive(pids[0]!)).toBe(false);
    await expectCode(
      Promise.resolve(tool(session, 'everything.echo').execute({ message: 'x' }, toolContext('r1/t1/k0'))),
      'mcp_server_unavailable',
    );
    await expectCode(
      Promise.resolve(tool(session, 'everything.get-sum').execute({ a: 1, b: 2 }, toolContext('r1/t1/k1', 'k'))),
      'mcp_server_unavailable',
    );
    await session.close();
  });
});
