/**
 * The dynamic side of MCP servers in a tool plan: start (stdio) or reach (Streamable HTTP) every
 * declared server, check what each offers against its declaration, and hand out the plan tools.
 *
 * Rules it keeps:
 * - It fails closed. A server that does not start, connect or list its tools, or that does not
 *   offer a declared tool with the declared input schema (compared as canonical JSON), stops the
 *   whole launch: every server it started is stopped before the typed refusal is thrown.
 * - It launches what the plan pinned (static.ts, executable.ts): a stdio server from its
 *   executable's real path — its command is never looked up again, wherever the process runs now
 *   — once that file is checked unchanged; a changed or missing one refuses the launch before any
 *   server is spawned (`mcp_executable_changed`). A relative `cwd` is taken in the plan's base
 *   directory. `launchMcpServers` makes its plan at the call.
 * - Tools a server offers beyond its declaration are never exposed.
 * - Environment and header references are resolved from the host environment here, at launch,
 *   and nowhere else (only `PATH` is read when the plan is made, to find a bare command); a
 *   missing one refuses the launch before anything starts. Resolved values are handed to the
 *   transport only: never logged, never in an identity or an error's details.
 *   A stdio server gets the SDK's small default environment (PATH, HOME, …) plus its declared
 *   variables — not the host's whole environment.
 * - A server's stderr is not read into loopx (it may print anything); it is dropped, or passed
 *   through to the host's stderr when asked.
 * - A server that stops is never restarted behind a run: its tools refuse further calls, and a
 *   call that was pending on it ends (as an unknown outcome when it is mutating).
 * - The contract is checked at launch. A server that changes its tools afterwards is not checked
 *   again (its list-changed notifications are ignored): calls still go by the declared name, with
 *   arguments the plan host validated against the declared schema; the server validates its own.
 * - `close()` stops every server and waits for each stdio process to be gone (bounded).
 */
import { resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool as ListedTool } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson, isLoopxError, LOOPX_VERSION } from '../../core/index.js';
import type { Tool } from '../tools.js';
import { mcpTool, type McpConnection } from './call.js';
import type { McpServerDeclaration } from './declaration.js';
import { contractChanged, envMissing, launchFailed, type LaunchFailure } from './errors.js';
import { checkExecutable, type McpExecutable } from './executable.js';
import { loadSdk, type McpSdk } from './sdk.js';
import {
  planMcpServers,
  staticToolsOf,
  type McpPlannedServers,
  type McpPlanOptions,
  type McpStaticTool,
} from './static.js';

/** How servers are planned (`environment` is also where references are resolved, `baseDir` fixed when the plan is made) and launched. */
export interface McpLaunchOptions extends McpPlanOptions {
  /** Bound of one tool call, in ms; default 60 000. A mutating call that reaches it has an unknown outcome. */
  readonly callTimeoutMs?: number;
  /** Bound of connecting and of each tool-list page, in ms; default 30 000. */
  readonly connectTimeoutMs?: number;
  /** A stdio server's stderr: dropped (default) or passed through to this process's stderr. */
  readonly stderr?: 'ignore' | 'inherit';
  /** Told each stdio server's process id once it is connected (observability, tests). */
  readonly onServerStarted?: (server: string, pid: number) => void;
}

export interface McpSession {
  /** The declared tools of every server, in declaration order, each named `<server>.<tool>`. */
  readonly tools: readonly Tool[];
  /** Each server and, for a stdio server, its process id. */
  readonly servers: readonly { readonly name: string; readonly pid: number | null }[];
  readonly closed: boolean;
  /** Stop every server; idempotent. Pending calls end (unknown outcome when mutating). */
  close(): Promise<void>;
}

const MAX_LIST_PAGES = 100;
/** How long `close()` waits for a stopped stdio process to be gone, after the SDK's own stop (stdin, SIGTERM, SIGKILL). */
const EXIT_WAIT_MS = 10_000;

class Connection implements McpConnection {
  readonly client: Client;
  readonly #stdio: StdioClientTransport | undefined;
  #open = false;
  #ended!: () => void;
  readonly ended = new Promise<void>((r) => (this.#ended = r));

  constructor(
    sdk: McpSdk,
    readonly server: string,
    readonly transport: Transport,
  ) {
    this.client = new sdk.Client({ name: 'loopx', version: LOOPX_VERSION }, { capabilities: {} });
    this.#stdio = transport instanceof sdk.StdioClientTransport ? transport : undefined;
    this.client.onclose = () => {
      this.#open = false;
      this.#ended();
    };
    // Errors surface through the calls they end; nothing is logged (a message may carry anything).
    this.client.onerror = () => {};
  }

  get open(): boolean {
    return this.#open;
  }

  get pid(): number | null {
    return this.#stdio?.pid ?? null;
  }

  async connect(timeout: number): Promise<void> {
    await this.client.connect(this.transport, { timeout });
    this.#open = true;
  }

  async close(): Promise<void> {
    const stdio = this.pid !== null;
    try {
      await this.client.close();
    } catch {
      // Closing is best effort; the process wait below is what counts.
    }
    this.#open = false;
    if (!stdio) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ended, new Promise<void>((r) => (timer = setTimeout(r, EXIT_WAIT_MS).unref()))]);
    clearTimeout(timer);
  }
}

/** Plan the declared servers now, then launch them and check their tools; fails closed (see the module header). */
export async function launchMcpServers(
  declarations: readonly McpServerDeclaration[],
  options: McpLaunchOptions = {},
): Promise<McpSession> {
  // A typed declaration obeys the file form's rules too (planning parses).
  return launchPlanned(planMcpServers(declarations, options), options);
}

/** Launch the servers of a plan made earlier, from what it pinned; fails closed (see the module header). */
export async function launchPlanned(planned: McpPlannedServers, options: McpLaunchOptions = {}): Promise<McpSession> {
  const decls = planned.declarations;
  const environment = options.environment ?? process.env;
  const sdk = await loadSdk();
  // Every pinned executable checked and every reference resolved before anything starts.
  decls.forEach((d, i) => {
    const pinned = planned.executables[i];
    if (pinned) checkExecutable(d.name, pinned);
  });
  const transports = decls.map((d, i) =>
    transportOf(sdk, d, planned.executables[i], planned.baseDir, environment, options),
  );
  const connections: Connection[] = decls.map((d, i) => new Connection(sdk, d.name, transports[i]!));
  const statics = staticToolsOf(planned);
  const closeAll = async (): Promise<void> => {
    await Promise.all(connections.map((c) => c.close()));
  };
  const outcomes = await Promise.allSettled(decls.map((d, i) => start(sdk, d, connections[i]!, options)));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed) {
    await closeAll();
    throw failed.reason;
  }
  const callTimeoutMs = options.callTimeoutMs ?? 60_000;
  const tools = statics.map((s: McpStaticTool) =>
    mcpTool(sdk, connections[decls.findIndex((d) => d.name === s.server)]!, s, callTimeoutMs),
  );
  let closed = false;
  return {
    tools,
    servers: connections.map((c) => ({ name: c.server, pid: c.pid })),
    get closed() {
      return closed;
    },
    async close() {
      closed = true;
      await closeAll();
    },
  };
}

async function start(
  sdk: McpSdk,
  decl: McpServerDeclaration,
  conn: Connection,
  options: McpLaunchOptions,
): Promise<void> {
  const timeout = options.connectTimeoutMs ?? 30_000;
  let listed: Map<string, ListedTool>;
  try {
    await conn.connect(timeout);
    const pid = conn.pid;
    if (pid !== null) options.onServerStarted?.(decl.name, pid);
    listed = await listTools(conn.client, timeout);
  } catch (e) {
    if (isLoopxError(e)) throw e;
    const httpStatus =
      e instanceof sdk.StreamableHTTPError && typeof e.code === 'number' && e.code > 0 ? e.code : undefined;
    throw launchFailed(decl.name, launchFailureOf(sdk, e), e, httpStatus);
  }
  for (const t of decl.tools) {
    const offered = listed.get(t.name);
    if (!offered) throw contractChanged(decl.name, t.name, 'missing');
    const at = firstDifference(t.input_schema, offered.inputSchema, '');
    if (at !== undefined) throw contractChanged(decl.name, t.name, 'input_schema', at);
    if (offered.execution?.taskSupport === 'required') throw contractChanged(decl.name, t.name, 'requires_tasks');
  }
}

async function listTools(client: Client, timeout: number): Promise<Map<string, ListedTool>> {
  const tools = new Map<string, ListedTool>();
  const cursors = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const r = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout });
    for (const t of r.tools) if (!tools.has(t.name)) tools.set(t.name, t);
    cursor = r.nextCursor;
    if (cursor === undefined || cursors.has(cursor)) break;
    cursors.add(cursor);
  }
  return tools;
}

function transportOf(
  sdk: McpSdk,
  decl: McpServerDeclaration,
  pinned: McpExecutable | undefined,
  baseDir: string,
  environment: Readonly<Record<string, string | undefined>>,
  options: McpLaunchOptions,
): Transport {
  const resolveRefs = (refs: { readonly [name: string]: string } | undefined): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [name, ref] of Object.entries(refs ?? {})) {
      const variable = ref.slice('env:'.length);
      const value = environment[variable];
      if (value === undefined) throw envMissing(decl.name, variable);
      out[name] = value;
    }
    return out;
  };
  const t = decl.transport;
  if (t.type === 'http')
    return new sdk.StreamableHTTPClientTransport(new URL(t.url), { requestInit: { headers: resolveRefs(t.headers) } });
  if (!pinned) throw new TypeError(`stdio server ${decl.name} has no pinned executable`); // planMcpServers pins every one
  return new sdk.StdioClientTransport({
    command: pinned.realPath,
    args: [...(t.args ?? [])],
    env: resolveRefs(t.env),
    ...(t.cwd === undefined ? {} : { cwd: resolve(baseDir, t.cwd) }),
    stderr: options.stderr ?? 'ignore',
  });
}

function launchFailureOf(sdk: McpSdk, e: unknown): LaunchFailure {
  if (e instanceof sdk.McpError) {
    if (e.code === sdk.ErrorCode.ConnectionClosed) return 'connection_closed';
    if (e.code === sdk.ErrorCode.RequestTimeout) return 'timeout';
    return 'protocol_error';
  }
  if (e instanceof sdk.StreamableHTTPError) return 'http_error';
  if (e instanceof Error && 'code' in e && typeof (e as { syscall?: unknown }).syscall === 'string')
    return 'spawn_failed';
  // fetch() rejects with a TypeError when it reaches no server (refused, unresolved, reset).
  if (e instanceof TypeError) return 'unreachable';
  return 'protocol_error';
}

/** The JSON pointer of the first difference between two schemas (by canonical JSON), or undefined when they are the same. */
export function firstDifference(declared: unknown, offered: unknown, at: string): string | undefined {
  const same = (() => {
    try {
      return canonicalJson(declared) === canonicalJson(offered);
    } catch {
      return false;
    }
  })();
  if (same) return undefined;
  const object = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (Array.isArray(declared) && Array.isArray(offered) && declared.length === offered.length) {
    for (let i = 0; i < declared.length; i++) {
      const d = firstDifference(declared[i], offered[i], `${at}/${i}`);
      if (d !== undefined) return d;
    }
    return at;
  }
  if (object(declared) && object(offered)) {
    for (const k of [...new Set([...Object.keys(declared), ...Object.keys(offered)])].sort()) {
      const d = firstDifference(declared[k], offered[k], `${at}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`);
      if (d !== undefined) return d;
    }
  }
  return at;
}
