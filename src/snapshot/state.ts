/**
 * The run state a v1alpha2 snapshot carries — exactly what RFC 0007 lists, nothing more — and the
 * provider-neutral message history it is made of. loopx owns these shapes; model adapters map
 * them to and from their SDK's types. Tool arguments and results are kept as canonical JSON text
 * so that the same history always has the same bytes. Pure data: no functions, handles, clients.
 */

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface TextPart {
  readonly type: 'text';
  readonly text: string;
}

export interface ToolCallPart {
  readonly type: 'tool_call';
  readonly callId: string;
  readonly toolName: string;
  /** Canonical JSON (RFC 8785) of the arguments object. */
  readonly argumentsJson: string;
}

/**
 * The state of a tool call's result. Only `ok` and `error` are settled; the other two are the
 * states a run is in while it waits, and a snapshot refuses them.
 */
export type ToolResultStatus = 'ok' | 'error' | 'interaction_pending' | 'mutation_uncertain';

export interface ToolResultPart {
  readonly type: 'tool_result';
  readonly callId: string;
  readonly toolName: string;
  readonly status: ToolResultStatus;
  /** Canonical JSON of the result value (for `interaction_pending`: `{"interaction_id":…,"prompt":…}`). */
  readonly resultJson: string;
}

export type Part = TextPart | ToolCallPart | ToolResultPart;

export interface Message {
  /** Run-scoped id derived from (run id, turn, index) — see `messageId`. */
  readonly id: string;
  readonly role: Role;
  readonly parts: readonly Part[];
}

/** Which part types each role may carry. */
export const ALLOWED_PARTS: Readonly<Record<Role, ReadonlyArray<Part['type']>>> = {
  system: ['text'],
  user: ['text'],
  assistant: ['text', 'tool_call'],
  tool: ['tool_result'],
};

export type ComponentKind = 'provider' | 'stage' | 'observer' | 'broker' | 'static_tool' | 'decorator';
export const COMPONENT_KINDS: readonly ComponentKind[] = [
  'provider',
  'stage',
  'observer',
  'broker',
  'static_tool',
  'decorator',
];

export interface ComponentIdentity {
  readonly kind: ComponentKind;
  /** The component's name within its kind (tool name, provider name, …). */
  readonly name: string;
  readonly module: string;
  readonly version: string;
  /** Lowercase hex SHA-256 of the component's built source. */
  readonly sourceSha256: string;
}

export interface PlanIdentity {
  /** Sorted by `componentSortKey`; no duplicates. */
  readonly components: readonly ComponentIdentity[];
  readonly toolPlanId: string;
  /** Empty for runs of convenience engines: such exports are for inspection only. */
  readonly compatibilityIdentity: string;
  /** Lowercase hex SHA-256 over the canonical JSON of all of the above plus the leased tool definitions. */
  readonly fingerprint: string;
}

/** Total order of component identities (PlanIdentity keeps them sorted by it). */
export const componentSortKey = (c: ComponentIdentity): string =>
  [c.kind, c.name, c.module, c.version, c.sourceSha256].join('\u0000');

export const compareComponents = (a: ComponentIdentity, b: ComponentIdentity): number => {
  const ka = componentSortKey(a);
  const kb = componentSortKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
};

export type Lifecycle = 'active' | 'suspended' | 'completed' | 'failed' | 'cancelled';
/** The lifecycles a snapshot may carry: suspended at a completed turn boundary, or terminal. */
export type SnapshotLifecycle = Exclude<Lifecycle, 'active'>;
export const TERMINAL_LIFECYCLES: readonly Lifecycle[] = ['completed', 'failed', 'cancelled'];

export interface DefinitionIdentity {
  readonly id: string;
  readonly version: string;
}

export interface ModelRef {
  readonly provider: string;
  readonly modelId: string;
}

/** The content of a v1alpha2 run snapshot payload. */
export interface RunSnapshotState {
  readonly runId: string;
  readonly definition: DefinitionIdentity;
  readonly model: ModelRef;
  readonly turnLimit: number;
  readonly completedTurns: number;
  readonly messages: readonly Message[];
  readonly planIdentity: PlanIdentity;
  /** Strictly increasing (sorted, unique). */
  readonly usedInteractionIds: readonly string[];
  /** Sequence of the last committed event of the run. */
  readonly lastSequence: number;
  readonly lifecycle: Lifecycle;
}
