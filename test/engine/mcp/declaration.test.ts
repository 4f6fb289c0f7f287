/**
 * MCP server declarations and their static side: what a declaration may say (nothing secret,
 * every tool a valid plan tool), and which changes of it are a new plan identity — a tool's
 * schema, its mutating flag, the server's command — and which are not (an environment value).
 */
import { describe, expect, it } from 'vitest';
import { computePlanIdentity, type JsonValue } from '../../../src/engine/index.js';
import {
  mcpStaticTools,
  MCP_SERVER_DECLARATION_SCHEMA,
  parseMcpServer,
  parseMcpServers,
  type McpServerDeclaration,
} from '../../../src/engine/mcp/index.js';
import { expectThrowsCode } from '../engine-support.js';
import { ECHO, everything, FILESYSTEM_BIN, GET_SUM } from './support.js';

const file = (over: { [k: string]: JsonValue } = {}): { [k: string]: JsonValue } =>
  JSON.parse(JSON.stringify({ ...everything([ECHO, GET_SUM]), ...over })) as { [k: string]: JsonValue };

const invalid = (value: unknown): { path: unknown; message: string } => {
  const e = expectThrowsCode(() => parseMcpServers([value]), 'mcp_declaration_invalid');
  expect(e.nextAction).toBeTruthy();
  return { path: e.details?.path, message: e.message };
};

const fingerprint = (decls: readonly McpServerDeclaration[]): string => {
  const tools = mcpStaticTools(decls);
  return computePlanIdentity({
    components: tools.map((t) => t.identity),
    toolPlanId: 'p',
    compatibilityIdentity: 'c',
    tools: tools.map((t) => t.definition),
  }).fingerprint;
};

describe('MCP server declarations', () => {
  it('a well-formed declaration parses, and a tool is mutating unless declared otherwise', () => {
    const [d] = parseMcpServers([file()]);
    expect(d!.name).toBe('everything');
    expect(d!.tools.map((t) => [t.name, t.mutating])).toEqual([
      ['echo', false],
      ['get-sum', true],
    ]);
    expect(MCP_SERVER_DECLARATION_SCHEMA.additionalProperties).toBe(false);
  });

  it('an unknown field is refused, at its path', () => {
    expect(invalid(file({ extra: 1 }))).toMatchObject({
      path: '/0',
      message: expect.stringContaining('additional property extra'),
    });
    const tools = [{ ...ECHO, mutating: false, secret: 'x' }];
    expect(invalid(file({ tools } as unknown as { [k: string]: JsonValue })).path).toBe('/0/tools/0');
  });

  it('a server name outside the pattern is refused', () => {
    for (const name of ['Everything', '1st', 'a.b', '', 'x'.repeat(65)])
      expect(invalid(file({ name })).path).toBe('/0/name');
  });

  it('an environment value that is not a reference to the host environment is refused', () => {
    const transport = { type: 'stdio', command: 'server', env: { API_TOKEN: 'sk-live-123' } };
    expect(invalid(file({ transport }))).toMatchObject({
      path: '/0/transport/env/API_TOKEN',
      message: expect.stringContaining('env:VAR'),
    });
    expect(invalid(file({ transport: { ...transport, env: { 'BAD NAME': 'env:X' } } })).path).toMatch(
      /^\/0\/transport/,
    );
    expect(
      parseMcpServers([file({ transport: { ...transport, env: { API_TOKEN: 'env:HOST_TOKEN' } } })])[0]!.transport,
    ).toMatchObject({ env: { API_TOKEN: 'env:HOST_TOKEN' } });
  });

  it('a URL with credentials, a query or a fragment is refused, as is plain http off loopback', () => {
    const http = (url: string) => file({ transport: { type: 'http', url } });
    expect(invalid(http('https://user:pw@mcp.example.com/mcp'))).toMatchObject({
      path: '/0/transport/url',
      message: expect.stringContaining('credentials'),
    });
    expect(invalid(http('https://mcp.example.com/mcp?api_key=abc')).message).toContain('query');
    expect(invalid(http('https://mcp.example.com/mcp#t=1')).message).toContain('fragment');
    expect(invalid(http('http://mcp.example.com/mcp')).message).toContain('https');
    expect(invalid(http('not a url')).path).toBe('/0/transport/url');
    expect(
      invalid(
        file({
          transport: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer abc' } },
        }),
      ).path,
    ).toBe('/0/transport/headers/Authorization');
    expect(parseMcpServer(http('http://127.0.0.1:3001/mcp')).transport).toEqual({
      type: 'http',
      url: 'http://127.0.0.1:3001/mcp',
    });
  });

  it('a transport of an unknown type, or with a field of the other type, is refused at the transport', () => {
    expect(invalid(file({ transport: { type: 'ws', url: 'wss://x' } }))).toMatchObject({ path: '/0/transport/type' });
    expect(
      invalid(file({ transport: { type: 'http', url: 'https://x.example/mcp', command: 'x' } })).message,
    ).toContain('additional property command');
  });

  it('a tool declared twice, a server declared twice, or a plan name over 64 characters is refused', () => {
    expect(invalid(file({ tools: [ECHO, ECHO] } as unknown as { [k: string]: JsonValue })).path).toBe(
      '/0/tools/1/name',
    );
    const e = expectThrowsCode(() => parseMcpServers([file(), file()]), 'mcp_declaration_invalid');
    expect(e.details?.path).toBe('/1/name');
    const long = { ...ECHO, name: 't'.repeat(60) };
    expect(invalid(file({ tools: [long] } as unknown as { [k: string]: JsonValue })).message).toContain(
      'longer than 64',
    );
  });

  it('an input schema that is not an object schema, or does not compile strictly, is refused', () => {
    const withSchema = (input_schema: JsonValue) => file({ tools: [{ name: 't', input_schema }] });
    expect(invalid(withSchema({ type: 'string' })).path).toBe('/0/tools/0/input_schema/type');
    expect(invalid(withSchema({ type: 'object', properties: { a: { type: 'strnig' } } })).message).toContain(
      'strict JSON Schema',
    );
    expect(invalid(withSchema({ type: 'object', unknownKeyword: true })).path).toBe('/0/tools/0/input_schema');
  });

  it('a typed declaration obeys the same rules: the static side refuses a literal environment value too', () => {
    const typed = {
      ...everything([ECHO]),
      transport: { type: 'stdio', command: 'server', env: { TOKEN: 'sk-live-123' } },
    } as McpServerDeclaration;
    const e = expectThrowsCode(() => mcpStaticTools([typed]), 'mcp_declaration_invalid');
    expect(e.details?.path).toBe('/0/transport/env/TOKEN');
    expect(JSON.stringify(e.toJSON())).not.toContain('sk-live');
  });

  it('a parsed declaration is frozen, and the caller\u2019s objects are not', () => {
    const input = file();
    const [d] = parseMcpServers([input]);
    expect(Object.isFrozen(d!.tools[0]!.input_schema)).toBe(true);
    expect(Object.isFrozen(input)).toBe(false);
  });

  it('a list is required, and a non-object is refused', () => {
    expectThrowsCode(() => parseMcpServers({}), 'mcp_declaration_invalid');
    expect(invalid('everything').path).toBe('/0');
  });
});

describe('MCP tools in a plan identity', () => {
  const base = parseMcpServers([file()]);
  const variant = (over: { [k: string]: JsonValue }): readonly McpServerDeclaration[] => parseMcpServers([file(over)]);

  it('each declared tool is a static tool named <server>.<tool> of module mcp:<server>', () => {
    const tools = mcpStaticTools(base);
    expect(tools.map((t) => t.definition.name)).toEqual(['everything.echo', 'everything.get-sum']);
    expect(tools[0]!.identity).toMatchObject({
      kind: 'static_tool',
      name: 'everything.echo',
      module: 'mcp:everything',
    });
    expect(tools[0]!.identity.sourceSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(tools[0]!.definition).toMatchObject({
      description: ECHO.description,
      inputSchema: ECHO.input_schema,
      mutating: false,
    });
  });

  it('the identity changes when a tool schema, a mutating flag, a description or the launch command changes', () => {
    const before = fingerprint(base);
    const schema = { ...ECHO.input_schema, required: [] };
    expect(
      fingerprint(
        variant({ tools: [{ ...ECHO, input_schema: schema }, GET_SUM] } as unknown as { [k: string]: JsonValue }),
      ),
    ).not.toBe(before);
    expect(
      fingerprint(variant({ tools: [{ ...ECHO, mutating: true }, GET_SUM] } as unknown as { [k: string]: JsonValue })),
    ).not.toBe(before);
    expect(
      fingerprint(
        variant({ tools: [{ ...ECHO, description: 'other' }, GET_SUM] } as unknown as { [k: string]: JsonValue }),
      ),
    ).not.toBe(before);
    const transport = base[0]!.transport as unknown as { [k: string]: JsonValue };
    expect(fingerprint(variant({ transport: { ...transport, command: FILESYSTEM_BIN } }))).not.toBe(before);
    expect(fingerprint(variant({ transport: { ...transport, args: ['stdio', '--more'] } }))).not.toBe(before);
    expect(fingerprint(variant({ transport: { ...transport, env: { TOKEN: 'env:A' } } }))).not.toBe(
      fingerprint(variant({ transport: { ...transport, env: { TOKEN: 'env:B' } } })),
    );
  });

  it('declaring mutating: true is the same identity as leaving it out', () => {
    expect(
      fingerprint(variant({ tools: [ECHO, { ...GET_SUM, mutating: true }] } as unknown as { [k: string]: JsonValue })),
    ).toBe(fingerprint(base));
  });

  it('no environment value enters the identity: only the declared references do', () => {
    const transport = { ...(base[0]!.transport as object), env: { TOKEN: 'env:LOOPX_MCP_TEST_TOKEN' } };
    const decls = variant({ transport } as { [k: string]: JsonValue });
    const saved = process.env.LOOPX_MCP_TEST_TOKEN;
    try {
      process.env.LOOPX_MCP_TEST_TOKEN = 'first-secret-value';
      const one = mcpStaticTools(decls);
      process.env.LOOPX_MCP_TEST_TOKEN = 'second-secret-value';
      const two = mcpStaticTools(decls);
      expect(fingerprint(decls)).toBe(fingerprint(decls));
      expect(two).toEqual(one);
      expect(JSON.stringify(two)).not.toContain('secret-value');
    } finally {
      if (saved === undefined) delete process.env.LOOPX_MCP_TEST_TOKEN;
      else process.env.LOOPX_MCP_TEST_TOKEN = saved;
    }
  });
});
