/**
 * A server reached over Streamable HTTP (server-everything in its HTTP mode, on a loopback port):
 * its declared tools are checked and called as over stdio, a header reference is resolved at
 * launch, and a server that is not there is a launch failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  launchMcpServers,
  parseMcpServers,
  type McpServerDeclaration,
  type McpSession,
} from '../../../src/engine/mcp/index.js';
import { expectCode } from '../engine-support.js';
import { ECHO, EVERYTHING_BIN, GET_SUM, toolContext } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A port free at the time of asking. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** server-everything over HTTP, returned once it says it listens (its stderr line is the latch). */
async function httpServer(): Promise<number> {
  const port = await freePort();
  const child: ChildProcess = spawn(EVERYTHING_BIN, ['streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  cleanups.push(async () => {
    const gone = new Promise<void>((r) => child.once('close', () => r()));
    child.kill('SIGKILL');
    await gone;
  });
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    child.stderr!.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes('listening on port')) resolve();
    });
    child.once('close', () => reject(new Error(`the HTTP server stopped: ${seen}`)));
  });
  return port;
}

const declaration = (port: number): McpServerDeclaration => ({
  name: 'remote',
  transport: {
    type: 'http',
    url: `http://127.0.0.1:${port}/mcp`,
    headers: { 'X-Loopx-Test': 'env:LOOPX_MCP_TEST_HEADER' },
  },
  tools: [ECHO, GET_SUM],
});

describe('MCP servers over Streamable HTTP', () => {
  it('a declared server is reached, checked and called over HTTP', async () => {
    const port = await httpServer();
    const session: McpSession = await launchMcpServers(parseMcpServers([declaration(port)]), {
      environment: { LOOPX_MCP_TEST_HEADER: 'h-value' },
    });
    cleanups.push(() => session.close());
    expect(session.servers).toEqual([{ name: 'remote', pid: null }]);
    const echo = session.tools.find((t) => t.definition.name === 'remote.echo')!;
    expect(await echo.execute({ message: 'over http' }, toolContext('r1/t1/k0'))).toEqual({
      content: [{ type: 'text', text: 'Echo: over http' }],
    });

    const elsewhere = {
      ...declaration(port),
      transport: { type: 'http' as const, url: `http://127.0.0.1:${port}/not-mcp` },
    };
    const e = await expectCode(launchMcpServers(parseMcpServers([elsewhere])), 'mcp_launch_failed');
    expect(e.details).toEqual({ server: 'remote', reason: 'http_error', http_status: 404 });
  });

  it('a missing header reference refuses the launch, and a server that is not there is a launch failure', async () => {
    const port = await freePort();
    await expectCode(launchMcpServers(parseMcpServers([declaration(port)]), { environment: {} }), 'mcp_env_missing');
    const e = await expectCode(
      launchMcpServers(parseMcpServers([declaration(port)]), { environment: { LOOPX_MCP_TEST_HEADER: 'h' } }),
      'mcp_launch_failed',
    );
    expect(e.details).toEqual({ server: 'remote', reason: 'unreachable' });
  });
});
