/**
 * Component identities and PlanIdentity (RFC 0007): what a snapshot records about the code that
 * produced it, so that another engine can refuse to continue a run it cannot faithfully execute.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { canonicalJson, sha256Hex } from '../core/index.js';
import type { ComponentIdentity, PlanIdentity } from '../snapshot/index.js';
import type { ToolDefinition } from './tools.js';

export type { ComponentIdentity, ComponentKind, PlanIdentity } from '../snapshot/index.js';
export { COMPONENT_KINDS, compareComponents, componentSortKey } from '../snapshot/index.js';
import { compareComponents } from '../snapshot/index.js';

/** SHA-256 of a module's built source, given its `import.meta.url`. */
export const sourceIdentityOf = (moduleUrl: string): string => sha256Hex(readFileSync(fileURLToPath(moduleUrl)));

export function computePlanIdentity(input: {
  components: readonly ComponentIdentity[];
  toolPlanId: string;
  compatibilityIdentity: string;
  tools: readonly ToolDefinition[];
}): PlanIdentity {
  const components = [...input.components].sort(compareComponents);
  const tools = [...input.tools]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema, mutating: t.mutating }));
  const fingerprint = sha256Hex(
    canonicalJson({
      domain: 'loopx.plan-identity/v1',
      components: components.map((c) => ({
        kind: c.kind,
        name: c.name,
        module: c.module,
        version: c.version,
        source_sha256: c.sourceSha256,
      })),
      tool_plan_id: input.toolPlanId,
      compatibility_identity: input.compatibilityIdentity,
      tools,
    }),
  );
  return { components, toolPlanId: input.toolPlanId, compatibilityIdentity: input.compatibilityIdentity, fingerprint };
}
