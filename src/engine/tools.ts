/**
 * Static tools, tool plans and the tool-plan host. A tool plan is an immutable set of tool
 * definitions named by a ToolPlanID; a run executes only through a live lease of its plan, and a
 * lease's release is observable (`released`, `whenReleased`). Serialized plan ids are never
 * mistaken for a lease: only `ToolPlanHost.lease` makes one.
 */
import { createRequire } from 'node:module';
import type { Ajv, ValidateFunction } from 'ajv';
import { conflict, notFound, rejected, type LoopxError } from '../core/index.js';
import { effect as effectOwner } from '../owners/index.js';
import type { ComponentIdentity } from '../snapshot/index.js';

/** A tool plan an agent or a snapshot names that no application of this engine provides. */
export const toolPlanMissing = (planId: string): LoopxError =>
  notFound('tool_plan_missing', `Tool plan ${planId} is not available in this engine.`, {
    nextAction: 'run with an application that provides this tool plan',
  });

/** A model's tool call whose arguments the tool does not take (settled as a tool error, not a refusal of the run). */
export const toolArgumentsInvalid = (toolName: string, why: string): LoopxError =>
  rejected('tool_arguments_invalid', `Arguments for ${toolName} are invalid: ${why}.`);

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  /** JSON Schema (draft 2020-12 subset Ajv understands) of the arguments object. */
  readonly inputSchema: { readonly [k: string]: JsonValue };
  /** A mutating tool changes the world; it goes through the effect owner (intent before, outcome after) and is never re-run. */
  readonly mutating: boolean;
}

/** A mutating call's effect as the effect owner journals it (recorded before anything is dispatched). */
export interface EffectIntent {
  /** The Goal the effect belongs to; omitted: the run's own scope (`run:<run id>`). */
  readonly goal_id?: string;
  /** What kind of effect, e.g. `webhook.deliver`. */
  readonly kind: string;
  /** Public-safe label of what it changes (no credentials, queries or fragments). */
  readonly target: string;
  /** What is to happen, private to the effect owner. */
  readonly intent: effectOwner.JsonValue;
  /** The logical operation's idempotency key, when the tool derives one (stable across retries and Goal lifetimes); default: one per call. */
  readonly idempotency_key?: string;
}

/** What a tool may ask of the run while it executes. */
export interface ToolContext {
  readonly runId: string;
  readonly callId: string;
  /** The effect owner's operation id of this call, derived from `callId`. */
  readonly operationId: string;
  /** A mutating call's effect as the effect owner recorded it: its intent and dispatch are durable when `execute` runs. */
  readonly effect?: effectOwner.EffectRecord;
  readonly turn: number;
  /** Ask a human. The run waits; `loopx run answer` continues it with the answer as this call's result. */
  requestInteraction(interactionId: string, prompt: string): InteractionRequest;
}

/** Returned by a tool to park its call until a human answers. */
export interface InteractionRequest {
  readonly kind: 'interaction_request';
  readonly interactionId: string;
  readonly prompt: string;
}

/** Returned by a mutating tool whose effect has a receipt (the external system's evidence) beside the result the model sees. */
export interface EffectOutput {
  readonly kind: 'effect_output';
  readonly result: JsonValue;
  readonly receipt: JsonValue;
}

export type ToolOutput = JsonValue | InteractionRequest | EffectOutput;

export interface Tool {
  readonly definition: ToolDefinition;
  readonly identity?: ComponentIdentity;
  /**
   * A mutating tool's effect, described before anything is dispatched (the engine records it in the
   * effect owner). Omitted: kind `tool.call`, target `tool:<name>`, the arguments as the intent, in
   * the run's scope. A typed refusal here refuses the call before any intent exists.
   */
  describeEffect?(args: { readonly [k: string]: JsonValue }, ctx: ToolContext): Promise<EffectIntent> | EffectIntent;
  /**
   * Runs the call. A mutating tool reports an outcome it cannot know by throwing the effect owner's
   * typed `effect_outcome_unknown`, and a refusal before acting by throwing any other typed refusal.
   */
  execute(args: { readonly [k: string]: JsonValue }, ctx: ToolContext): Promise<ToolOutput> | ToolOutput;
}

export const isInteractionRequest = (v: unknown): v is InteractionRequest =>
  typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'interaction_request';

export const effectOutput = (result: JsonValue, receipt: JsonValue): EffectOutput => ({
  kind: 'effect_output',
  result,
  receipt,
});

export const isEffectOutput = (v: unknown): v is EffectOutput =>
  typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'effect_output';

export interface ToolPlan {
  readonly id: string;
  readonly tools: readonly Tool[];
}

export interface ToolPlanLease {
  readonly plan: ToolPlan;
  readonly leaseId: number;
  readonly released: boolean;
  readonly whenReleased: Promise<void>;
  /** Validate arguments against the tool's JSON Schema; throws `tool_arguments_invalid`. */
  validateArguments(toolName: string, args: unknown): void;
  tool(name: string): Tool | undefined;
  release(): void;
}

const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$/;

/**
 * Compiled argument validators by schema text. Compiling is the costly part of building an
 * application (tens of ms, synchronous) and every engine a daemon opens builds one; a validator
 * is a pure function of its schema, so one compilation serves every host in the process.
 */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 256;
let compiler: Ajv | undefined;
/** Ajv (a CommonJS package), required on the first compilation: a command that validates no arguments never loads it. */
const newCompiler = (): Ajv => {
  const { Ajv: AjvClass } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
  return new AjvClass({ strict: true, allErrors: false });
};

function validatorFor(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = compiled.get(key);
  if (v === undefined) {
    compiler ??= newCompiler();
    v = compiler.compile(schema);
    if (compiled.size >= MAX_COMPILED) {
      compiled.clear();
      compiler = newCompiler(); // drops its own cache of the old schemas too
    }
    compiled.set(key, v);
  }
  return v;
}

export class ToolPlanHost {
  readonly #plans = new Map<string, { plan: ToolPlan; validators: Map<string, () => ValidateFunction> }>();
  readonly #live = new Set<number>();
  #nextLease = 1;

  /**
   * Registers `plan`, its argument schemas compiled now (a schema Ajv refuses fails the
   * registration) or, with `compile: 'on_first_call'`, each on its tool's first call — for plans
   * whose schemas are static and known to compile (the built-in application's, which
   * test/engine/builtin-schemas.test.ts compiles), so that a command that calls no tool (`run show`)
   * never loads Ajv.
   */
  register(plan: ToolPlan, options: { readonly compile?: 'now' | 'on_first_call' } = {}): void {
    if (this.#plans.has(plan.id)) throw conflict('tool_plan_exists', `Tool plan ${plan.id} is already registered.`);
    const validators = new Map<string, () => ValidateFunction>();
    for (const tool of plan.tools) {
      const name = tool.definition.name;
      if (!TOOL_NAME.test(name))
        throw rejected('tool_name_invalid', `Tool name ${JSON.stringify(name)} is not a valid tool name.`);
      if (validators.has(name)) throw rejected('tool_name_duplicate', `Tool plan ${plan.id} defines ${name} twice.`);
      if (options.compile === 'on_first_call') {
        let v: ValidateFunction | undefined;
        validators.set(name, () => (v ??= validatorFor(tool.definition.inputSchema)));
      } else {
        const v = validatorFor(tool.definition.inputSchema);
        validators.set(name, () => v);
      }
    }
    this.#plans.set(plan.id, { plan, validators });
  }

  has(planId: string): boolean {
    return this.#plans.has(planId);
  }

  /** The registered (static) declaration of a plan — no lease, nothing launched. */
  declared(planId: string): ToolPlan | undefined {
    return this.#plans.get(planId)?.plan;
  }

  /** Number of leases not yet released (observable release). */
  get liveLeases(): number {
    return this.#live.size;
  }

  lease(planId: string): ToolPlanLease {
    const entry = this.#plans.get(planId);
    if (!entry) {
      throw toolPlanMissing(planId);
    }
    const leaseId = this.#nextLease++;
    this.#live.add(leaseId);
    let resolveReleased!: () => void;
    const whenReleased = new Promise<void>((r) => (resolveReleased = r));
    let released = false;
    const live = this.#live;
    return {
      plan: entry.plan,
      leaseId,
      get released() {
        return released;
      },
      whenReleased,
      tool: (name) => entry.plan.tools.find((t) => t.definition.name === name),
      validateArguments(toolName, args) {
        const validatorOf = entry.validators.get(toolName);
        if (!validatorOf)
          throw rejected('tool_unknown', `The model called ${toolName}, which is not in tool plan ${planId}.`);
        const validate = validatorOf();
        if (!validate(args)) {
          const first = validate.errors?.[0];
          throw toolArgumentsInvalid(
            toolName,
            `they do not match its schema at ${first?.instancePath || '/'}${first?.message ? `: ${first.message}` : ''}`,
          );
        }
      },
      release() {
        if (released) return;
        released = true;
        live.delete(leaseId);
        resolveReleased();
      },
    };
  }
}
