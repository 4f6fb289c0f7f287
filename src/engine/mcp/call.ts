/**
 * Calls of launched MCP tools: the plan tool for each declared tool, its effect description and
 * how a call's end becomes a result, a definite error or an unknown outcome.
 *
 * Rules it keeps:
 * - A call on a connection known to be closed is refused before anything is sent
 *   (`mcp_server_unavailable`): a definite failure, even for a mutating tool.
 * - A result with `isError: true` is the tool's own, definite error (`mcp_tool_error`).
 * - A mutating call that ends any other way — the connection closed or the server died while it
 *   was pending, it timed out, the server answered with a protocol error, the result did not parse
 *   or failed its output schema — may have taken effect: it throws the effect owner's
 *   `effect_outcome_unknown`, so the engine records it uncertain and never runs it again.
 *   A non-mutating call that ends so throws `mcp_call_failed`. A stdio server that dies ends its
 *   pending calls at once; over HTTP a server that dies mid-call is noticed at the call's timeout.
 *   No call waits past its timeout.
 * - A mutating call carries its idempotency key to the server in the request's `_meta`
 *   (`loopx/idempotency_key`), the same key under every dispatch of the same operation.
 * - The effect's target is `mcp:<server>/<tool>` (public-safe); its intent is the server, the tool
 *   and the arguments, private to the effect owner.
 * - Results are JSON: text parts as text, structured content as it came; binary data (images,
 *   audio, blobs) is described by type, MIME type and size, never passed on.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { effect as effectOwner } from '../../owners/index.js';
import type { EffectIntent, JsonValue, Tool, ToolContext } from '../tools.js';
import { callFailed, serverUnavailable, toolReportedError, type CallFailure } from './errors.js';
import type { McpSdk } from './sdk.js';
import type { McpStaticTool } from './static.js';

/** The `_meta` key a mutating call's idempotency key travels under. */
export const IDEMPOTENCY_META_KEY = 'loopx/idempotency_key';

/** A live connection to one server, as its tools see it. */
export interface McpConnection {
  readonly server: string;
  readonly client: Client;
  /** False once the connection closed (stopped, or the server died); it never opens again. */
  readonly open: boolean;
}

type Args = { readonly [k: string]: JsonValue };
type CallResult = Awaited<ReturnType<Client['callTool']>>;

/** A mutating call's effect: kind `mcp.call`, a public-safe target, the arguments private to the effect owner. */
export const mcpEffectOf = (server: string, tool: string, args: Args): EffectIntent => ({
  kind: 'mcp.call',
  target: `mcp:${server}/${tool}`,
  intent: { server, tool, arguments: args },
});

/** The plan tool of one declared tool on a live connection. */
export function mcpTool(sdk: McpSdk, conn: McpConnection, declared: McpStaticTool, callTimeoutMs: number): Tool {
  const { server, tool, definition, identity } = declared;
  const failureOf = (e: unknown): CallFailure => failureOfCall(sdk, e);
  const send = async (args: Args, meta: { [k: string]: string } | undefined): Promise<CallResult> =>
    conn.client.callTool(
      { name: tool, arguments: args as { [k: string]: unknown }, ...(meta ? { _meta: meta } : {}) },
      undefined,
      { timeout: callTimeoutMs },
    );
  if (!definition.mutating) {
    return {
      definition,
      identity,
      async execute(args) {
        if (!conn.open) throw serverUnavailable(server, tool);
        let result: CallResult;
        try {
          result = await send(args, undefined);
        } catch (e) {
          throw callFailed(server, tool, failureOf(e), e);
        }
        return resultOf(server, tool, result);
      },
    };
  }
  return {
    definition,
    identity,
    describeEffect: (args) => mcpEffectOf(server, tool, args),
    async execute(args, ctx) {
      if (!conn.open) throw serverUnavailable(server, tool);
      let result: CallResult;
      try {
        result = await send(args, { [IDEMPOTENCY_META_KEY]: idempotencyKeyOf(ctx) });
      } catch (e) {
        // Sent, or perhaps sent: whatever ended it, the server may have acted.
        throw effectOwner.outcomeUnknown(ctx.operationId, `mcp_${failureOf(e)}`);
      }
      return resultOf(server, tool, result);
    },
  };
}

/** The key the effect owner recorded for this operation; the operation id when a caller ran the tool outside the engine. */
const idempotencyKeyOf = (ctx: ToolContext): string => ctx.effect?.idempotency_key ?? ctx.operationId;

function failureOfCall(sdk: McpSdk, e: unknown): CallFailure {
  if (e instanceof sdk.McpError) {
    if (e.code === sdk.ErrorCode.ConnectionClosed) return 'connection_closed';
    if (e.code === sdk.ErrorCode.RequestTimeout) return 'timeout';
    return 'error_response';
  }
  if (e instanceof Error && e.name === 'ZodError') return 'result_invalid';
  return 'call_failed';
}

/** A result as the model sees it, or the tool's own error. */
function resultOf(server: string, tool: string, r: CallResult): JsonValue {
  const content = Array.isArray(r.content) ? (r.content as unknown[]) : [];
  if (r.isError === true) throw toolReportedError(server, tool, firstLine(content));
  const out: { [k: string]: JsonValue } = { content: content.map(partOf) };
  if (r.structuredContent !== undefined) out.structured_content = r.structuredContent as JsonValue;
  // A server on the protocol's first version answers with `toolResult` instead of content.
  if ('toolResult' in r && r.toolResult !== undefined) out.tool_result = r.toolResult as JsonValue;
  return out;
}

function firstLine(content: unknown[]): string {
  const text = content
    .map((p) => (isPart(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : ''))
    .find((t) => t.trim() !== '');
  return text === undefined ? '(no message)' : text.trim().split('\n')[0]!.slice(0, 300);
}

type Part = { readonly type: string; readonly [k: string]: unknown };
const isPart = (p: unknown): p is Part =>
  typeof p === 'object' && p !== null && typeof (p as { type?: unknown }).type === 'string';
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const base64Bytes = (data: unknown): number => (typeof data === 'string' ? Buffer.byteLength(data, 'base64') : 0);

function partOf(p: unknown): JsonValue {
  if (!isPart(p)) return { type: 'unknown' };
  const optional = (k: string, v: string | undefined): { [k: string]: JsonValue } =>
    v === undefined ? {} : { [k]: v };
  switch (p.type) {
    case 'text':
      return { type: 'text', text: str(p.text) ?? '' };
    case 'image':
    case 'audio':
      return { type: p.type, ...optional('mime_type', str(p.mimeType)), bytes: base64Bytes(p.data) };
    case 'resource_link':
      return {
        type: p.type,
        ...optional('uri', str(p.uri)),
        ...optional('name', str(p.name)),
        ...optional('mime_type', str(p.mimeType)),
      };
    case 'resource': {
      const r = (typeof p.resource === 'object' && p.resource !== null ? p.resource : {}) as { [k: string]: unknown };
      const body: { [k: string]: JsonValue } =
        typeof r.text === 'string' ? { text: r.text } : { bytes: base64Bytes(r.blob) };
      return { type: p.type, ...optional('uri', str(r.uri)), ...optional('mime_type', str(r.mimeType)), ...body };
    }
    default:
      return { type: p.type };
  }
}
