/**
 * The built-in application the `loopx` command runs agents with: the scripted provider, the AI SDK
 * providers (`openai`, `anthropic`, `openai-compatible`) and the `loopx.builtin.v1` tool plan. Its compatibility identity is loopx's version, and every component
 * carries the SHA-256 of its built source, so only an engine built from the same code accepts
 * its snapshots.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, faultPoint, LOOPX_VERSION, PACKAGE_ROOT } from '../core/index.js';
import { parseAgentDefinition, type AgentDefinition } from './agent.js';
import type { ComponentIdentity } from '../snapshot/index.js';
import { defineApplication, type Application } from './application.js';
import { sourceIdentityOf } from './identity.js';
import { SDK_PROVIDER_KINDS } from './providers/catalog.js';
import { SCRIPTED_PROVIDER, SCRIPTED_PROVIDER_MODULE } from './providers/scripted.js';
import { goalWorkToolPlan, type LifetimeGuard } from './goal-tools.js';
import type { Tool, ToolPlan } from './tools.js';

export const BUILTIN_TOOL_PLAN = 'loopx.builtin.v1';
export const BUILTIN_COMPATIBILITY = `loopx.builtin/${LOOPX_VERSION}`;
/** Fault point (tests only): after a mutating built-in tool's effect happened, before its outcome is recorded. */
export const FAULT_AFTER_MUTATING_DISPATCH = 'engine.tool.after-mutating-dispatch';

let cachedSource: string | undefined;
const source = (): string => (cachedSource ??= sourceIdentityOf(import.meta.url));

const identity = (kind: ComponentIdentity['kind'], name: string): ComponentIdentity => ({
  kind,
  name,
  module: 'loopx/engine/builtin',
  version: LOOPX_VERSION,
  sourceSha256: source(),
});

/** `math.add`, a pure tool, under the identity of the plan that offers it (the built-in plan, the cluster's). */
export const mathAddTool = (id: ComponentIdentity): Tool => ({
  definition: {
    name: 'math.add',
    description: 'Add two numbers.',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['a', 'b'],
      properties: { a: { type: 'number' }, b: { type: 'number' } },
    },
    mutating: false,
  },
  identity: id,
  execute: (args) => ({ sum: (args.a as number) + (args.b as number) }),
});

export function builtinToolPlan(root: string): ToolPlan {
  const tools: Tool[] = [
    mathAddTool(identity('static_tool', 'math.add')),
    {
      definition: {
        name: 'outbox.append',
        description:
          'Append a message to the root outbox (an external side effect: recorded as intent before and outcome after).',
        inputSchema: {
          type: 'object',
          additionalProperties: false,
          required: ['message'],
          properties: { message: { type: 'string', maxLength: 4096 } },
        },
        mutating: true,
      },
      identity: identity('static_tool', 'outbox.append'),
      // Journalled by the engine in the root's effect owner, in the run's scope, like every mutating call.
      describeEffect: (args) => ({
        kind: 'outbox.append',
        target: 'file:outbox.jsonl',
        intent: { message: args.message as string },
      }),
      execute: (args, ctx) => {
        const path = join(root, 'outbox.jsonl');
        const fd = openSync(path, 'a', 0o600);
        try {
          appendFileSync(fd, canonicalJson({ call_id: ctx.callId, message: args.message as string }) + '\n');
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
        faultPoint(FAULT_AFTER_MUTATING_DISPATCH);
        return { delivered: true };
      },
    },
    {
      definition: {
        name: 'human.ask',
        description: 'Ask the operator a question; the run waits for `loopx run answer`.',
        inputSchema: {
          type: 'object',
          additionalProperties: false,
          required: ['interaction_id', 'prompt'],
          properties: {
            interaction_id: { type: 'string', pattern: '^[a-zA-Z0-9_.:-]{1,128}$' },
            prompt: { type: 'string', maxLength: 4096 },
          },
        },
        mutating: false,
      },
      identity: identity('static_tool', 'human.ask'),
      execute: (args, ctx) => ctx.requestInteraction(args.interaction_id as string, args.prompt as string),
    },
  ];
  return { id: BUILTIN_TOOL_PLAN, tools };
}

/**
 * The agents shipped in the package's examples/agents/ (what `loopx demo` and the README run),
 * read only when an import needs a definition; a file that does not parse is simply not one of them.
 */
function shippedAgent(identity: { readonly id: string; readonly version: string }): AgentDefinition | undefined {
  if (!PACKAGE_ROOT) return undefined;
  const dir = join(PACKAGE_ROOT, 'examples', 'agents');
  if (!existsSync(dir)) return undefined;
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    let def: AgentDefinition;
    try {
      def = parseAgentDefinition(JSON.parse(readFileSync(join(dir, f), 'utf8')));
    } catch {
      continue;
    }
    if (def.id === identity.id && def.version === identity.version) return def;
  }
  return undefined;
}

/** The built-in application: the scripted provider, the AI SDK providers, the built-in tools and the Goal work tools. */
export function builtinApplication(root: string, guard?: LifetimeGuard): Application {
  return defineApplication({
    agents: shippedAgent,
    providerKinds: SDK_PROVIDER_KINDS,
    compatibilityIdentity: BUILTIN_COMPATIBILITY,
    toolPlans: [builtinToolPlan(root), goalWorkToolPlan(root, guard)],
    // Static schemas, compiled by test/engine/builtin-schemas.test.ts: a read (`run show`) loads no Ajv.
    compileToolSchemas: 'on_first_call',
    scriptedProviderIdentity: {
      ...identity('provider', SCRIPTED_PROVIDER),
      module: 'loopx/engine/providers/scripted',
      sourceSha256: sourceIdentityOf(SCRIPTED_PROVIDER_MODULE),
    },
  });
}
