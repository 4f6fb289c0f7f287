/**
 * MCP server declarations: how a tool plan names an MCP server, how to reach it and the contract
 * of each tool it takes from it. The file form is snake_case and is the only form: the typed API
 * goes through the same schema (strict, unknown fields refused).
 *
 * Rules it keeps:
 * - Nothing secret is ever declared. A stdio server's environment and an HTTP server's headers
 *   are references to the host's environment (`"env:VAR"`), resolved only when the server is
 *   launched; a URL with credentials, a query or a fragment is refused (a token belongs in a
 *   header reference). Command, arguments and URL are public: they enter the plan identity.
 * - An HTTP server is reached over TLS, or over plain HTTP on a loopback host only.
 * - Each declared tool is exposed as `<server>.<tool>` (a valid tool-plan name, so at most 64
 *   characters); its input schema must compile as the tool-plan host compiles it (Ajv, strict).
 * - A tool is mutating unless declared `mutating: false`: an undeclared effect is the unsafe side.
 */
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { canonicalJson, isLoopxError } from '../../core/index.js';
import type { JsonValue } from '../tools.js';
import { declarationInvalid } from './errors.js';

export interface McpStdioTransport {
  readonly type: 'stdio';
  readonly command: string;
  readonly args?: readonly string[];
  /** Variables set in the server's environment, each a reference `env:VAR` to the host's environment. */
  readonly env?: { readonly [name: string]: string };
  readonly cwd?: string;
}

export interface McpHttpTransport {
  /** Streamable HTTP. */
  readonly type: 'http';
  readonly url: string;
  /** Request headers, each a reference `env:VAR` to the host's environment (e.g. `Authorization`). */
  readonly headers?: { readonly [name: string]: string };
}

export interface McpToolDeclaration {
  /** The tool's name on the server. */
  readonly name: string;
  readonly description?: string;
  /** The tool's input JSON Schema exactly as the server lists it (compared as canonical JSON at launch). */
  readonly input_schema: { readonly [k: string]: JsonValue };
  /** Default true. Always set in a parsed declaration. */
  readonly mutating?: boolean;
}

export interface McpServerDeclaration {
  readonly name: string;
  readonly transport: McpStdioTransport | McpHttpTransport;
  readonly tools: readonly McpToolDeclaration[];
}

const ENV_NAME = '^[A-Za-z_][A-Za-z0-9_]{0,127}$';
const ENV_REF = '^env:[A-Za-z_][A-Za-z0-9_]{0,127}$';
const HEADER_NAME = '^[A-Za-z0-9][A-Za-z0-9-]{0,127}$';

const STDIO_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'command'],
  properties: {
    type: { const: 'stdio' },
    command: { type: 'string', minLength: 1, maxLength: 4096 },
    args: { type: 'array', maxItems: 256, items: { type: 'string', maxLength: 4096 } },
    env: {
      type: 'object',
      maxProperties: 256,
      propertyNames: { pattern: ENV_NAME },
      additionalProperties: { type: 'string', pattern: ENV_REF },
    },
    cwd: { type: 'string', minLength: 1, maxLength: 4096 },
  },
} as const;

const HTTP_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['type', 'url'],
  properties: {
    type: { const: 'http' },
    url: { type: 'string', minLength: 1, maxLength: 2048 },
    headers: {
      type: 'object',
      maxProperties: 64,
      propertyNames: { pattern: HEADER_NAME },
      additionalProperties: { type: 'string', pattern: ENV_REF },
    },
  },
} as const;

/** JSON Schema of one server declaration (the file form). */
export const MCP_SERVER_DECLARATION_SCHEMA = {
  $id: 'https://loopx.dev/schemas/mcp-server-declaration.json',
  type: 'object',
  additionalProperties: false,
  required: ['name', 'transport', 'tools'],
  properties: {
    name: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,63}$' },
    transport: { oneOf: [STDIO_SCHEMA, HTTP_SCHEMA] },
    tools: {
      type: 'array',
      minItems: 1,
      maxItems: 256,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'input_schema'],
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$' },
          description: { type: 'string', maxLength: 4096 },
          input_schema: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
          mutating: { type: 'boolean' },
        },
      },
    },
  },
} as const;

/** The same name rule as the tool-plan host's. */
const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

// Loaded (Ajv is a CommonJS package: required synchronously) and compiled on first use, not at import.
let validators: { server: ValidateFunction; stdio: ValidateFunction; http: ValidateFunction; schemas: Ajv } | undefined;
function compiled(): NonNullable<typeof validators> {
  if (validators) return validators;
  const { Ajv: AjvClass } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
  const ajv = new AjvClass({ strict: true, allErrors: false });
  validators = {
    server: ajv.compile(MCP_SERVER_DECLARATION_SCHEMA),
    stdio: ajv.compile(STDIO_SCHEMA),
    http: ajv.compile(HTTP_SCHEMA),
    // A separate instance, as the tool-plan host keeps one apart for tool input schemas.
    schemas: new AjvClass({ strict: true, allErrors: false }),
  };
  return validators;
}

/** The name a declared tool has in the tool plan. */
export const mcpToolName = (server: string, tool: string): string => `${server}.${tool}`;

/** Lists this module parsed (deeply frozen): what the static and dynamic sides take without parsing again. */
const parsedLists = new WeakSet<readonly McpServerDeclaration[]>();

/** Parse a list of server declarations (file form); throws `mcp_declaration_invalid` at the first fault. */
export function parseMcpServers(value: unknown): readonly McpServerDeclaration[] {
  if (Array.isArray(value) && parsedLists.has(value)) return value as readonly McpServerDeclaration[];
  if (!Array.isArray(value)) throw declarationInvalid('/', 'must be an array of server declarations');
  const names = new Set<string>();
  const list = value.map((v, i) => {
    const decl = parseOne(v, `/${i}`);
    if (names.has(decl.name)) throw declarationInvalid(`/${i}/name`, `server ${decl.name} is declared twice`);
    names.add(decl.name);
    return decl;
  });
  parsedLists.add(deepFreeze(list));
  return list;
}

/** Parse one server declaration (file form); throws `mcp_declaration_invalid`. */
export const parseMcpServer = (value: unknown): McpServerDeclaration => deepFreeze(parseOne(value, ''));

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

function parseOne(value: unknown, at: string): McpServerDeclaration {
  const v = compiled();
  if (!v.server(value)) {
    const e = firstError(v, value);
    throw declarationInvalid(at + pointerOf(e) || '/', messageOf(e));
  }
  const d = structuredClone(value) as McpServerDeclaration; // the caller's objects stay theirs (the result is frozen)
  if (d.transport.type === 'http') checkUrl(d.transport.url, `${at}/transport/url`);
  const tools = new Set<string>();
  const parsedTools = d.tools.map((t, j): McpToolDeclaration => {
    const path = `${at}/tools/${j}`;
    if (tools.has(t.name)) throw declarationInvalid(`${path}/name`, `tool ${t.name} is declared twice`);
    tools.add(t.name);
    if (!TOOL_NAME.test(mcpToolName(d.name, t.name)))
      throw declarationInvalid(`${path}/name`, `${mcpToolName(d.name, t.name)} is longer than 64 characters`);
    checkInputSchema(t.input_schema, `${path}/input_schema`);
    return { ...t, mutating: t.mutating !== false };
  });
  return { name: d.name, transport: d.transport, tools: parsedTools };
}

/** The first schema error; a transport error is reported against the branch its `type` chose, not the whole oneOf. */
function firstError(v: NonNullable<typeof validators>, value: unknown): ErrorObject | undefined {
  const first = v.server.errors?.[0];
  const transport = (value as { transport?: { type?: unknown } }).transport;
  if (!first?.instancePath.startsWith('/transport') || typeof transport !== 'object' || transport === null)
    return first;
  const branch = transport.type === 'stdio' ? v.stdio : transport.type === 'http' ? v.http : undefined;
  if (!branch) return { ...first, instancePath: '/transport/type', message: 'must be "stdio" or "http"' };
  if (branch(transport)) return first;
  const e = branch.errors?.[0];
  return e ? { ...e, instancePath: `/transport${e.instancePath}` } : first;
}

const pointerOf = (e: ErrorObject | undefined): string => e?.instancePath ?? '';
const messageOf = (e: ErrorObject | undefined): string => {
  if (!e) return 'unknown error';
  if (e.keyword === 'additionalProperties')
    return `must NOT have additional property ${String((e.params as { additionalProperty?: unknown }).additionalProperty)}`;
  if (e.keyword === 'pattern' && /\/(env|headers)\//.test(e.instancePath))
    return 'must be a reference to the host environment, "env:VAR"';
  return e.message ?? 'unknown error';
};

function checkUrl(text: string, path: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw declarationInvalid(path, 'must be an absolute URL');
  }
  if (url.username !== '' || url.password !== '')
    throw declarationInvalid(path, 'must not carry credentials (declare an Authorization header reference instead)');
  if (url.search !== '' || url.hash !== '' || text.includes('?') || text.includes('#'))
    throw declarationInvalid(
      path,
      'must not carry a query or a fragment (they may hold secrets; declare a header reference instead)',
    );
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && LOOPBACK.has(url.hostname)) return;
  throw declarationInvalid(path, 'must use https (plain http only on a loopback host)');
}

function checkInputSchema(schema: { readonly [k: string]: JsonValue }, path: string): void {
  try {
    canonicalJson(schema);
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    throw declarationInvalid(path, 'has no canonical JSON form');
  }
  const ajv = compiled().schemas;
  try {
    ajv.compile(schema);
    ajv.removeSchema(schema); // a schema with an $id may be parsed again
  } catch (e) {
    throw declarationInvalid(
      path,
      `does not compile as a strict JSON Schema (${(e instanceof Error ? e.message : String(e)).split('\n')[0]!.slice(0, 200)})`,
    );
  }
}
