/**
 * Applications: the executable parts an engine runs with — model providers, tool plans and the
 * other components — and their identities.
 *
 * - `defineApplication` (the full constructor) requires one non-empty snapshot-compatibility
 *   identity and a compiled identity for every executable component; its exports can be imported
 *   by another engine built from the same application.
 * - `convenienceApplication` leaves compatibility empty and identities optional: local
 *   suspend/resume and export for inspection work, and other engines refuse its snapshots.
 */
import { canonicalJson, notFound, rejected, sha256Hex } from '../core/index.js';
import type { ComponentIdentity, ComponentKind, PlanIdentity } from '../snapshot/index.js';
import type { AgentDefinition } from './agent.js';
import { compareComponents, computePlanIdentity } from './identity.js';
import { mcpToolPlan, type McpToolPlan } from './mcp/plan.js';
import type { ModelProviderKind } from './providers/catalog.js';
import { GOAL_FINISHER_PROVIDER, goalFinisherIdentity, goalFinisherProvider } from './providers/goal-finisher.js';
import type { ModelProvider } from './providers/provider.js';
import { SCRIPTED_PROVIDER, scriptedProvider } from './providers/scripted.js';
import { ToolPlanHost, toolPlanMissing, type ToolPlan, type ToolPlanLease } from './tools.js';

export interface Application {
  /** Empty for convenience applications. */
  readonly compatibilityIdentity: string;
  readonly toolPlans: ToolPlanHost;
  /**
   * The provider serving a definition's model, ready to be called: throws `provider_missing`, or
   * `model_credentials_missing` when its API key is not in this process's environment.
   */
  providerFor(def: AgentDefinition): ModelProvider;
  /**
   * The tool plan a run of `def` uses: its `tool_plan`, or — when it declares MCP servers — that
   * plan with the servers' declared tools, registered under a derived id on first use (static:
   * nothing is launched).
   */
  toolPlanIdFor(def: AgentDefinition): string;
  /**
   * Launch what `def`'s plan needs at run time — its MCP servers, each tool checked against its
   * declaration (fail closed: every server stopped, a typed refusal) — and hold it until released;
   * the last hold released stops the servers. Call it after the static checks. A plan without
   * servers holds nothing.
   */
  launchTools(def: AgentDefinition): Promise<ToolsHold>;
  /** Whether `name` is one of this application's provider kinds (whose settings live only in the agent file). */
  providerKind(name: string): boolean;
  /** How a failed model call is retried inside its turn. */
  readonly modelRetry: ModelRetryPolicy;
  /** The PlanIdentity a run of `def` gets in this application (leases the plan briefly). */
  planIdentityFor(def: AgentDefinition): PlanIdentity;
  /** The PlanIdentity recomputed from a live lease of the plan (import). */
  planIdentityFromLease(def: AgentDefinition, lease: ToolPlanLease): PlanIdentity;
  /**
   * The sorted component identities a run of `def` would record — read from static declarations
   * only, without leasing or launching anything (import's static compatibility check).
   */
  staticComponentsFor(def: AgentDefinition): ComponentIdentity[];
  /** An agent definition this application ships, by identity (import resolves definitions here). */
  agent(identity: { readonly id: string; readonly version: string }): AgentDefinition | undefined;
}

/** A retryable model failure is retried `attempts - 1` times, waiting the provider's retry-after or `baseDelayMs × 2^n`, at most `maxDelayMs`. */
export interface ModelRetryPolicy {
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_MODEL_RETRY: ModelRetryPolicy = { attempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000 };

/** A hold on a plan's launched servers (Application.launchTools); release it once. */
export interface ToolsHold {
  release(): void;
}

export interface ApplicationSpec {
  readonly compatibilityIdentity: string;
  readonly providers?: readonly ModelProvider[];
  /** Provider kinds that make a provider per agent model (the AI SDK providers: providers/catalog.ts). */
  readonly providerKinds?: readonly ModelProviderKind[];
  readonly modelRetry?: ModelRetryPolicy;
  readonly toolPlans: readonly ToolPlan[];
  /**
   * When the tool plans' argument schemas are compiled: when the application is built (the
   * default: a schema Ajv refuses fails the build), or on each tool's first call — only for plans
   * whose schemas are static and known to compile, as the built-in application's are.
   */
  readonly compileToolSchemas?: 'at_build' | 'on_first_call';
  /** Identity of the built-in scripted provider, when agents of this application use it. */
  readonly scriptedProviderIdentity?: ComponentIdentity;
  /** Further executable components (stages, observers, brokers, decorators). */
  readonly components?: readonly ComponentIdentity[];
  /** Agent definitions the application ships: a list, or a lookup by identity. */
  readonly agents?:
    | readonly AgentDefinition[]
    | ((identity: { readonly id: string; readonly version: string }) => AgentDefinition | undefined);
}

const HEX64 = /^[0-9a-f]{64}$/;

function checkIdentity(kind: ComponentKind, name: string, identity: ComponentIdentity | undefined): ComponentIdentity {
  if (!identity) {
    throw rejected(
      'component_identity_missing',
      `The ${kind} ${name} has no compiled identity; a full application needs one for every component.`,
      {
        nextAction: 'declare module, version and source identity for the component',
      },
    );
  }
  if (identity.kind !== kind || !identity.module || !identity.version || !HEX64.test(identity.sourceSha256)) {
    throw rejected('component_identity_invalid', `The identity of ${kind} ${name} is incomplete or malformed.`, {
      nextAction: 'declare module, version and a SHA-256 source identity',
    });
  }
  return identity;
}

/** The full constructor. */
export function defineApplication(spec: ApplicationSpec): Application {
  if (!spec.compatibilityIdentity.trim()) {
    throw rejected('compatibility_identity_missing', 'A full application needs a snapshot-compatibility identity.', {
      nextAction: 'set compatibilityIdentity, or use convenienceApplication for local-only runs',
    });
  }
  for (const p of spec.providers ?? []) checkIdentity('provider', p.name, p.identity);
  for (const plan of spec.toolPlans)
    for (const t of plan.tools) checkIdentity('static_tool', t.definition.name, t.identity);
  if (spec.scriptedProviderIdentity) checkIdentity('provider', SCRIPTED_PROVIDER, spec.scriptedProviderIdentity);
  for (const c of spec.components ?? []) checkIdentity(c.kind, c.name, c);
  return build(spec, true);
}

/** The convenience constructor: compatibility stays empty. */
export function convenienceApplication(spec: Omit<ApplicationSpec, 'compatibilityIdentity'>): Application {
  return build({ ...spec, compatibilityIdentity: '' }, false);
}

/** The application's tool plans, registered with their schemas compiled when the spec says. */
function hostOf(spec: ApplicationSpec): ToolPlanHost {
  const host = new ToolPlanHost();
  const compile = spec.compileToolSchemas === 'on_first_call' ? 'on_first_call' : 'now';
  for (const plan of spec.toolPlans) host.register(plan, { compile });
  return host;
}

function build(spec: ApplicationSpec, full: boolean): Application {
  const host = hostOf(spec);
  const providers = new Map((spec.providers ?? []).map((p) => [p.name, p]));
  const kinds = new Map((spec.providerKinds ?? []).map((k) => [k.name, k]));

  // What serves a definition's model: a registered provider, a provider kind, or a built-in one
  // (scripted; goal-finisher, whose identity is its own module's and needs no declaration).
  type Source = { provider: ModelProvider } | { kind: ModelProviderKind } | { scripted: true } | { goalFinisher: true };
  const sourceOf = (def: AgentDefinition): Source => {
    const p = providers.get(def.model.provider);
    if (p) return { provider: p };
    const kind = kinds.get(def.model.provider);
    if (kind) return { kind };
    if (def.model.provider === SCRIPTED_PROVIDER) {
      if (full && !spec.scriptedProviderIdentity) checkIdentity('provider', SCRIPTED_PROVIDER, undefined);
      return { scripted: true };
    }
    if (def.model.provider === GOAL_FINISHER_PROVIDER) return { goalFinisher: true };
    throw notFound('provider_missing', `No model provider named ${def.model.provider} is configured.`, {
      nextAction: 'use an agent whose model provider this engine has',
    });
  };
  const providerFor = (def: AgentDefinition): ModelProvider => {
    const source = sourceOf(def);
    if ('provider' in source) return source.provider;
    if ('kind' in source) return source.kind.create(def.model);
    if ('goalFinisher' in source) return goalFinisherProvider(def.id);
    return scriptedProvider(def.script ?? [], spec.scriptedProviderIdentity);
  };
  // Static: no credentials are read and nothing is loaded.
  const providerIdentityOf = (def: AgentDefinition): ComponentIdentity | undefined => {
    const source = sourceOf(def);
    if ('provider' in source) return source.provider.identity;
    if ('kind' in source) return source.kind.identity(def.model);
    if ('goalFinisher' in source) return goalFinisherIdentity();
    return spec.scriptedProviderIdentity;
  };

  const { toolPlanIdFor, launchTools } = mcpPlans(host);

  const componentsOf = (def: AgentDefinition, plan: ToolPlan): ComponentIdentity[] => {
    const components: ComponentIdentity[] = [];
    const providerIdentity = providerIdentityOf(def);
    if (providerIdentity) components.push(providerIdentity);
    for (const t of plan.tools) if (t.identity) components.push(t.identity);
    components.push(...(spec.components ?? []));
    return dedupe(components).sort(compareComponents);
  };
  const fromLease = (def: AgentDefinition, lease: ToolPlanLease): PlanIdentity =>
    computePlanIdentity({
      components: componentsOf(def, lease.plan),
      toolPlanId: lease.plan.id,
      compatibilityIdentity: spec.compatibilityIdentity,
      tools: lease.plan.tools.map((t) => t.definition),
    });

  return {
    compatibilityIdentity: spec.compatibilityIdentity,
    toolPlans: host,
    providerFor,
    modelRetry: spec.modelRetry ?? DEFAULT_MODEL_RETRY,
    providerKind: (name) => kinds.has(name) && !providers.has(name),
    planIdentityFromLease: fromLease,
    toolPlanIdFor,
    launchTools,
    planIdentityFor(def) {
      const lease = host.lease(toolPlanIdFor(def));
      try {
        return fromLease(def, lease);
      } finally {
        lease.release();
      }
    },
    agent: (identity) =>
      typeof spec.agents === 'function'
        ? spec.agents(identity)
        : (spec.agents ?? []).find((a) => a.id === identity.id && a.version === identity.version),
    staticComponentsFor(def) {
      const plan = host.declared(toolPlanIdFor(def));
      if (!plan) {
        throw toolPlanMissing(def.toolPlan);
      }
      return componentsOf(def, plan);
    },
  };
}

/**
 * The tool plans of definitions that declare MCP servers: the named plan with the servers' declared
 * tools, registered on first use under `<plan>+mcp.<digest of the declarations>`; its servers are
 * launched under a lease and stopped when the plan's last lease is released.
 */
function mcpPlans(host: ToolPlanHost): Pick<Application, 'toolPlanIdFor' | 'launchTools'> {
  const plans = new Map<string, { readonly mcp: McpToolPlan; holds: number }>();
  const toolPlanIdFor = (def: AgentDefinition): string => {
    if (!def.mcpServers?.length) return def.toolPlan;
    const base = host.declared(def.toolPlan);
    if (!base) throw toolPlanMissing(def.toolPlan);
    const id = `${def.toolPlan}+mcp.${sha256Hex(canonicalJson(def.mcpServers)).slice(0, 16)}`;
    if (!host.has(id)) {
      const mcp = mcpToolPlan(id, def.mcpServers, { stderr: 'ignore' });
      host.register({ id, tools: [...base.tools, ...mcp.plan.tools] });
      plans.set(id, { mcp, holds: 0 });
    }
    return id;
  };
  return {
    toolPlanIdFor,
    async launchTools(def) {
      const entry = plans.get(toolPlanIdFor(def));
      if (!entry) return { release: () => undefined };
      entry.holds++;
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        if (--entry.holds === 0) void entry.mcp.close().catch(() => undefined);
      };
      try {
        await entry.mcp.session();
      } catch (e) {
        release();
        throw e;
      }
      return { release };
    },
  };
}

function dedupe(components: ComponentIdentity[]): ComponentIdentity[] {
  const seen = new Set<string>();
  return components.filter((c) => {
    const k = JSON.stringify([c.kind, c.name, c.module, c.version, c.sourceSha256]);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
