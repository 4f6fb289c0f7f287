/**
 * Agent definitions: identity (id + version), model, turn limit, tool plan, optional system
 * prompt and — for the scripted provider — its script (the built-in goal-finisher takes none).
 * Loaded from JSON files (`--agent`) or built through the typed API; both paths go through the
 * same schema, which refuses unknown fields.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import { canonicalJson, isLoopxError, notFound, rejected } from '../core/index.js';
import type { ModelRef } from '../snapshot/index.js';
import { MCP_SERVER_DECLARATION_SCHEMA, parseMcpServers, type McpServerDeclaration } from './mcp/declaration.js';
import { GOAL_FINISHER_PROVIDER } from './providers/goal-finisher.js';
import type { JsonValue } from './tools.js';

export interface ScriptStep {
  readonly text?: string;
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments: JsonValue }>;
}

/**
 * The model an agent is answered by: the provider and its model id (the snapshot's ModelRef), and
 * for a provider reached over HTTP where to reach it and the NAME of the environment variable that
 * holds its API key — the key itself is read when a run is driven and is never stored.
 */
export interface ModelSpec extends ModelRef {
  /** The provider's API base URL (required for `openai-compatible`); http(s), no credentials, query or fragment. */
  readonly baseUrl?: string;
  /** The environment variable holding the API key (default per provider, e.g. OPENAI_API_KEY). */
  readonly apiKeyEnv?: string;
}

/** Limits a run stops at, at a turn boundary. */
export interface RunBudget {
  /** Model tokens (input + output, as the provider reports them) the run may use. */
  readonly maxTokens: number;
}

export interface AgentDefinition {
  readonly id: string;
  readonly version: string;
  readonly model: ModelSpec;
  readonly turnLimit: number;
  readonly toolPlan: string;
  readonly system?: string;
  readonly script?: readonly ScriptStep[];
  readonly budget?: RunBudget;
  /** MCP servers whose declared tools join the tool plan (as `<server>.<tool>`); see mcp/declaration.ts. */
  readonly mcpServers?: readonly McpServerDeclaration[];
}

// One server declaration, embedded in the agent file's schema: without its own $id, and with a
// tool's input schema as any object (it is a JSON Schema of the server's; parseMcpServers checks it).
const { $id: _mcpId, ...MCP_SERVER } = MCP_SERVER_DECLARATION_SCHEMA;
const MCP_TOOL = MCP_SERVER.properties.tools.items;
const MCP_SERVER_ITEM = {
  ...MCP_SERVER,
  properties: {
    ...MCP_SERVER.properties,
    tools: {
      ...MCP_SERVER.properties.tools,
      items: {
        ...MCP_TOOL,
        properties: {
          ...MCP_TOOL.properties,
          input_schema: {
            type: 'object',
            description: "The tool's input JSON Schema, exactly as the server lists it.",
          },
        },
      },
    },
  },
} as const;

/** The on-disk (snake_case) form; see docs/agent-definition.md and examples/. */
export const AGENT_FILE_SCHEMA = {
  $id: 'https://loopx.dev/schemas/agent-definition.json',
  type: 'object',
  additionalProperties: false,
  required: ['id', 'version', 'model', 'turn_limit', 'tool_plan'],
  properties: {
    $schema: { type: 'string' },
    id: { type: 'string', pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$' },
    version: { type: 'string', minLength: 1, maxLength: 64 },
    model: {
      type: 'object',
      additionalProperties: false,
      required: ['provider', 'model_id'],
      properties: {
        provider: { type: 'string', minLength: 1, maxLength: 128 },
        model_id: { type: 'string', minLength: 1, maxLength: 256 },
        base_url: { type: 'string', minLength: 1, maxLength: 2048, pattern: '^https?://[^/?#@\\s]+(/[^?#\\s]*)?$' },
        api_key_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' },
      },
    },
    mcp_servers: { type: 'array', maxItems: 32, items: MCP_SERVER_ITEM },
    budget: {
      type: 'object',
      additionalProperties: false,
      required: ['max_tokens'],
      properties: { max_tokens: { type: 'integer', minimum: 1, maximum: 1000000000000 } },
    },
    turn_limit: { type: 'integer', minimum: 1, maximum: 10000 },
    tool_plan: { type: 'string', minLength: 1, maxLength: 256 },
    system: { type: 'string', maxLength: 65536 },
    script: {
      type: 'array',
      maxItems: 10000,
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          text: { type: 'string' },
          tool_calls: {
            type: 'array',
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['name', 'arguments'],
              properties: { name: { type: 'string' }, arguments: {} },
            },
          },
        },
      },
    },
  },
} as const;

// Loaded and compiled on first use, not at import: every CLI command imports the engine, few read an
// agent file. Ajv is a CommonJS package, so `require` loads it synchronously on that first parse.
let compiled: ValidateFunction | undefined;
const fileValidator = (): ValidateFunction => {
  if (compiled) return compiled;
  const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
  return (compiled = new Ajv({ strict: true, allErrors: false }).compile(AGENT_FILE_SCHEMA));
};

interface AgentFile {
  id: string;
  version: string;
  model: { provider: string; model_id: string; base_url?: string; api_key_env?: string };
  budget?: { max_tokens: number };
  mcp_servers?: unknown[];
  turn_limit: number;
  tool_plan: string;
  system?: string;
  script?: Array<{ text?: string; tool_calls?: Array<{ name: string; arguments: JsonValue }> }>;
}

const definitionInvalid = (path: string, why: string, cause?: unknown) =>
  rejected('agent_definition_invalid', `Agent definition is invalid at ${path}: ${why}.`, {
    nextAction: 'fix the agent definition file (see docs/agent-definition.md)',
    ...(cause === undefined ? {} : { cause }),
  });

export function parseAgentDefinition(value: unknown): AgentDefinition {
  const validateFile = fileValidator();
  if (!validateFile(value)) {
    const first = validateFile.errors?.[0];
    throw definitionInvalid(first?.instancePath || '/', first?.message ?? 'unknown error');
  }
  const f = value as unknown as AgentFile;
  checkModelSettings(f);
  return {
    id: f.id,
    version: f.version,
    model: {
      provider: f.model.provider,
      modelId: f.model.model_id,
      ...(f.model.base_url !== undefined ? { baseUrl: f.model.base_url } : {}),
      ...(f.model.api_key_env !== undefined ? { apiKeyEnv: f.model.api_key_env } : {}),
    },
    turnLimit: f.turn_limit,
    toolPlan: f.tool_plan,
    ...(f.system !== undefined ? { system: f.system } : {}),
    ...(f.budget !== undefined ? { budget: { maxTokens: f.budget.max_tokens } } : {}),
    ...(f.mcp_servers !== undefined ? { mcpServers: mcpServersOf(f.mcp_servers) } : {}),
    ...(f.script !== undefined
      ? {
          script: f.script.map((s) => ({
            ...(s.text !== undefined ? { text: s.text } : {}),
            ...(s.tool_calls ? { toolCalls: s.tool_calls } : {}),
          })),
        }
      : {}),
  };
}

/** The declarations' own checks beyond the schema (names, loopback-only http, compilable input schemas), as a definition refusal. */
function mcpServersOf(value: unknown[]): readonly McpServerDeclaration[] {
  try {
    return parseMcpServers(value);
  } catch (e) {
    if (isLoopxError(e) && e.code === 'mcp_declaration_invalid') {
      const { path, reason } = (e.details ?? {}) as { path?: string; reason?: string };
      throw definitionInvalid(`/mcp_servers${path === '/' || path === undefined ? '' : path}`, reason ?? e.message, e);
    }
    throw e;
  }
}

/** Settings only some providers take: a base URL the OpenAI-compatible one needs, none for the built-in ones, a script only for the scripted one. */
function checkModelSettings(f: AgentFile): void {
  const model = f.model;
  if (model.provider === 'openai-compatible' && model.base_url === undefined) {
    throw definitionInvalid(
      '/model',
      'provider openai-compatible needs base_url (e.g. http://127.0.0.1:11434/v1 for Ollama)',
    );
  }
  if (model.provider === 'scripted' && (model.base_url !== undefined || model.api_key_env !== undefined)) {
    throw definitionInvalid('/model', 'the scripted provider takes no base_url or api_key_env');
  }
  if (model.provider === GOAL_FINISHER_PROVIDER) {
    if (model.base_url !== undefined || model.api_key_env !== undefined)
      throw definitionInvalid('/model', 'the goal-finisher provider takes no base_url or api_key_env');
    // It decides from the Goal's state; a script it would never read is refused rather than ignored.
    if (f.script !== undefined) throw definitionInvalid('/script', 'the goal-finisher provider takes no script');
  }
}

/** The definition back in its file form (what the engine stores and compares). */
export function agentDefinitionToFile(def: AgentDefinition): AgentFile {
  return {
    id: def.id,
    version: def.version,
    model: {
      provider: def.model.provider,
      model_id: def.model.modelId,
      ...(def.model.baseUrl !== undefined ? { base_url: def.model.baseUrl } : {}),
      ...(def.model.apiKeyEnv !== undefined ? { api_key_env: def.model.apiKeyEnv } : {}),
    },
    turn_limit: def.turnLimit,
    tool_plan: def.toolPlan,
    ...(def.system !== undefined ? { system: def.system } : {}),
    ...(def.budget !== undefined ? { budget: { max_tokens: def.budget.maxTokens } } : {}),
    ...(def.mcpServers !== undefined ? { mcp_servers: [...def.mcpServers] } : {}),
    ...(def.script !== undefined
      ? {
          script: def.script.map((s) => ({
            ...(s.text !== undefined ? { text: s.text } : {}),
            ...(s.toolCalls ? { tool_calls: s.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })) } : {}),
          })),
        }
      : {}),
  };
}

/**
 * The stored form of a definition: the canonical JSON of its file form. Run stores keep these
 * bytes and compare a definition with the stored one by them (`putDefinition`), as import does.
 */
export const definitionBody = (def: AgentDefinition): string => canonicalJson(agentDefinitionToFile(def));

/** Typed API: validates exactly as a file would be. */
export const defineAgent = (def: AgentDefinition): AgentDefinition => {
  checkTypedShape(def);
  return parseAgentDefinition(agentDefinitionToFile(def));
};

/**
 * The typed form's objects and their keys. Checked before conversion to the file form, which
 * copies only known keys and so would otherwise drop an unknown field instead of refusing it.
 */
const TYPED_KEYS = {
  agent: ['id', 'version', 'model', 'turnLimit', 'toolPlan', 'system', 'script', 'budget', 'mcpServers'],
  model: ['provider', 'modelId', 'baseUrl', 'apiKeyEnv'],
  budget: ['maxTokens'],
  step: ['text', 'toolCalls'],
  call: ['name', 'arguments'],
} as const;

function checkTypedShape(def: unknown): void {
  const invalid = (path: string, message: string): never => {
    throw definitionInvalid(path, message);
  };
  const object = (value: unknown, keys: readonly string[], path: string): Record<string, unknown> => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return invalid(path, 'must be object');
    const record = value as Record<string, unknown>;
    // An undefined value is an absent field, as it would be in the file form.
    const extra = Object.keys(record).find((k) => record[k] !== undefined && !keys.includes(k));
    if (extra !== undefined) invalid(path, `must NOT have additional property ${extra}`);
    return record;
  };
  const array = (value: unknown, path: string): readonly unknown[] =>
    Array.isArray(value) ? value : invalid(path, 'must be array');

  const agent = object(def, TYPED_KEYS.agent, '/');
  object(agent.model, TYPED_KEYS.model, '/model');
  if (agent.budget !== undefined) object(agent.budget, TYPED_KEYS.budget, '/budget');
  if (agent.script === undefined) return;
  array(agent.script, '/script').forEach((s, i) => {
    const step = object(s, TYPED_KEYS.step, `/script/${i}`);
    if (step.toolCalls === undefined) return;
    array(step.toolCalls, `/script/${i}/toolCalls`).forEach((c, j) =>
      object(c, TYPED_KEYS.call, `/script/${i}/toolCalls/${j}`),
    );
  });
}

export function loadAgentFile(path: string): AgentDefinition {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw notFound('agent_file_missing', 'The agent definition file does not exist.', {
        nextAction: 'pass an existing file to --agent',
      });
    throw e;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw definitionInvalid('/', 'the file is not valid JSON', e);
  }
  try {
    return parseAgentDefinition(json);
  } catch (e) {
    if (isLoopxError(e)) throw e;
    throw e;
  }
}
