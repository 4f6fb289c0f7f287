/**
 * Public API of MCP servers in a tool plan: declarations (file form, schema, parse), the static
 * side (definitions and identities, each stdio executable pinned; nothing started) and the dynamic
 * side (launch what was pinned, fail closed).
 */
export {
  MCP_SERVER_DECLARATION_SCHEMA,
  mcpToolName,
  parseMcpServer,
  parseMcpServers,
  type McpHttpTransport,
  type McpServerDeclaration,
  type McpStdioTransport,
  type McpToolDeclaration,
} from './declaration.js';
export { mcpStaticTools, type McpPlanOptions, type McpStaticTool } from './static.js';
export { launchMcpServers, type McpLaunchOptions, type McpSession } from './launch.js';
export { IDEMPOTENCY_META_KEY } from './call.js';
export { mcpToolPlan, type McpToolPlan } from './plan.js';
export type { CallFailure, ContractDifference, ExecutableChange, ExecutableFault, LaunchFailure } from './errors.js';
