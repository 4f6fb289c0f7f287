/**
 * The typed refusals of MCP servers in a tool plan, each code built here and nowhere else. Details
 * hold names only — server, tool, environment variable names, a JSON pointer, a reason code — and
 * never an environment value, a header value, a URL, a command line or a tool's arguments.
 */
import { conflict, internal, rejected, type LoopxError } from '../../core/index.js';

/** A declaration that does not parse: the file form at `path` breaks the schema or a rule the schema cannot state. */
export const declarationInvalid = (path: string, why: string): LoopxError =>
  rejected('mcp_declaration_invalid', `MCP server declaration is invalid at ${path}: ${why}.`, {
    nextAction: 'fix the MCP server declaration (name, transport and declared tools) and load it again',
    details: { path, reason: why },
  });

/** A declared environment reference names a variable the host does not have: nothing was started. */
export const envMissing = (server: string, variable: string): LoopxError =>
  rejected('mcp_env_missing', `MCP server ${server} references environment variable ${variable}, which is not set.`, {
    nextAction: `set ${variable} in the environment of the process that launches the server`,
    details: { server, variable },
  });

/** Why a declared command names no executable file (public-safe reason codes). */
export type ExecutableFault = 'missing' | 'not_a_file' | 'not_executable' | 'unreadable';

/**
 * A stdio server's command, when the plan was made, named no executable regular file that loopx
 * can read and hash: nothing was pinned and nothing was started.
 */
export const executableNotFound = (server: string, reason: ExecutableFault, cause?: unknown): LoopxError =>
  rejected(
    'mcp_executable_not_found',
    `MCP server ${server}'s command names no executable file loopx can pin (${reason}).`,
    {
      nextAction: `make the declared command of ${server} name a readable executable file — a path relative to the directory loopx runs in (the plan's base directory), or a name on PATH — and run the command again`,
      details: { server, reason },
      ...(cause === undefined ? {} : { cause }),
    },
  );

/** How a pinned executable differs from the file its plan pinned. */
export type ExecutableChange = 'changed' | 'missing';

/**
 * The file a plan pinned for a stdio server is gone or has other bytes: it was not launched, and
 * neither was any other server of the launch.
 */
export const executableChanged = (server: string, change: ExecutableChange, cause?: unknown): LoopxError =>
  conflict(
    'mcp_executable_changed',
    `MCP server ${server}'s executable ${change === 'missing' ? 'is gone' : 'changed'} since the plan was made; nothing was launched.`,
    {
      nextAction: `restore ${server}'s executable to the file the plan pinned, or restart loopx to plan with the new one (a new plan identity: runs made with the old one will not continue)`,
      details: { server, reason: change },
      ...(cause === undefined ? {} : { cause }),
    },
  );

/** Why a server could not be started, connected or listed (public-safe reason codes). */
export type LaunchFailure =
  'spawn_failed' | 'unreachable' | 'http_error' | 'timeout' | 'connection_closed' | 'protocol_error';

/** A server did not start, connect or list its tools; every server of the launch was stopped. */
export const launchFailed = (server: string, reason: LaunchFailure, cause?: unknown, httpStatus?: number): LoopxError =>
  rejected(
    'mcp_launch_failed',
    `MCP server ${server} could not be launched (${reason}${httpStatus === undefined ? '' : ` ${httpStatus}`}).`,
    {
      nextAction:
        'check that the server starts with the declared command or answers at the declared URL, then launch again',
      details: { server, reason, ...(httpStatus === undefined ? {} : { http_status: httpStatus }) },
      ...(cause === undefined ? {} : { cause }),
    },
  );

/** What differs between a declared tool and the server's listing of it. */
export type ContractDifference = 'missing' | 'input_schema' | 'requires_tasks';

/**
 * A declared tool the server does not offer as declared: missing, with another input schema
 * (compared as canonical JSON; `at` is the JSON pointer of the first difference), or callable only
 * as a task. Every server of the launch was stopped.
 */
export const contractChanged = (
  server: string,
  tool: string,
  difference: ContractDifference,
  at?: string,
): LoopxError =>
  conflict(
    'mcp_tool_contract_changed',
    `MCP server ${server} does not offer tool ${tool} as declared (${difference}${at === undefined ? '' : ` at ${at || '/'}`}).`,
    {
      nextAction:
        'update the declared tool contract to what the server offers (a new plan identity), or pin the server to the declared version',
      details: { server, tool, difference, ...(at === undefined ? {} : { at }) },
    },
  );

/** A call on a server whose connection is closed (stopped, or died earlier): nothing was sent. */
export const serverUnavailable = (server: string, tool: string): LoopxError =>
  rejected('mcp_server_unavailable', `MCP server ${server} is not connected; ${tool} was not called.`, {
    nextAction: 'launch the MCP servers of the plan again; a server that stopped is never restarted behind a run',
    details: { server, tool },
  });

/** The server ran the tool and reported an error (`isError: true`): a definite tool error, with the server's first line. */
export const toolReportedError = (server: string, tool: string, text: string): LoopxError =>
  rejected('mcp_tool_error', `MCP tool ${server}.${tool} reported an error: ${text}`, {
    nextAction: 'read the error and call the tool again with corrected arguments',
    details: { server, tool },
  });

/** Why a read-only call has no result (public-safe reason codes). */
export type CallFailure = 'connection_closed' | 'timeout' | 'error_response' | 'result_invalid' | 'call_failed';

/**
 * A non-mutating call without a result: the connection closed, the call timed out or the server
 * answered with a protocol error. Kind `internal`, so that nothing which reads typed refusals as
 * "did not act" could take it for one (a mutating call reports these as an unknown outcome instead).
 */
export const callFailed = (server: string, tool: string, reason: CallFailure, cause?: unknown): LoopxError =>
  internal('mcp_call_failed', `MCP tool ${server}.${tool} returned no result (${reason}).`, {
    nextAction: 'check the MCP server; launch the servers of the plan again if it stopped',
    details: { server, tool, reason },
    ...(cause === undefined ? {} : { cause }),
  });
