/**
 * The static side of MCP servers in a tool plan: tool definitions and component identities read
 * from the declarations and each stdio server's pinned executable — no process is started and
 * nothing is reached over the network.
 *
 * Rules it keeps:
 * - A plan is made once (`planMcpServers`): each stdio server's executable is found, resolved to
 *   its real path and hashed then (executable.ts), and a relative `command` or `cwd` is taken in
 *   the base directory fixed then — the given one, else the current directory at that moment.
 *   The launch uses what the plan holds and resolves nothing again.
 * - Each declared tool is one `static_tool` component named `<server>.<tool>`, module
 *   `mcp:<server>`. Its version is the digest of the server's declared transport and its source
 *   digest that of the tool's declared contract, so the plan identity changes whenever a tool's
 *   schema, description or mutating flag, or the server's command, arguments, working directory,
 *   URL or environment references change — and, for a stdio server, whenever its executable
 *   resolves to another real path or has other bytes.
 * - Only declarations and the pin enter an identity: environment and header references by name,
 *   never a value (values are read at launch only, and never here); the real path inside the
 *   digest only, never in clear.
 * - The launched tools carry exactly these definitions and identities, so a plan's identity is the
 *   same whether read statically or from a live lease.
 */
import { resolve } from 'node:path';
import { canonicalJson, sha256Hex } from '../../core/index.js';
import type { ComponentIdentity } from '../../snapshot/index.js';
import type { ToolDefinition } from '../tools.js';
import { mcpToolName, parseMcpServers, type McpServerDeclaration, type McpToolDeclaration } from './declaration.js';
import { pinExecutable, type McpExecutable } from './executable.js';

/**
 * The version of how loopx maps a declared MCP tool to a plan tool; a change of the mapping is a
 * new identity. v2: a stdio server's transport binds its executable's real path and SHA-256.
 */
const MAPPING = 'loopx.mcp/v2';

/** One declared tool as the plan sees it: its definition and its component identity. */
export interface McpStaticTool {
  readonly server: string;
  /** The tool's name on the server. */
  readonly tool: string;
  readonly definition: ToolDefinition;
  readonly identity: ComponentIdentity;
}

/** How a plan is made from declarations. */
export interface McpPlanOptions {
  /** Where `PATH` is read to find a bare command (as are references at launch); default `process.env`. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** The directory a relative declared `command` or `cwd` is resolved against; default the current directory when the plan is made. */
  readonly baseDir?: string;
}

/** Declared servers as a plan holds them, fixed when it was made. */
export interface McpPlannedServers {
  readonly declarations: readonly McpServerDeclaration[];
  /** Per server, in declaration order: a stdio server's pinned executable; undefined over HTTP. */
  readonly executables: readonly (McpExecutable | undefined)[];
  /** The absolute directory a relative `cwd` is resolved against. */
  readonly baseDir: string;
}

/** Make a plan of the declared servers: parse them, pin every stdio executable; throws `mcp_declaration_invalid` or `mcp_executable_not_found`. */
export function planMcpServers(
  declarations: readonly McpServerDeclaration[],
  options: McpPlanOptions = {},
): McpPlannedServers {
  const decls = parseMcpServers(declarations);
  const baseDir = resolve(options.baseDir ?? '.');
  const path = (options.environment ?? process.env).PATH;
  const executables = decls.map((d) =>
    d.transport.type === 'stdio' ? pinExecutable(d.name, d.transport.command, { baseDir, path }) : undefined,
  );
  return Object.freeze({ declarations: decls, executables: Object.freeze(executables), baseDir });
}

/** The server's transport as it enters the identity: references by name, never a value; a stdio server's pinned executable. */
export function transportDigest(decl: McpServerDeclaration, executable: McpExecutable | undefined): string {
  const t = decl.transport;
  const declared =
    t.type === 'stdio'
      ? {
          type: t.type,
          command: t.command,
          args: t.args ?? [],
          env: t.env ?? {},
          cwd: t.cwd ?? null,
          executable: executable ? { real_path: executable.realPath, sha256: executable.sha256 } : null,
        }
      : { type: t.type, url: t.url, headers: t.headers ?? {} };
  return sha256Hex(canonicalJson({ domain: `${MAPPING}/transport`, server: decl.name, transport: declared }));
}

/** The definition a declared tool has in the plan. */
export function definitionOf(server: string, tool: McpToolDeclaration): ToolDefinition {
  return {
    name: mcpToolName(server, tool.name),
    description: tool.description ?? '',
    inputSchema: tool.input_schema,
    mutating: tool.mutating !== false,
  };
}

/** SHA-256 of a declared tool's canonical contract. */
export function contractDigest(server: string, tool: McpToolDeclaration): string {
  const d = definitionOf(server, tool);
  return sha256Hex(
    canonicalJson({
      domain: `${MAPPING}/tool`,
      server,
      tool: tool.name,
      description: d.description,
      input_schema: d.inputSchema,
      mutating: d.mutating,
    }),
  );
}

/** The definitions and component identities of every tool of a plan, in declaration order. */
export function staticToolsOf(planned: McpPlannedServers): McpStaticTool[] {
  return planned.declarations.flatMap((decl, i) => {
    const version = `sha256:${transportDigest(decl, planned.executables[i])}`;
    return decl.tools.map((tool) => {
      const definition = definitionOf(decl.name, tool);
      return {
        server: decl.name,
        tool: tool.name,
        definition,
        identity: {
          kind: 'static_tool',
          name: definition.name,
          module: `mcp:${decl.name}`,
          version,
          sourceSha256: contractDigest(decl.name, tool),
        },
      };
    });
  });
}

/** The definitions and component identities of every declared tool, planned now (see `planMcpServers`). */
export const mcpStaticTools = (
  declarations: readonly McpServerDeclaration[],
  options: McpPlanOptions = {},
): McpStaticTool[] => staticToolsOf(planMcpServers(declarations, options));
