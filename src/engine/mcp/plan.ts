/**
 * A tool plan over declared MCP servers that an application can register before anything runs:
 * its tools are the static definitions and identities, and the servers are launched on the first
 * call, once for all tools of the plan.
 *
 * Rules it keeps:
 * - The plan is made when it is created: every stdio server's executable is pinned then (its real
 *   path and SHA-256 are in the tools' identities), and every launch of the plan — the first and
 *   any after `close()` — launches those files, each checked unchanged before anything is spawned.
 * - Registering, leasing and computing the plan identity start nothing (static side only).
 * - One launch at a time: concurrent first calls share it. A launch that fails closed refuses the
 *   call with its typed refusal — nothing was sent, so a mutating call fails definitely — and the
 *   next call launches again.
 * - A server that stops is not restarted behind the plan: its tools refuse calls until the plan is
 *   closed; the call after `close()` launches every server anew.
 */
import type { Tool, ToolPlan } from '../tools.js';
import { mcpEffectOf } from './call.js';
import type { McpServerDeclaration } from './declaration.js';
import { launchPlanned, type McpLaunchOptions, type McpSession } from './launch.js';
import { planMcpServers, staticToolsOf } from './static.js';

export interface McpToolPlan {
  readonly plan: ToolPlan;
  /** The live session, launching it if none is (what the first call does). */
  session(): Promise<McpSession>;
  /** Stop the servers, if launched; idempotent. The next call launches again. */
  close(): Promise<void>;
}

/** A tool plan of the declared servers' tools, launched on first use; throws `mcp_declaration_invalid` or `mcp_executable_not_found`. */
export function mcpToolPlan(
  id: string,
  declarations: readonly McpServerDeclaration[],
  options: McpLaunchOptions = {},
): McpToolPlan {
  const planned = planMcpServers(declarations, options);
  let launching: Promise<McpSession> | undefined;
  const session = (): Promise<McpSession> => {
    launching ??= launchPlanned(planned, options).catch((e: unknown) => {
      launching = undefined;
      throw e;
    });
    return launching;
  };
  const tools: Tool[] = staticToolsOf(planned).map((s, i) => {
    const live = async (): Promise<Tool> => (await session()).tools[i]!;
    const tool: Tool = {
      definition: s.definition,
      identity: s.identity,
      execute: async (args, ctx) => (await live()).execute(args, ctx),
    };
    if (!s.definition.mutating) return tool;
    // The effect is described without a launch: it depends on the declaration only.
    return { ...tool, describeEffect: (args) => mcpEffectOf(s.server, s.tool, args) };
  });
  return {
    plan: { id, tools },
    session,
    async close() {
      const current = launching;
      launching = undefined;
      if (current) await (await current.catch(() => undefined))?.close();
    },
  };
}
