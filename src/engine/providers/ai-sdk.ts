/**
 * The Vercel AI SDK adapter: any `LanguageModelV3` (from `@ai-sdk/provider`) serves as a loopx
 * ModelProvider. It owns only the mapping between loopx's provider-neutral history and the V3
 * call/result shapes; it never imports the `ai` package and never retries (the turn loop decides
 * that, from the typed failure: model-call.ts).
 *
 * Streaming (`stream: true`): one `doStream` call per `generate`; each text delta is handed to the
 * request's `onText` as it arrives, and the response is assembled from the stream's parts exactly as
 * `doGenerate`'s content would be (text deltas concatenated, `tool-call` parts, the `finish` part's
 * usage). A stream that reports an `error` part, ends without `finish`, or breaks, throws — the
 * partial response is never returned.
 *
 * Maps, request side (one `doGenerate` or `doStream` call per `generate`):
 * - system → `{ role: 'system', content }` (its text parts concatenated);
 * - user → text parts; assistant → text parts and `tool-call` parts (`toolCallId` = our `callId`,
 *   `input` = parsed `argumentsJson`);
 * - tool → `tool-result` parts: status `ok` → output `{ type: 'json' }`, status `error` → output
 *   `{ type: 'error-json' }`, both with the parsed `resultJson`;
 * - tool definitions → `function` tools with their JSON Schema as `inputSchema`, `toolChoice` auto;
 *   with no tools both are omitted (as the AI SDK itself does: some APIs refuse an empty list).
 * Maps, response side: text content concatenated; client-executed `tool-call` content → calls with
 * the `input` JSON string parsed (an empty string means `{}`, as in the AI SDK); usage totals.
 * Reasoning, sources and files are dropped: they are not part of loopx's history.
 *
 * Tool names: loopx's (`todo.list`) are not what the APIs accept, so every name — of a tool
 * definition, a history tool call or tool result — goes out through one mapping of the request
 * (tool-names.ts), built from the request's tools and every name its history carries; a tool call
 * coming back is named by its loopx name before anything else sees it. The same tools and history
 * give the same wire names in any process.
 *
 * Refuses (throws, before the model is called where the refusal is about the request):
 * - a tool result in `interaction_pending` / `mutation_uncertain`: an unsettled call must never be
 *   shown to a model (internal `model_history_interaction_pending` / `model_history_mutation_uncertain`);
 * - history that breaks its own invariants — a part its role may not carry, stored JSON that does
 *   not parse (internal `model_history_invalid`);
 * - tool-call input that is not JSON (rejected `model_tool_arguments_invalid_json`);
 * - a tool call naming a tool the request did not send (rejected `model_tool_name_unknown`);
 * - provider-executed tool calls/results and tool-approval requests: loopx executes every tool
 *   itself and records its effects, so it will not accept one run elsewhere
 *   (rejected `model_provider_executed_tool`).
 */
import type {
  JSONValue,
  LanguageModelV3,
  LanguageModelV3Content,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3GenerateResult,
  LanguageModelV3Message,
  LanguageModelV3ToolCallPart,
  LanguageModelV3ToolResultPart,
} from '@ai-sdk/provider';
import { internal, rejected } from '../../core/index.js';
import type { ComponentIdentity, Message, Part } from '../../snapshot/index.js';
import { ALLOWED_PARTS } from '../../snapshot/index.js';
import type { JsonValue, ToolDefinition } from '../tools.js';
import { ModelStreamError, ModelStreamIncomplete } from './failures.js';
import type { ModelProvider, ModelRequest, ModelResponse, ModelToolCall } from './provider.js';
import { modelToolNameUnknown, toolNameMap, type ToolNameMap } from './tool-names.js';

export interface AiSdkProviderOptions {
  /** Matches `ModelRef.provider` of the agent definitions this provider serves. */
  readonly name: string;
  readonly model: LanguageModelV3;
  readonly identity?: ComponentIdentity;
  /** Use `doStream` and report text as it arrives (the built-in providers do); default `doGenerate`. */
  readonly stream?: boolean;
}

export const aiSdkProvider = (options: AiSdkProviderOptions): ModelProvider => ({
  name: options.name,
  ...(options.identity ? { identity: options.identity } : {}),
  async generate(request: ModelRequest): Promise<ModelResponse> {
    const names = toolNameMap(namesOf(request));
    const callOptions = toCallOptions(request, names);
    if (options.stream) return fromStream(await options.model.doStream(callOptions), request.onText, names);
    const result = await options.model.doGenerate(callOptions);
    return fromGenerateResult(result, names);
  },
});

/** Every tool name the request carries: its tools', and its history's (a tool no longer offered included). */
const namesOf = (request: ModelRequest): string[] => [
  ...request.tools.map((tool) => tool.name),
  ...request.messages.flatMap((m) =>
    m.parts.flatMap((p) => (p.type === 'tool_call' || p.type === 'tool_result' ? [p.toolName] : [])),
  ),
];

/** Read a V3 stream to its `finish` part into the content `doGenerate` would have returned. */
async function fromStream(
  result: LanguageModelV3StreamResult,
  onText: ((delta: string) => void) | undefined,
  names: ToolNameMap,
): Promise<ModelResponse> {
  const content: LanguageModelV3Content[] = [];
  let text = '';
  let usage: LanguageModelV3Usage | undefined;
  const reader = result.stream.getReader();
  try {
    for (;;) {
      const { done, value: part } = await reader.read();
      if (done) break;
      switch (part.type) {
        case 'text-delta':
          text += part.delta;
          if (part.delta) onText?.(part.delta);
          break;
        case 'tool-call':
        case 'tool-result':
        case 'tool-approval-request':
          content.push(part);
          break;
        case 'error':
          throw new ModelStreamError(part.error);
        case 'finish':
          usage = part.usage;
          break;
        default:
          break;
      }
    }
  } finally {
    reader.releaseLock();
  }
  if (!usage) throw new ModelStreamIncomplete();
  return fromGenerateResult(
    { content: [{ type: 'text', text }, ...content], usage } as LanguageModelV3GenerateResult,
    names,
  );
}

const toCallOptions = (request: ModelRequest, names: ToolNameMap): LanguageModelV3CallOptions => ({
  prompt: request.messages.map((message) => toV3Message(message, names)),
  ...(request.tools.length > 0
    ? { tools: request.tools.map((tool) => toFunctionTool(tool, names)), toolChoice: { type: 'auto' } as const }
    : {}),
  ...(request.signal ? { abortSignal: request.signal } : {}),
});

/** Stored history this adapter cannot translate: the history is damaged, never sent in part. */
const historyInvalid = (message: Message, why: string, details: Record<string, unknown>, cause?: unknown) =>
  internal('model_history_invalid', `Message ${message.id} cannot be sent to the model: ${why}.`, {
    details: { message_id: message.id, ...details },
    ...(cause === undefined ? {} : { cause }),
  });

const toV3Message = (message: Message, names: ToolNameMap): LanguageModelV3Message => {
  // History may come from a decoded snapshot, so the role is checked at run time too (hence `?.`).
  for (const part of message.parts) {
    if (!ALLOWED_PARTS[message.role]?.includes(part.type)) {
      throw historyInvalid(message, `a ${message.role} message may not carry a ${part.type} part`, {
        role: message.role,
        part_type: part.type,
      });
    }
  }
  switch (message.role) {
    case 'system':
      return { role: 'system', content: textsOf(message.parts).join('') };
    case 'user':
      return { role: 'user', content: textsOf(message.parts).map((text) => ({ type: 'text', text })) };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.parts.flatMap((part): Array<{ type: 'text'; text: string } | LanguageModelV3ToolCallPart> => {
          if (part.type === 'text') return [{ type: 'text', text: part.text }];
          if (part.type === 'tool_call') {
            return [
              {
                type: 'tool-call',
                toolCallId: part.callId,
                toolName: names.toWire(part.toolName),
                input: parseStored(part.argumentsJson, message, part.callId),
              },
            ];
          }
          return [];
        }),
      };
    case 'tool':
      return {
        role: 'tool',
        content: message.parts.flatMap((part) =>
          part.type === 'tool_result' ? [toToolResult(part, message, names)] : [],
        ),
      };
    default: {
      const role: never = message.role;
      throw historyInvalid(message, `unknown role ${JSON.stringify(role)}`, {});
    }
  }
};

const textsOf = (parts: readonly Part[]): string[] => parts.flatMap((p) => (p.type === 'text' ? [p.text] : []));

const toToolResult = (
  part: Extract<Part, { type: 'tool_result' }>,
  message: Message,
  names: ToolNameMap,
): LanguageModelV3ToolResultPart => {
  const details = { message_id: message.id, call_id: part.callId, tool_name: part.toolName };
  switch (part.status) {
    case 'ok':
      return {
        type: 'tool-result',
        toolCallId: part.callId,
        toolName: names.toWire(part.toolName),
        output: { type: 'json', value: parseStored(part.resultJson, message, part.callId) },
      };
    case 'error':
      return {
        type: 'tool-result',
        toolCallId: part.callId,
        toolName: names.toWire(part.toolName),
        output: { type: 'error-json', value: parseStored(part.resultJson, message, part.callId) },
      };
    case 'interaction_pending':
      throw internal(
        'model_history_interaction_pending',
        `Tool call ${part.callId} is waiting for an interaction; an unanswered call is never sent to a model.`,
        { details },
      );
    case 'mutation_uncertain':
      throw internal(
        'model_history_mutation_uncertain',
        `Tool call ${part.callId} has an uncertain mutation outcome; it must be resolved before a model sees it.`,
        { details },
      );
    default: {
      const status: never = part.status;
      throw historyInvalid(
        message,
        `tool call ${part.callId} has unknown result status ${JSON.stringify(status)}`,
        details,
      );
    }
  }
};

/** Stored history JSON is canonical JSON written by loopx; if it does not parse, the history is damaged. */
const parseStored = (json: string, message: Message, callId: string): JSONValue => {
  try {
    return JSON.parse(json) as JSONValue;
  } catch (cause) {
    throw historyInvalid(message, `the JSON of tool call ${callId} does not parse`, { call_id: callId }, cause);
  }
};

// A copy, so third-party model code cannot alter the leased tool definitions.
const toFunctionTool = (tool: ToolDefinition, names: ToolNameMap): LanguageModelV3FunctionTool => ({
  type: 'function',
  name: names.toWire(tool.name),
  description: tool.description,
  inputSchema: structuredClone(tool.inputSchema) as LanguageModelV3FunctionTool['inputSchema'],
});

const fromGenerateResult = (result: LanguageModelV3GenerateResult, names: ToolNameMap): ModelResponse => {
  let text = '';
  const toolCalls: ModelToolCall[] = [];
  for (const content of result.content) {
    switch (content.type) {
      case 'text':
        text += content.text;
        break;
      case 'tool-call': {
        if (content.providerExecuted) throw providerExecuted({ tool_name: content.toolName });
        const toolName = names.fromWire(content.toolName);
        if (toolName === undefined) throw modelToolNameUnknown(content.toolName);
        toolCalls.push({ toolName, arguments: parseToolInput(toolName, content.input) });
        break;
      }
      case 'tool-result':
        throw providerExecuted({ tool_name: content.toolName });
      case 'tool-approval-request':
        throw providerExecuted({ approvalId: content.approvalId });
      default:
        // reasoning, source, file: not part of the provider-neutral history.
        break;
    }
  }
  const inputTokens = result.usage.inputTokens.total;
  const outputTokens = result.usage.outputTokens.total;
  const usage = {
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
  };
  return { text, toolCalls, ...(Object.keys(usage).length > 0 ? { usage } : {}) };
};

const parseToolInput = (toolName: string, input: string): JsonValue => {
  if (input.trim() === '') return {};
  try {
    return JSON.parse(input) as JsonValue;
  } catch (cause) {
    throw rejected(
      'model_tool_arguments_invalid_json',
      `The model called ${toolName} with arguments that are not valid JSON.`,
      {
        cause,
        details: { tool_name: toolName },
      },
    );
  }
};

const providerExecuted = (details: Record<string, string>) =>
  rejected(
    'model_provider_executed_tool',
    'The model returned a provider-executed tool step; loopx runs every tool itself.',
    { details },
  );
