/**
 * The real MCP servers the tests launch (from node_modules, over stdio) and declarations of some of
 * their tools, with the input schemas exactly as the installed servers list them.
 */
import { join } from 'node:path';
import { REPO } from '../../support/cli.js';
import type { JsonValue, ToolContext } from '../../../src/engine/index.js';
import {
  launchMcpServers,
  parseMcpServers,
  type McpServerDeclaration,
  type McpSession,
  type McpToolDeclaration,
} from '../../../src/engine/mcp/index.js';

export const EVERYTHING_BIN = join(REPO, 'node_modules', '.bin', 'mcp-server-everything');
export const FILESYSTEM_BIN = join(REPO, 'node_modules', '.bin', 'mcp-server-filesystem');

const DRAFT7 = 'http://json-schema.org/draft-07/schema#';
type Schema = { [k: string]: JsonValue };

export const ECHO: McpToolDeclaration = {
  name: 'echo',
  description: 'Echo a message back.',
  input_schema: {
    type: 'object',
    properties: { message: { type: 'string', description: 'Message to echo' } },
    required: ['message'],
    $schema: DRAFT7,
  },
  mutating: false,
};

export const GET_ENV: McpToolDeclaration = {
  name: 'get-env',
  input_schema: { type: 'object', properties: {}, $schema: DRAFT7 },
  mutating: false,
};

export const GET_SUM: McpToolDeclaration = {
  name: 'get-sum',
  input_schema: {
    type: 'object',
    properties: {
      a: { type: 'number', description: 'First number' },
      b: { type: 'number', description: 'Second number' },
    },
    required: ['a', 'b'],
    $schema: DRAFT7,
  },
};

/** Sleeps `duration` seconds in `steps` steps: the slow call a test kills the server under. */
export const LONG_RUNNING: McpToolDeclaration = {
  name: 'trigger-long-running-operation',
  input_schema: {
    type: 'object',
    properties: {
      duration: { default: 10, description: 'Duration of the operation in seconds', type: 'number' },
      steps: { default: 5, description: 'Number of steps in the operation', type: 'number' },
    },
    $schema: DRAFT7,
  },
  mutating: true,
};

export function everything(
  tools: readonly McpToolDeclaration[],
  extra: Partial<McpServerDeclaration> = {},
): McpServerDeclaration {
  return {
    name: 'everything',
    transport: { type: 'stdio', command: EVERYTHING_BIN, args: ['stdio'] },
    tools,
    ...extra,
  };
}

const pathOnly = (): Schema => ({
  type: 'object',
  properties: { path: { type: 'string' } },
  required: ['path'],
  $schema: DRAFT7,
});

export const LIST_DIRECTORY: McpToolDeclaration = { name: 'list_directory', input_schema: pathOnly(), mutating: false };
export const READ_TEXT_FILE: McpToolDeclaration = {
  name: 'read_text_file',
  input_schema: {
    type: 'object',
    properties: {
      path: { type: 'string' },
      tail: { description: 'If provided, returns only the last N lines of the file', type: 'number' },
      head: { description: 'If provided, returns only the first N lines of the file', type: 'number' },
    },
    required: ['path'],
    $schema: DRAFT7,
  },
  mutating: false,
};
export const WRITE_FILE: McpToolDeclaration = {
  name: 'write_file',
  input_schema: {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
    $schema: DRAFT7,
  },
};

export function filesystem(dir: string, tools: readonly McpToolDeclaration[]): McpServerDeclaration {
  return { name: 'fs', transport: { type: 'stdio', command: FILESYSTEM_BIN, args: [dir] }, tools };
}

/** A tool context as the engine gives a call (a mutating one's effect carries its idempotency key). */
export function toolContext(callId: string, idempotencyKey?: string): ToolContext {
  const operationId = callId.replaceAll('/', ':');
  return {
    runId: callId.split('/')[0]!,
    callId,
    operationId,
    turn: 1,
    ...(idempotencyKey === undefined
      ? {}
      : { effect: { idempotency_key: idempotencyKey } as unknown as NonNullable<ToolContext['effect']> }),
    requestInteraction: () => {
      throw new Error('no interactions in these tests');
    },
  };
}

/** Whether a process with this id exists (signal 0 only checks). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const launched: McpSession[] = [];

/** Launch servers for a test; `closeLaunched` (in afterEach) stops every one a test launched. */
export async function launch(
  decls: McpServerDeclaration[],
  options: Parameters<typeof launchMcpServers>[1] = {},
): Promise<McpSession> {
  const session = await launchMcpServers(parseMcpServers(decls), options);
  launched.push(session);
  return session;
}

export const closeLaunched = async (): Promise<void> => {
  await Promise.all(launched.splice(0).map((s) => s.close()));
};
