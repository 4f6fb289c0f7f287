/**
 * The model-provider contract. The engine speaks only its own provider-neutral history; a provider
 * turns one request into one response. Contract:
 * - `generate` is called once per model turn; the engine persists the response before acting on it.
 * - A provider must not mutate `request.messages`.
 * - Failures throw; the engine fails the run with the error's LoopxError code (e.g.
 *   `script_exhausted`), or `model_failed` for any other error.
 * - Tool call ids are assigned by the engine (run-scoped), never by the provider, so providers
 *   return calls without ids.
 */
import type { ComponentIdentity, Message, ModelRef } from '../../snapshot/index.js';
import type { JsonValue, ToolDefinition } from '../tools.js';

export interface ModelRequest {
  readonly runId: string;
  readonly turn: number;
  /** Run-scoped id of this model call, derived from (run id, turn, index). */
  readonly modelCallId: string;
  readonly model: ModelRef;
  readonly messages: readonly Message[];
  readonly tools: readonly ToolDefinition[];
  readonly signal?: AbortSignal;
  /**
   * Text of the response as it arrives, for a provider that streams (informational: what the run
   * records is the whole response `generate` returns). Never called after `generate` settles.
   */
  readonly onText?: (delta: string) => void;
}

export interface ModelToolCall {
  readonly toolName: string;
  /** Parsed arguments; the engine validates them against the tool's JSON Schema. */
  readonly arguments: JsonValue;
}

export interface ModelResponse {
  /** Assistant text (may be empty when the model only calls tools). */
  readonly text: string;
  readonly toolCalls: readonly ModelToolCall[];
  /** Provider-reported usage: recorded with the response, debited and counted against the run's budget; not part of the snapshot. */
  readonly usage?: { readonly inputTokens?: number; readonly outputTokens?: number };
}

export interface ModelProvider {
  /** Matches `ModelRef.provider` of the agent definitions it serves. */
  readonly name: string;
  readonly identity?: ComponentIdentity;
  generate(request: ModelRequest): Promise<ModelResponse>;
}
