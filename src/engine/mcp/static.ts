/**
 * The static side of MCP servers in a tool plan: tool definitions and component identities read
 * from the declarations alone — no process is started and nothing is reached over the network.
 *
 * Rules it keeps:
 * - Each declared tool is one `static_tool` component named `<server>.<tool>`, module
 *   `mcp:<server>`. Its version is the digest of the server's declared transport and its source
 *   digest that of the tool's declared contract, so the plan identity changes whenever a tool's
 *   schema, description or mutating flag, or the server's command, arguments, working directory,
 *   URL or environment references change.
 * - Only declarations enter an identity: environment and header references by name, never a value
 *   (values are read at launch only, and never here).
 * - The launched tools carry exactly these definitions and identities, so a plan's identity is the
 *   same whether read statically or from a live lease.
 */
import { canonicalJson, sha256Hex } from '../../core/index.js';
import type { ComponentIdentity } from '../../snapshot/index.js';
import type { ToolDefinition } from '../tools.js';
import { mcpToolName, parseMcpServers, type McpServerDeclaration, type McpToolDeclaration } from './declaration.js';

/** The version of how loopx maps a declared MCP tool to a plan tool; a change of the mapping is a new identity. */
const MAPPING = 'loopx.mcp/v1';

/** One declared tool as the plan sees it: its definition and its component identity. */
export interface McpStaticTool {
  readonly server: string;
  /** The tool's name on the server. */
  readonly tool: string;
  readonly definition: ToolDefinition;
  readonly identity: ComponentIdentity;
}

/** The server's declared transport as it enters the identity: references by name, never a value. */
export function transportDigest(decl: McpServerDeclaration): string {
  const t = decl.transport;
  const declared =
    t.type === 'stdio' ? { type: t.type, command: t.command, args: t.args ?? [], env: t.env ?? {}, cwd: t.cwd ?? null } : { type: t.type, url: t.url, headers: t.headers ?? {} };
  return sha256Hex(canonicalJson({ domain: `${MAPPING}/transport`, server: decl.name, transport: declared }));
}

/** The definition a declared tool has in the plan. */
export function definitionOf(server: string, tool: McpToolDeclaration): ToolDefinition {
  return { name: mcpToolName(server, tool.name), description: tool.description ?? '', inputSchema: tool.input_schema, mutating: tool.mutating !== false };
}

/** SHA-256 of a declared tool's canonical contract. */
export function contractDigest(server: string, tool: McpToolDeclaration): string {
  const d = definitionOf(server, tool);
  return sha256Hex(canonicalJson({ domain: `${MAPPING}/tool`, server, tool: tool.name, description: d.description, input_schema: d.inputSchema, mutating: d.mutating }));
}

/** The definitions and component identities of every declared tool, in declaration order (declarations not parsed yet are parsed first). */
export function mcpStaticTools(declarations: readonly McpServerDeclaration[]): McpStaticTool[] {
  return parseMcpServers(declarations).flatMap((decl) => {
    const version = `sha256:${transportDigest(decl)}`;
    return decl.tools.map((tool) => {
      const definition = definitionOf(decl.name, tool);
      return {
        server: decl.name,
        tool: tool.name,
        definition,
        identity: { kind: 'static_tool', name: definition.name, module: `mcp:${decl.name}`, version, sourceSha256: contractDigest(decl.name, tool) },
      };
    });
  });
}
