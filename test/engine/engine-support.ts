/**
 * Test support for the engine behaviour suites: engines over either store, each with the test's
 * in-memory run authority (cleaned up after each test), latches for driving races without sleeps, small
 * tool/agent/application builders, and assertions on typed error codes. Everything here is
 * observable-outcome plumbing, not mocks.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import { isLoopxError, type LoopxError } from '../../src/core/errors.js';
import { memoryRunAuthority, type RunAuthority } from '../../src/run-authority/index.js';
import {
  convenienceApplication,
  defineAgent,
  openEngine,
  type AgentDefinition,
  type Application,
  type ComponentIdentity,
  type Engine,
  type JsonValue,
  type RunEvent,
  type ScriptStep,
  type Tool,
  type ToolContext,
} from '../../src/engine/index.js';
import type { ToolOutput } from '../../src/engine/tools.js';

export type StoreKind = 'memory' | 'sqlite';
export const STORE_KINDS: readonly StoreKind[] = ['memory', 'sqlite'];

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  current = undefined;
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A fresh private (0700) directory, removed after the test. */
export function privateDir(prefix = 'loopx-engine-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let current: RunAuthority | undefined;

/** A fresh in-memory run authority (another user's, or another world's), closed after the test, after its engines. */
export function newTestAuthority(): RunAuthority {
  const authority = memoryRunAuthority();
  cleanups.push(() => authority.close());
  return authority;
}

/** The test's run authority, shared by every engine the test opens, as one user's authority is by their roots. */
export function testAuthority(): RunAuthority {
  current ??= newTestAuthority();
  return current;
}

/**
 * An engine over the given store, closed after the test. `root` reopens an existing SQLite root;
 * `authority` is the test's unless given (another user's: `newTestAuthority()`).
 */
export function openTestEngine(
  kind: StoreKind,
  application: Application,
  root?: string,
  authority: RunAuthority = testAuthority(),
): Engine {
  const engine =
    kind === 'memory'
      ? openEngine({ application, authority })
      : openEngine({ root: root ?? privateDir(), application, authority });
  cleanups.push(() => engine.close());
  return engine;
}

/** A gate a test opens explicitly; `wait()` resolves once it is open. */
export interface Latch {
  readonly wait: () => Promise<void>;
  readonly open: () => void;
  readonly isOpen: () => boolean;
}

export function latch(): Latch {
  let open!: () => void;
  let opened = false;
  const p = new Promise<void>((r) => (open = r));
  return {
    wait: () => p,
    open: () => {
      opened = true;
      open();
    },
    isOpen: () => opened,
  };
}

export const PLAN = 'test.plan';

export const sha = (text: string): string => createHash('sha256').update(text).digest('hex');

export const componentIdentity = (
  kind: ComponentIdentity['kind'],
  name: string,
  version = '1.0.0',
): ComponentIdentity => ({
  kind,
  name,
  module: `test/${name}`,
  version,
  sourceSha256: sha(`${kind}:${name}@${version}`),
});

type Execute = (args: { readonly [k: string]: JsonValue }, ctx: ToolContext) => Promise<ToolOutput> | ToolOutput;

export function makeTool(
  name: string,
  execute: Execute,
  options: {
    mutating?: boolean;
    inputSchema?: { readonly [k: string]: JsonValue };
    identity?: ComponentIdentity | null;
    description?: string;
  } = {},
): Tool {
  const identity = options.identity === null ? undefined : (options.identity ?? componentIdentity('static_tool', name));
  return {
    definition: {
      name,
      description: options.description ?? `test tool ${name}`,
      inputSchema: options.inputSchema ?? { type: 'object' },
      mutating: options.mutating ?? false,
    },
    ...(identity ? { identity } : {}),
    execute,
  };
}

/** `add(a, b)`: a strict schema, a pure result. */
export const addTool = (): Tool =>
  makeTool('add', (args) => ({ sum: (args.a as number) + (args.b as number) }), {
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['a', 'b'],
      properties: { a: { type: 'number' }, b: { type: 'number' } },
    },
  });

/** `ask(id, prompt)`: parks the call until a human answers. */
export const askTool = (): Tool =>
  makeTool('ask', (args, ctx) => ctx.requestInteraction(args.id as string, args.prompt as string), {
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'prompt'],
      properties: { id: { type: 'string' }, prompt: { type: 'string' } },
    },
  });

export const call = (name: string, args: JsonValue): { name: string; arguments: JsonValue } => ({
  name,
  arguments: args,
});

export function scriptedAgent(
  script: readonly ScriptStep[],
  options: { turnLimit?: number; id?: string; version?: string; system?: string; toolPlan?: string } = {},
): AgentDefinition {
  return defineAgent({
    id: options.id ?? 'test.agent',
    version: options.version ?? '1.0.0',
    model: { provider: 'scripted', modelId: 'scripted-v1' },
    turnLimit: options.turnLimit ?? 10,
    toolPlan: options.toolPlan ?? PLAN,
    ...(options.system !== undefined ? { system: options.system } : {}),
    script,
  });
}

export const localApp = (tools: readonly Tool[], planId = PLAN): Application =>
  convenienceApplication({ toolPlans: [{ id: planId, tools }] });

export async function allEvents(engine: Engine, runId: string): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of engine.events(runId)) out.push(e);
  return out;
}

export const eventTypes = async (engine: Engine, runId: string): Promise<string[]> =>
  (await allEvents(engine, runId)).map((e) => e.type);

function assertCode(error: unknown, code: string): void {
  expect(isLoopxError(error), `expected a LoopxError with code ${code}, got ${String(error)}`).toBe(true);
  expect((error as LoopxError).code).toBe(code);
}

/** The promise rejects with a LoopxError of this code. */
export async function expectCode(promise: Promise<unknown>, code: string): Promise<LoopxError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  assertCode(error, code);
  return error as LoopxError;
}

/** The function throws a LoopxError of this code. */
export function expectThrowsCode(fn: () => unknown, code: string): LoopxError {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assertCode(error, code);
  return error as LoopxError;
}
